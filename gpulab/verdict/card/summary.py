"""The one-line summary ``make lab`` and ``make verify`` end with, from the card's own data.

:func:`summary_line` of a card from :func:`gpulab.verdict.card.build_card`, e.g.::

    gpu-lab: GPUs 1 allocatable / 1 physical (simulated); smoke Succeeded (simulated);
    driver 580.159.04 in Pod / 580.159.04 on host (simulated); compute not tested;
    checklist pass (simulated lab)

(one line). A fact marked ``(simulated)`` was not measured on hardware; ``(earlier run)`` or
``(time not recorded)`` says it was not measured in the newest run (gpulab.verdict.card.timing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpulab.core.names import GPU_RESOURCE
from gpulab.verdict.card import mig, timing


def _value(fact: Mapping[str, Any]) -> str:
    if not fact.get("known", True):
        return "?"
    value = fact.get("value")
    return "none" if value is None else str(value)


def _marks(*facts: Mapping[str, Any]) -> str:
    """``" (simulated, earlier run)"`` from the facts' flags; ``""`` when none applies."""
    marks = _mark_list(*facts)
    return f" ({', '.join(marks)})" if marks else ""


def _mark_list(*facts: Mapping[str, Any]) -> list[str]:
    marks = []
    if any(f.get("simulated") for f in facts):
        marks.append("simulated")
    fresh = {f.get("freshness") for f in facts}
    if timing.EARLIER_RUN in fresh:
        marks.append("earlier run")
    elif timing.UNKNOWN in fresh:
        marks.append("time not recorded")
    return marks


def _gpus(card: Mapping[str, Any]) -> str:
    """``GPUs 1 allocatable / 1 physical``; under MIG the MIG resources against what was
    expected, ``MIG 7 nvidia.com/mig-1g.18gb allocatable / 7 expected (1 physical GPU, MIG)``
    (and ``GPUs N allocatable`` first where GPUs without MIG are advertised too), never
    "0 GPUs" (gpulab.verdict.card.mig)."""
    alloc, count = card["cluster"]["allocatableGpus"], card["host"]["gpuCount"]
    section = card.get("mig")
    counts = mig.summary_part(section) if section else None
    if section is None or counts is None:
        name = (card["cluster"].get("gpuResource") or {}).get("value")
        shown = f" as {name}" if name and name != GPU_RESOURCE else ""
        return f"GPUs {_value(alloc)} allocatable{shown} / {_value(count)} physical{_marks(alloc, count)}"
    res = section.get("resources") or []
    about = [mig.physical_text(count.get("value"), section.get("gpus") or [])]
    about += _mark_list(alloc, count, {"simulated": any(r.get("simulated") for r in res)})
    plain = alloc.get("value")
    if isinstance(plain, int) and plain > 0 and not any(r["resource"] == GPU_RESOURCE for r in res):
        counts = f"GPUs {plain} allocatable, {counts}"
    return f"{counts} ({', '.join(about)})"


def _compute(check: Mapping[str, Any], tf: Mapping[str, Any]) -> str:
    """``compute passed`` (``on N GPUs`` where the card has ``computeGpus``), TFLOP/s per
    dtype (the sustained headline, its share of the peak and the burst rate), both, or
    ``compute not tested``."""
    parts = []
    result = check.get("result") or {}
    if result.get("known") and result.get("value") not in (None, timing.NOT_TESTED):
        gpus = (check.get("gpus") or {}).get("value")
        count = isinstance(gpus, int) and not isinstance(gpus, bool)
        on = f" on {gpus} GPU{'' if gpus == 1 else 's'}" if count else ""
        parts.append(f"compute {result['value']}{on}{_marks(result)}")
    if tf.get("status") == "measured":
        rates = []
        for dtype, r in (tf.get("results") or {}).items():
            rate = r.get("tflops")
            if isinstance(rate, (int, float)):
                # The headline is the sustained rate; the burst (boost clock) follows it.
                frac = r.get("fraction")
                burst = (r.get("burst") or {}).get("tflops")
                about = [f"{frac:.0%} of peak"] if frac else []
                about += [f"burst {burst:g}"] if isinstance(burst, (int, float)) else []
                rates.append(f"{dtype} {rate:g}" + (f" ({'; '.join(about)})" if about else ""))
        text = ", ".join(rates) + " TFLOP/s" if rates else "TFLOPS measured, no rate recorded"
        marks = _marks({"simulated": tf.get("simulated"), "freshness": tf.get("freshness", timing.UNKNOWN)})
        parts.append(("" if parts else "compute ") + text + marks)
    return ", ".join(parts) or "compute not tested"


def summary_line(card: Mapping[str, Any]) -> str:
    """One line: GPUs allocatable vs physical (under MIG the MIG resources vs expected), smoke
    phase, driver in the Pod vs the host, compute (the compute check's result and/or TFLOP/s,
    or ``compute not tested``), the checklist verdict, ``(simulated lab)``."""
    host, smoke = card["host"], card["smoke"]
    pod_driver, host_driver = smoke["driverVersion"], host["driverVersion"]
    parts = [
        _gpus(card),
        f"smoke {_value(smoke['phase'])}{_marks(smoke['phase'])}",
        f"driver {_value(pod_driver)} in Pod / {_value(host_driver)} on host"
        f"{_marks(pod_driver, host_driver)}",
        _compute(card.get("compute") or {}, card.get("measuredTflops") or {}),
        f"checklist {card['checklist']['result']}" + (" (simulated lab)" if card.get("simulated") else ""),
    ]
    nodes = card.get("nodes") or {}
    if nodes.get("summary"):
        # The fleet: how many nodes and GPUs, and which node is short.
        parts.insert(0, str(nodes["summary"]) + (" (simulated)" if nodes.get("simulated") else ""))
    down = card.get("down")
    if down:
        # Never a bare "pass" for a lab that is not there: the verdict is the last run's.
        parts[-1] += f" in the last run ({down.get('factsFrom') or 'time not recorded'})"
        parts.append("the cluster is down now: every fact is from the last run")
    return "gpu-lab: " + "; ".join(parts)
