"""The TFLOPS figures the lab keeps: a ``gpulab.tflops`` document boiled down to what the card says.

A ``gpulab.dev/tflops/v2`` document (:mod:`gpulab.tflops`) carries per dtype a **burst** rate
(a short run after an idle rest: the board still at boost clock) and a **sustained** rate (the
steady state after the ramp, under the board's power limit: the headline ``tflops``), each with
the SM clock, power and temperature sampled while it ran, and a **reference** (the plain loop
``c = a @ b`` ten times, bf16). On an H200 (tests/data/tflops/h200-torch-v2.json): bf16 burst
790.9 TFLOP/s at 1980 MHz, sustained 667.9 at ~1470 MHz and 687 W, reference 797.8 (burst /
reference 0.991).

:func:`measured_tflops` is the ``measuredTflops`` stack output built from the benchmark Pod's
document (program/lab.py), and what the card reads from a ``--tflops`` document::

    {"bf16": {"tflops": 667.9,
              "burst": {"tflops": 790.9, "smClockMHz": 1980, "powerW": 120.1, "tempC": 39,
                        "clockEventReasons": []},
              "sustained": {"tflops": 667.9, "smClockMHz": 1470, "powerW": 687.1, "tempC": 63,
                            "clockEventReasons": ["sw-power-cap"]},
              "reference": {"tflops": 797.8, "smClockMHz": 1980, "powerW": 120.1,
                            "products": 10, "burstOverReference": 0.991, "tolerance": 0.03,
                            "withinTolerance": true}},
     "fp32": {...}}

Clocks (MHz), power (W) and temperature (C) are the medians of the samples taken during the
phase. A burst lasts tens of milliseconds and NVML's power readings lag the load by about as
much, so a burst's power reads low (tests/data/device-h200/README.md); the sustained power is
the meaningful one. ``reference`` sits on its own dtype only. A v1 document (one rate per
dtype) gives ``burst`` and ``sustained`` None. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: What each rate is, in the card's words.
BURST_MEANS: Final = (
    "burst: a short run right after an idle rest, the board still at boost clock (what a short "
    "kernel sequence gets); its power reads low, NVML's readings lag the load"
)
SUSTAINED_MEANS: Final = (
    "sustained: back to back after the ramp, in the board's power/thermal steady state (what a "
    "long job gets); the headline rate"
)
REFERENCE_MEANS: Final = (
    "reference: the plain loop c = a @ b (torch.matmul) ten times between two CUDA events"
)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _median(stat: Any) -> float | None:
    """``{"median": 1980, "min": .., "max": ..}`` -> 1980.0; a bare number stays; else None."""
    if isinstance(stat, Mapping):
        return _number(stat.get("median"))
    return _number(stat)


def phase(doc: Any) -> dict[str, Any] | None:
    """One phase (``burst``, ``sustained`` or the ``reference``) as the card keeps it: rate
    (TFLOP/s), SM clock (MHz), power (W), temperature (C), clock event reasons; None when the
    document has no such phase or no rate for it."""
    if not isinstance(doc, Mapping) or _number(doc.get("tflops")) is None:
        return None
    reasons = doc.get("clockEventReasons")
    return {
        "tflops": _number(doc.get("tflops")),
        "smClockMHz": _median(doc.get("smClockMHz")),
        "powerW": _median(doc.get("powerW")),
        "tempC": _median(doc.get("tempC")),
        "clockEventReasons": [str(r) for r in reasons] if isinstance(reasons, list) else [],
    }


def reference(doc: Any) -> dict[str, Any] | None:
    """The document's ``reference`` as kept: :func:`phase` plus ``dtype``, ``products``,
    ``burstOverReference``, ``tolerance``, ``withinTolerance``; None without one."""
    base = phase(doc)
    if base is None or not isinstance(doc, Mapping):
        return None
    return {
        **base,
        "dtype": doc.get("dtype"),
        "products": doc.get("products"),
        "burstOverReference": _number(doc.get("burstOverReference")),
        "tolerance": _number(doc.get("tolerance")),
        "withinTolerance": doc.get("withinTolerance")
        if isinstance(doc.get("withinTolerance"), bool)
        else None,
    }


def measured_tflops(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``measuredTflops`` output of a ``gpulab.tflops`` document (shape in the module
    docstring); ``{}`` when it has no ``results``."""
    results = doc.get("results")
    out: dict[str, dict[str, Any]] = {}
    for dtype, r in results.items() if isinstance(results, Mapping) else ():
        r = r if isinstance(r, Mapping) else {}
        out[str(dtype)] = {
            "tflops": _number(r.get("tflops")),
            "burst": phase(r.get("burst")),
            "sustained": phase(r.get("sustained")),
        }
    ref = reference(doc.get("reference"))
    if ref is not None and ref.get("dtype") in out:
        out[str(ref["dtype"])]["reference"] = ref
    return out


def headline(entry: Any) -> float | None:
    """The headline rate of one ``measuredTflops`` entry: ``{"tflops": x, ...}`` or a bare
    number (the older output)."""
    return _number(entry.get("tflops")) if isinstance(entry, Mapping) else _number(entry)
