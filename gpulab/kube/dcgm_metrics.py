"""What NVIDIA's DCGM exporter says about the node's GPUs: its ``/metrics`` text parsed and summed up.

The GPU Operator runs ``dcgm-exporter`` as the DaemonSet ``nvidia-dcgm-exporter`` behind the
Service of the same name, port 9400 (``gpu-metrics``), in the operator's namespace
(NVIDIA/gpu-operator ``assets/state-dcgm-exporter/0600_service.yaml``). ``GET /metrics``
answers in the Prometheus text exposition format (version 0.0.4)::

    # HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
    # TYPE DCGM_FI_DEV_GPU_UTIL gauge
    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",pci_bus_id="00000000:00:06.0",device="nvidia0",
    modelName="NVIDIA H200",Hostname="gpu-lab",DCGM_FI_DRIVER_VERSION="580.159.04"} 0

one sample per line: a metric name, labels in braces (values double-quoted, ``\\\\``, ``\\"``
and ``\\n`` escaped), a value (a float, ``NaN``, ``+Inf``, ``-Inf``) and an optional timestamp
in ms. Which fields it exports is its counters CSV; the operator's default
(``dcp-metrics-included.csv``, like dcgm-exporter's ``etc/default-counters.csv``) includes the
four read here, with their units from that CSV:

=========================== =========================== ======
metric                      meaning                     unit
=========================== =========================== ======
``DCGM_FI_DEV_GPU_UTIL``    GPU utilization             %
``DCGM_FI_DEV_FB_USED``     framebuffer memory used     MiB
``DCGM_FI_DEV_POWER_USAGE`` power draw                  W
``DCGM_FI_DEV_GPU_TEMP``    GPU temperature             C
=========================== =========================== ======

and ``DCGM_FI_DRIVER_VERSION`` as a *label* (a ``label`` row of the CSV), present on every
sample when configured. Labels a GPU is known by: ``UUID`` (the physical GPU's, also on a MIG
instance's samples, which add ``GPU_I_PROFILE`` and ``GPU_I_ID``), ``gpu`` (index),
``pci_bus_id``, ``device``, ``modelName`` and ``Hostname`` (``hostname`` in newer releases);
with Kubernetes mapping on, ``pod``, ``namespace`` and ``container`` of the Pod using it.

The exporter refreshes its values every collect interval (``DCGM_EXPORTER_INTERVAL``, 30000 ms
by default), so a few seconds of scraping may see one update: a kernel shorter than that may
never show in ``DCGM_FI_DEV_GPU_UTIL``. What the lab checks from it is which GPUs it reports.

Pure: :func:`parse_exposition`, :func:`gpu_readings`, :func:`summarize`. Errors raise
:class:`DcgmParseError` naming the line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpulab.core.errors import GpuLabError
from gpulab.core.names import DCGM_EXPORTER_PORT, DCGM_EXPORTER_SERVICE, OPERATOR_NAMESPACE

GPU_UTIL: Final = "DCGM_FI_DEV_GPU_UTIL"
FB_USED: Final = "DCGM_FI_DEV_FB_USED"
POWER_USAGE: Final = "DCGM_FI_DEV_POWER_USAGE"
GPU_TEMP: Final = "DCGM_FI_DEV_GPU_TEMP"
DRIVER_LABEL: Final = "DCGM_FI_DRIVER_VERSION"
#: metric -> the key of a GPU's reading (:class:`GpuReading` field and output key).
METRICS: Final[dict[str, str]] = {
    GPU_UTIL: "utilPercent",
    FB_USED: "fbUsedMiB",
    POWER_USAGE: "powerW",
    GPU_TEMP: "tempC",
}
#: How the readings of several scrapes are combined (the highest seen while the check ran).
STATISTIC: Final = "max"
#: Readings that cannot mean what the card's column says on a MIG-enabled GPU, and why: the
#: exporter's ``DCGM_FI_DEV_GPU_UTIL`` is NVML's device utilisation, which NVML does not
#: measure there ("On MIG-enabled GPUs, querying device utilization rates is not currently
#: supported": nvml.h ``nvmlDeviceGetUtilizationRates``, NVIDIA/go-nvml v0.13.4-1), so a value
#: it sends (0, or one per instance) is not the GPU's utilisation. Framebuffer (the instances'
#: sum), power and temperature (the board's) keep their meaning.
NOT_COMPARABLE_UNDER_MIG: Final[dict[str, str]] = {
    "utilPercent": (
        "not comparable under MIG: NVML does not measure device utilisation on a MIG-enabled GPU "
        "(DCGM_FI_PROF_GR_ENGINE_ACTIVE per instance is the profiling field that does)"
    ),
}

_NAME: Final = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE_RE: Final = re.compile(rf"^({_NAME})(?:\{{(.*)\}})?\s+(\S+)(?:\s+(-?\d+))?\s*$")
_LABEL_RE: Final = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
_ESCAPES: Final = {"\\": "\\", '"': '"', "n": "\n"}


class DcgmParseError(GpuLabError, ValueError):
    """The exporter's answer is not Prometheus text: the line number and the line are quoted."""


