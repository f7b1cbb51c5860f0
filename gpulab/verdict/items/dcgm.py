"""Checklist item ``dcgm-reports-gpus``: the DCGM exporter reports exactly the GPUs the node has.

The DCGM exporter is the GPU Operator's metrics operand; if it is up but watches other GPUs
than the node has (or none), every dashboard and alert built on it is wrong while the lab
looks healthy. The scrape (gpulab.kube.dcgm, output ``dcgmMetrics``) records the distinct
``UUID`` labels of its samples; the host probe records the host's GPUs (``hostGpus``). The
item compares the two sets; where the host's UUIDs are unknown (``hostProbe: off``, an
existing cluster) it compares the count with ``hostGpuCount``.

Statuses (gpulab.core.findings.Status):

* ``pass``: the same GPUs (by UUID, else by count);
* ``fail``: the exporter did not answer or answered nothing usable (``dcgmMetrics.error``), or
  reports other GPUs; the fix names the exporter's logs (:func:`gpulab.kube.dcgm_metrics.exporter_logs_fix`);
* ``not-observable-in-simulation``: the simulated lab (no exporter process runs there);
* ``not-tested``: ``dcgmExporter`` is off (``operatorComponents.dcgmExporter`` false);
* ``not-evaluated``: the scrape's result is not known (a preview, a stack from before this
  check, or no scrape recorded).

Registered in :func:`gpulab.verdict.checklist.evaluate`, which passes its view of the outputs
(:class:`View`: the unknown/absent rules of gpulab.verdict.checklist).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.outputs import LabOutputs
from gpulab.kube import dcgm_metrics as dcgm

ITEM_ID: Final = "dcgm-reports-gpus"
TITLE: Final = "DCGM exporter reports exactly the node's GPUs (metrics checked)"
EXPECTED: Final = (
    "the exporter's /metrics carries one UUID per physical GPU of the host, and no other "
    "(utilisation, framebuffer, power and temperature per GPU recorded)"
)
#: What the item reads.
KEYS: Final = (o.DCGM_METRICS, o.HOST_GPUS, o.HOST_GPU_COUNT)


#: What the item reads: the typed outputs (gpulab.core.outputs.LabOutputs).
View = LabOutputs


def _item(status: Status, observed: str, sim: bool) -> Finding:
    return Finding(ITEM_ID, status, observed, EXPECTED, dcgm.exporter_logs_fix(), simulated=sim, title=TITLE)


def _host_uuids(gpus: Any) -> set[str] | None:
    if not isinstance(gpus, list) or not gpus:
        return None
    uuids = {g.get("uuid") for g in gpus if isinstance(g, Mapping)}
    return None if None in uuids or not uuids else {str(u) for u in uuids}


def _count(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _readings(gpus: Mapping[str, Any]) -> str:
    def one(uuid: str, g: Any) -> str:
        g = g if isinstance(g, Mapping) else {}
        parts = [
            f"{g.get(key)}{unit}"
            for key, unit in (("utilPercent", "%"), ("fbUsedMiB", " MiB"), ("powerW", " W"), ("tempC", " C"))
            if g.get(key) is not None
        ]
        odd = g.get("notComparable")
        if isinstance(odd, Mapping) and odd:
            parts.append(f"{', '.join(sorted(odd))} not comparable under MIG")
        return f"{uuid}" + (f" ({', '.join(parts)})" if parts else "")

    return "; ".join(one(u, g) for u, g in sorted(gpus.items()))


def dcgm_reports_gpus(view: View) -> Finding:
    """Evaluate the item on the checklist's view of the outputs (statuses in the module
    docstring)."""
    sim = view.simulated(KEYS)
    if view.component_off("dcgmExporter"):
        return _item(
            Status.NOT_TESTED,
            "not tested: the DCGM exporter is switched off in this lab (dcgmExporter=false)",
            sim,
        )
    if view.simulated_lab:
        return _item(
            Status.NOT_OBSERVABLE,
            "not observable in simulation: no DCGM exporter process runs in the simulated lab "
            "(kwok runs no containers), so there is no /metrics to read",
            True,
        )
    metrics = view.dcgm_metrics
    if view.unknown(o.DCGM_METRICS) or not isinstance(metrics, Mapping):
        why = "not known yet" if view.unknown(o.DCGM_METRICS) else "no scrape recorded"
        return _item(
            Status.NOT_EVALUATED,
            f"known after deployment ({o.DCGM_METRICS} {why}; make verify scrapes it)",
            sim,
        )
    if metrics.get("error"):
        return _item(Status.FAIL, f"DCGM exporter: {metrics['error']}", sim)
    found = metrics.get("gpus")
    gpus: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    seen = set(gpus)
    host = _host_uuids(view.host_gpus)
    scrapes = f"{metrics.get('scrapes')} scrape(s) over {metrics.get('seconds')} s"
    pods = metrics.get("hostnamesNotNodes")
    if isinstance(pods, list) and pods:  # not a failure: the GPUs are still the ones counted
        scrapes += f"; hostname {', '.join(map(str, pods))}: {dcgm.POD_HOSTNAME_REASON}"
    if host is not None:
        if seen == host:
            return _item(Status.PASS, f"{len(seen)} GPU(s), as the host: {_readings(gpus)} ({scrapes})", sim)
        missing, extra = sorted(host - seen), sorted(seen - host)
        parts = ([f"not reported: {', '.join(missing)}"] if missing else []) + (
            [f"not on the host: {', '.join(extra)}"] if extra else []
        )
        return _item(
            Status.FAIL,
            f"the exporter reports {len(seen)} GPU(s), the host has {len(host)}: {'; '.join(parts)}",
            sim,
        )
    count = _count(view.host_gpu_count)
    if count is None:
        return _item(
            Status.NOT_EVALUATED,
            f"known after deployment ({o.HOST_GPUS} and {o.HOST_GPU_COUNT} not known: nothing to "
            "compare with)",
            sim,
        )
    status = Status.PASS if len(seen) == count else Status.FAIL
    return _item(
        status,
        f"the exporter reports {len(seen)} GPU(s), the host count is {count} (UUIDs unknown on the "
        f"host side): {_readings(gpus) or 'none'} ({scrapes})",
        sim,
    )
