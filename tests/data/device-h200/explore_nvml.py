"""Dump what NVML (pynvml) answers on this host, call by call, as JSON on stdout.

Run on the lent H200 in the exploration call (see README.md beside this file); every call's
value or error is recorded, so the parsers can be written against what the driver says.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

import pynvml as nv


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.decode(errors="replace")
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    fields = getattr(v, "_fields_", None)
    if fields is not None:
        return {name: _plain(getattr(v, name)) for name, *_ in fields}
    try:
        return [_plain(x) for x in v]
    except TypeError:
        return repr(v)


def call(fn: Callable[[], Any]) -> Any:
    t = time.perf_counter()
    try:
        out = {"value": _plain(fn())}
    except nv.NVMLError as exc:
        out = {"error": str(exc), "errorClass": type(exc).__name__, "code": exc.value}
    except Exception as exc:
        out = {"error": repr(exc), "errorClass": type(exc).__name__}
    out["us"] = round((time.perf_counter() - t) * 1e6, 1)
    return out


def main() -> None:
    doc: dict[str, Any] = {"pynvml": getattr(nv, "__file__", None)}
    doc["nvmlInit"] = call(nv.nvmlInit)
    doc["nvmlSystemGetDriverVersion"] = call(nv.nvmlSystemGetDriverVersion)
    doc["nvmlSystemGetNVMLVersion"] = call(nv.nvmlSystemGetNVMLVersion)
    doc["nvmlSystemGetCudaDriverVersion"] = call(nv.nvmlSystemGetCudaDriverVersion)
    doc["nvmlSystemGetCudaDriverVersion_v2"] = call(nv.nvmlSystemGetCudaDriverVersion_v2)
    doc["nvmlDeviceGetCount"] = call(nv.nvmlDeviceGetCount)
    ncpu = os.cpu_count() or 1
    words = (ncpu + 63) // 64
    doc["cpuCount"] = ncpu
    devices = []
    for i in range(doc["nvmlDeviceGetCount"].get("value") or 0):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        d: dict[str, Any] = {"index": i}
        d["nvmlDeviceGetIndex"] = call(lambda h=h: nv.nvmlDeviceGetIndex(h))
        d["nvmlDeviceGetName"] = call(lambda h=h: nv.nvmlDeviceGetName(h))
        d["nvmlDeviceGetUUID"] = call(lambda h=h: nv.nvmlDeviceGetUUID(h))
        d["nvmlDeviceGetMemoryInfo"] = call(lambda h=h: nv.nvmlDeviceGetMemoryInfo(h))
        d["nvmlDeviceGetMemoryInfo_v2"] = call(lambda h=h: nv.nvmlDeviceGetMemoryInfo(h, nv.nvmlMemory_v2))
        d["nvmlDeviceGetPciInfo"] = call(lambda h=h: nv.nvmlDeviceGetPciInfo(h))
        d["nvmlDeviceGetMigMode"] = call(lambda h=h: nv.nvmlDeviceGetMigMode(h))
        d["nvmlDeviceGetCudaComputeCapability"] = call(lambda h=h: nv.nvmlDeviceGetCudaComputeCapability(h))
        d["nvmlDeviceGetNumaNodeId"] = call(lambda h=h: nv.nvmlDeviceGetNumaNodeId(h))
        d["nvmlDeviceGetCpuAffinity"] = call(lambda h=h: nv.nvmlDeviceGetCpuAffinity(h, words))
        for scope, name in ((0, "node"), (1, "socket")):
            d[f"nvmlDeviceGetCpuAffinityWithinScope_{name}"] = call(
                lambda h=h, s=scope: nv.nvmlDeviceGetCpuAffinityWithinScope(h, words, s)
            )
            d[f"nvmlDeviceGetMemoryAffinity_{name}"] = call(
                lambda h=h, s=scope: nv.nvmlDeviceGetMemoryAffinity(h, 1, s)
            )
        d["nvmlDeviceGetTopologyCommonAncestor_self"] = call(
            lambda h=h: nv.nvmlDeviceGetTopologyCommonAncestor(h, h)
        )
        d["nvmlDeviceGetTopologyNearestGpus"] = {
            str(level): call(lambda h=h, lv=level: len(nv.nvmlDeviceGetTopologyNearestGpus(h, lv)))
            for level in (0, 10, 20, 30, 40, 50)
        }
        links = {}
        for link in range(nv.NVML_NVLINK_MAX_LINKS):
            links[str(link)] = {
                "state": call(lambda h=h, lk=link: nv.nvmlDeviceGetNvLinkState(h, lk)),
                "remotePci": call(lambda h=h, lk=link: nv.nvmlDeviceGetNvLinkRemotePciInfo(h, lk).busId),
                "remoteType": call(lambda h=h, lk=link: nv.nvmlDeviceGetNvLinkRemoteDeviceType(h, lk)),
                "version": call(lambda h=h, lk=link: nv.nvmlDeviceGetNvLinkVersion(h, lk)),
            }
            if "error" in links[str(link)]["state"] and link > 0:
                break
        d["nvlink"] = links
        d["clockSM"] = call(lambda h=h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))
        d["maxClockSM"] = call(lambda h=h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
        d["powerUsage_mW"] = call(lambda h=h: nv.nvmlDeviceGetPowerUsage(h))
        d["powerLimit_mW"] = call(lambda h=h: nv.nvmlDeviceGetEnforcedPowerLimit(h))
        d["powerInstantField"] = call(
            lambda h=h: nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_POWER_INSTANT])[0]
        )
        d["clocksEventReasons"] = call(lambda h=h: nv.nvmlDeviceGetCurrentClocksEventReasons(h))
        d["temperature"] = call(lambda h=h: nv.nvmlDeviceGetTemperature(h, 0))
        devices.append(d)
    doc["devices"] = devices
    doc["nvmlShutdown"] = call(nv.nvmlShutdown)
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