@dataclass(frozen=True)
class Sample:
    """One exposition line: ``name``, ``labels`` (name -> unescaped value), ``value``."""

    name: str
    labels: Mapping[str, str]
    value: float


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), text)


def _labels(text: str, where: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _LABEL_RE.match(text, pos)
        if m is None:
            raise DcgmParseError(f"{where}: malformed labels at {text[pos:]!r}")
        labels[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return labels


def _value(text: str, where: str) -> float:
    try:
        return float(text)  # accepts NaN, +Inf, -Inf as the format spells them
    except ValueError:
        raise DcgmParseError(f"{where}: value {text!r} is not a number") from None


def parse_exposition(text: str) -> list[Sample]:
    """Every sample of a Prometheus text exposition (``# HELP``/``# TYPE``/comments skipped).

    Raises:
        DcgmParseError: a line that is neither a comment nor a sample, malformed labels or a
            value that is not a number (``line N: ...`` quoting it).
    """
    samples = []
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {n}"
        m = _SAMPLE_RE.match(line)
        if m is None:
            raise DcgmParseError(f"{where}: not a Prometheus sample: {line[:200]!r}")
        samples.append(Sample(m.group(1), _labels(m.group(2) or "", where), _value(m.group(3), where)))
    return samples


@dataclass(frozen=True)
class GpuReading:
    """One GPU (by ``uuid``) in one scrape. The four metrics are None when the exporter sent
    none for it (a field its CSV leaves out, or not supported: utilisation on a MIG-enabled
    GPU). ``mig_instances``: distinct ``GPU_I_ID`` values seen on its samples."""

    uuid: str
    gpu: str | None = None
    model_name: str | None = None
    pci_bus_id: str | None = None
    hostname: str | None = None
    driver_version: str | None = None
    util_percent: float | None = None
    fb_used_mib: float | None = None
    power_w: float | None = None
    temp_c: float | None = None
    mig_instances: int = 0


_FIELDS: Final = {
    GPU_UTIL: "util_percent",
    FB_USED: "fb_used_mib",
    POWER_USAGE: "power_w",
    GPU_TEMP: "temp_c",
}


def gpu_readings(samples: Iterable[Sample]) -> dict[str, GpuReading]:
    """The GPUs one scrape reports, by UUID (every ``DCGM_FI_*`` sample with a ``UUID`` label
    counts, so a GPU is seen even when the four metrics are off).

    A metric of a GPU is its whole-GPU sample (no ``GPU_I_ID``); a MIG-enabled GPU that only has
    per-instance samples gets the sum of ``FB_USED`` over its instances and the highest of power
    and temperature (the board's anyway); its utilisation is None whatever was sent
    (:data:`NOT_COMPARABLE_UNDER_MIG`). NaN values count as absent.
    """
    meta: dict[str, dict[str, str]] = {}
    whole: dict[str, dict[str, float]] = {}
    per_instance: dict[str, dict[str, dict[str, float]]] = {}
    for s in samples:
        uuid = s.labels.get("UUID")
        if not uuid or not s.name.startswith("DCGM_FI_"):
            continue
        info = meta.setdefault(uuid, {})
        for key, label in (
            ("gpu", "gpu"),
            ("modelName", "modelName"),
            ("pciBusId", "pci_bus_id"),
            ("hostname", "Hostname"),
            ("hostname", "hostname"),
            ("driverVersion", DRIVER_LABEL),
        ):
            if s.labels.get(label) and key not in info:
                info[key] = s.labels[label]
        instance = s.labels.get("GPU_I_ID")
        if instance is not None:
            per_instance.setdefault(uuid, {}).setdefault(instance, {})
        if s.name not in _FIELDS or math.isnan(s.value):
            continue
        if instance is None:
            whole.setdefault(uuid, {})[s.name] = s.value
        else:
            per_instance[uuid][instance][s.name] = s.value
    out = {}
    for uuid, info in meta.items():
        values = dict(whole.get(uuid, {}))
        instances = per_instance.get(uuid, {})
        for name in _FIELDS:
            seen = [v[name] for v in instances.values() if name in v]
            if name not in values and seen:
                values[name] = sum(seen) if name == FB_USED else max(seen)
        if instances:
            values.pop(GPU_UTIL, None)  # not the GPU's utilisation under MIG
        out[uuid] = GpuReading(
            uuid=uuid,
            gpu=info.get("gpu"),
            model_name=info.get("modelName"),
            pci_bus_id=info.get("pciBusId"),
            hostname=info.get("hostname"),
            driver_version=info.get("driverVersion"),
            mig_instances=len(instances),
            **{field: values.get(name) for name, field in _FIELDS.items()},
        )
    return out


def _highest(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def endpoint(namespace: str = OPERATOR_NAMESPACE) -> str:
    """Where the scrape reads, in words: the Service through the API server's service proxy."""
    return f"{namespace}/{DCGM_EXPORTER_SERVICE}:{DCGM_EXPORTER_PORT}/metrics (API server service proxy)"


#: Why an exporter's host label may name a Pod: dcgm-exporter takes it from ``$NODE_NAME`` and,
#: when that is unset, from ``os.Hostname()``, which in a Pod without host networking is the
#: Pod's name (NVIDIA/dcgm-exporter 4.5.3-4.8.2 ``internal/pkg/hostname/hostname.go``,
#: ``getLocalHostname``). The GPU Operator's DaemonSet sets ``NODE_NAME`` from
#: ``spec.nodeName`` (NVIDIA/gpu-operator v26.7.0 ``assets/state-dcgm-exporter/0800_daemonset.yaml``);
#: an exporter installed otherwise may not.
POD_HOSTNAME_REASON: Final = (
    "the exporter's hostname label names no node of the cluster: it is the exporter Pod's own name "
    "(dcgm-exporter falls back to the container's hostname when NODE_NAME is not set in its Pod), "
    "so it does not say which node the GPU is on"
)


def hostnames_not_nodes(hostnames: Iterable[str], nodes: Iterable[str] | None) -> list[str]:
    """The exporter host labels that are no node's name (sorted); ``[]`` when the nodes are
    unknown (None)."""
    if nodes is None:
        return []
    known = set(nodes)
    return sorted({h for h in hostnames if h and h not in known})


def summarize(
    scrapes: Sequence[Sequence[Sample]],
    *,
    seconds: float,
    where: str,
    error: str | None = None,
    nodes: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The ``dcgmMetrics`` output (gpulab.core.outputs.DCGM_METRICS) from the scrapes that answered.

    Per GPU UUID: its labels from the newest scrape that had it (``gpu``, ``modelName``,
    ``pciBusId``, ``hostname``, ``driverVersion``), each metric's highest value over the scrapes
    (:data:`STATISTIC`; None when never reported), ``samples`` (scrapes that reported it),
    ``migInstances``, and on a MIG-enabled GPU ``notComparable`` (reading -> why it cannot mean
    what it says there: :data:`NOT_COMPARABLE_UNDER_MIG`). ``nodes``: the cluster's node names when
    they could be read; the host labels that name none of them are ``hostnamesNotNodes``
    (:data:`POD_HOSTNAME_REASON`), ``[]`` otherwise. ``hostnames``: the exporters answering (one
    per node; through a Service each scrape reaches one of them). ``error``: why scraping
    failed, or None.
    """
    per_scrape = [gpu_readings(s) for s in scrapes]
    gpus: dict[str, dict[str, Any]] = {}
    for uuid in sorted({u for r in per_scrape for u in r}):
        seen = [r[uuid] for r in per_scrape if uuid in r]
        last = seen[-1]
        gpus[uuid] = {
            "gpu": last.gpu,
            "modelName": last.model_name,
            "pciBusId": last.pci_bus_id,
            "hostname": last.hostname,
            "driverVersion": last.driver_version,
            **{key: _highest([getattr(g, _FIELDS[m]) for g in seen]) for m, key in METRICS.items()},
            "samples": len(seen),
            "migInstances": last.mig_instances,
        }
        if last.mig_instances:
            gpus[uuid]["notComparable"] = dict(NOT_COMPARABLE_UNDER_MIG)
    hostnames = sorted({g["hostname"] for g in gpus.values() if g["hostname"]})
    return {
        "endpoint": where,
        "scrapes": len(scrapes),
        "seconds": round(seconds, 1),
        "statistic": STATISTIC,
        "gpus": gpus,
        "hostnames": hostnames,
        "hostnamesNotNodes": hostnames_not_nodes(hostnames, nodes),
        "error": error,
    }


def exporter_logs_fix(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The first reaction when the exporter does not answer or reports other GPUs."""
    return (
        f"read the exporter's logs: scripts/kubectl -n {namespace} logs ds/{DCGM_EXPORTER_SERVICE} "
        f"(and scripts/kubectl -n {namespace} get pods -l app={DCGM_EXPORTER_SERVICE} -o wide: one Ready "
        "Pod per GPU node); a GPU it does not list is one DCGM cannot see (check nvidia-smi on the "
        "node), one it lists that the host lacks means it runs on another node"
    )
