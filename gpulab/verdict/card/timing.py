"""When each fact of the card was measured, and whether that was in the newest run.

A run is one ``pulumi up`` (``make lab`` or ``make verify``); the program stamps its start as
the ``runAt`` output, just after the host probe read the host. The gate and the smoke check
stamp their own facts (``gateMeasuredAt``, ``smokeMeasuredAt``), the TFLOPS measurement
carries ``measuredAt`` (the ``--tflops`` document) or ``tflopsMeasuredAt`` (the benchmark
Pod). A no-op ``pulumi up`` re-runs neither the gate nor the smoke check, so their facts then
come from an earlier run: they keep their own time and are flagged, never shown as current.

Freshness of a fact (:func:`freshness`):

* ``current``: measured at or after the newest run's start;
* ``earlier-run``: measured before it (a value from an earlier run);
* ``unknown``: the measurement time, or the newest run's start, is not recorded (outputs from
  before these stamps existed): never shown as current;
* ``configured``: not a measurement (the chart version, the variant, the smoke image).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs

CURRENT: Final = "current"
EARLIER_RUN: Final = "earlier-run"
UNKNOWN: Final = "unknown"
CONFIGURED: Final = "configured"
FRESHNESS: Final[tuple[str, ...]] = (CURRENT, EARLIER_RUN, UNKNOWN, CONFIGURED)

#: Measurement group -> (the output key that stamps it, what it measured).
GROUPS: Final[dict[str, tuple[str, str]]] = {
    "host": (o.RUN_AT, "host probe (GPUs, driver, max CUDA)"),
    "gate": (o.GATE_MEASURED_AT, "readiness gate (allocatable, ClusterPolicy, device plugin)"),
    "smoke": (o.SMOKE_MEASURED_AT, "smoke test (phase, driver and CUDA from its log, events)"),
    "compute": (o.COMPUTE_MEASURED_AT, "compute check (a CUDA kernel in a Pod)"),
    "dcgm": (o.DCGM_MEASURED_AT, "DCGM metrics (the exporter scraped per GPU)"),
    "tflops": (o.TFLOPS_MEASURED_AT, "TFLOPS measurement (dense matmul)"),
    # Stamped inside the proof's own facts (``queues.measuredAt``).
    "queues": (o.QUEUES, "queue proof (Kueue's admissions against the measured quota)"),
}

#: ``computeResult`` when no compute Pod ran (``computeCheck`` off): nothing was measured.
NOT_TESTED: Final = "not-tested"


def parse_time(value: Any) -> datetime | None:
    """A timezone-aware datetime from an ISO 8601 string (``Z`` accepted); None otherwise."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def freshness(measured_at: Any, run_at: Any) -> str:
    """``current``, ``earlier-run`` or ``unknown`` (see the module docstring)."""
    measured, run = parse_time(measured_at), parse_time(run_at)
    if measured is None or run is None:
        return UNKNOWN
    return CURRENT if measured >= run else EARLIER_RUN


def measurements(outputs: LabOutputs, tflops: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The card's ``measurements`` section.

    ``tflops`` is the card's ``measuredTflops`` section: its group is there only when its
    ``status`` is ``"measured"``, stamped with its ``measuredAt``. The compute group is there
    only when the outputs say a compute Pod ran (``computeResult`` other than ``not-tested``),
    the DCGM group only when the exporter was scraped (``dcgmMetrics`` an object).

    Returns ``{"runAt": str|None, "groups": {group: {"measuredAt": str|None, "source": key,
    "what": str, "freshness": str}}}`` for the groups of :data:`GROUPS`. The host group has no
    time when the host was not probed (``hostProbeSource`` ``"off"``).
    """
    run_at = outputs.run_at if parse_time(outputs.run_at) else None
    groups: dict[str, Any] = {}
    for group, (key, what) in GROUPS.items():
        if group == "tflops":
            if not tflops or tflops.get("status") != "measured":
                continue
            stamp = tflops.get("measuredAt")
        elif group == "compute":
            if outputs.compute_result in (None, NOT_TESTED):
                continue
            stamp = outputs.get(key)
        elif group == "dcgm":
            if not isinstance(outputs.dcgm_metrics, Mapping):
                continue  # nothing scraped (simulated lab, exporter off): no measurement
            stamp = outputs.get(key)
        elif group == "queues":
            if not isinstance(outputs.queues, Mapping):
                continue  # no queue layer: nothing measured
            stamp = outputs.queues.get("measuredAt")
        elif group == "host":
            stamp = None if outputs.host_probe_source == "off" else run_at
        else:
            stamp = outputs.get(key)
        stamp = stamp if parse_time(stamp) else None
        groups[group] = {
            "measuredAt": stamp,
            "source": key,
            "what": what,
            "freshness": freshness(stamp, run_at),
        }
    return {"runAt": run_at, "groups": groups}


def stale(section: Mapping[str, Any]) -> list[str]:
    """Groups of a ``measurements`` section not measured in the newest run, in GROUPS order."""
    return [g for g, m in (section.get("groups") or {}).items() if m.get("freshness") != CURRENT]


def label(measured_at: Any, fresh: str) -> str:
    """How a person reads it: ``"2026-12-01 09:08:49 UTC (this run)"``, ``"... (earlier run)"``,
    ``"not recorded"``, ``"configured"``."""
    if fresh == CONFIGURED:
        return "configured"
    when = parse_time(measured_at)
    if when is None:
        return "not recorded"
    text = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return {CURRENT: f"{text} (this run)", EARLIER_RUN: f"{text} (earlier run)"}.get(
        fresh, f"{text} (run not recorded)"
    )
