"""The card's ``measuredTflops`` section: burst and sustained rates, each with its clock and power.

Built from a ``gpulab.tflops`` document (``--tflops``) or from the stack output
``measuredTflops`` (the benchmark Pod's, gpulab.tflops.report.measured_tflops); both go through
:func:`gpulab.tflops.report.measured_tflops` first, so the card says the same either way.

Section (``status`` ``"measured"``)::

    {"status": "measured", "source": str, "simulated": bool, "gpu", "driver", "backend",
     "size", "measuredAt", "peakSource", "notes": {dtype: str}, "headline": "sustained" | None,
     "results": {dtype: {"tflops": headline, "peak": datasheet dense peak, "fraction": tflops/peak,
                         "burst": {"tflops", "fraction", "smClockMHz", "powerW", "tempC",
                                   "clockEventReasons"} | None,
                         "sustained": {... the same ...} | None}},
     "reference": {"dtype", "tflops", "smClockMHz", "powerW", "products", "burstOverReference",
                   "tolerance", "withinTolerance"} | None,
     "means": {"burst": str, "sustained": str, "reference": str}, "warning"?: str}

A document of method v1 (one rate per dtype) gives ``burst``/``sustained`` None and
``headline`` None: the card then shows the one rate it has. Without either input:
``{"status": "not measured", "simulated": False, "howTo": HOW_TO_MEASURE}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.tflops import peaks
from gpulab.tflops import report as tflops_report

HOW_TO_MEASURE: Final = (
    "on the GPU host: .venv/bin/python -m gpulab.tflops --json > .state/tflops.json (needs PyTorch "
    "or CuPy), then make card (it reads .state/tflops.json); make lab and make verify do both "
    "where PyTorch is installed"
)
MEANS: Final = {
    "burst": tflops_report.BURST_MEANS,
    "sustained": tflops_report.SUSTAINED_MEANS,
    "reference": tflops_report.REFERENCE_MEANS,
}


def peak_source(gpu: str) -> str | None:
    """The datasheet a GPU model's peaks come from (gpulab.tflops.peaks), None for an unknown model."""
    row = peaks.row_for(gpu) if gpu else None
    return row.source if row else None


def _validate(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    results = doc.get("results")
    if not isinstance(results, Mapping) or not results:
        raise ValueError("a gpulab.tflops document needs a non-empty 'results' object")
    for dtype, r in results.items():
        if not isinstance(r, Mapping) or not (
            r.get("tflops") is None or isinstance(r.get("tflops"), (int, float))
        ):
            raise ValueError(f"results.{dtype} must be an object with a numeric 'tflops' or null")
    return results


def _fraction(rate: float | None, peak: float | None) -> float | None:
    return round(rate / peak, 3) if rate is not None and peak else None


def _with_fraction(phase: Mapping[str, Any] | None, peak: float | None) -> dict[str, Any] | None:
    if phase is None:
        return None
    return {**phase, "fraction": _fraction(phase.get("tflops"), peak)}


def _results(
    entries: Mapping[str, Any], gpu: str, doc_results: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Rows per dtype (the document's own peak first, else the datasheet's) and the reference."""
    rows: dict[str, Any] = {}
    ref = None
    for dtype, entry in entries.items():
        given = doc_results.get(dtype) if doc_results else None
        peak = given.get("peak") if isinstance(given, Mapping) else None
        if peak is None and dtype in peaks.DTYPES and gpu:
            peak = peaks.peak_for(gpu, dtype)
        rate = tflops_report.headline(entry)
        fraction = given.get("fraction") if isinstance(given, Mapping) else None
        entry = entry if isinstance(entry, Mapping) else {}
        rows[str(dtype)] = {
            "tflops": rate,
            "peak": peak,
            "fraction": fraction if fraction is not None else _fraction(rate, peak),
            "burst": _with_fraction(entry.get("burst"), peak),
            "sustained": _with_fraction(entry.get("sustained"), peak),
        }
        if isinstance(entry.get("reference"), Mapping):
            ref = dict(entry["reference"])
    return rows, ref


def tflops_section(
    outputs: LabOutputs,
    tflops: Mapping[str, Any] | None,
    *,
    output_simulated: bool,
    sanitize: Callable[[Any, str], Any],
) -> dict[str, Any]:
    """The section (shape in the module docstring).

    Args:
        outputs: the stack outputs (``hostGpuModels``, ``hostDriverVersion``, ``measuredTflops``,
            ``tflopsMeasuredAt`` are read).
        tflops: a ``gpulab.tflops`` document, or None.
        output_simulated: whether ``measuredTflops`` is listed as simulated.
        sanitize: the card's ``(value, path) -> value`` that redacts secret-looking strings.

    Raises:
        ValueError: ``tflops`` is not a tflops document (no ``results`` object, or a
            non-numeric rate).
    """
    models = outputs.host_gpu_models
    host_model = models[0] if isinstance(models, list) and models and isinstance(models[0], str) else None
    if tflops is not None:
        doc_results = _validate(tflops)
        gpu = str(tflops.get("gpu") or host_model or "")
        rows, ref = _results(tflops_report.measured_tflops(tflops), gpu, doc_results)
        section: dict[str, Any] = {
            "status": "measured",
            "source": "gpulab.tflops document (--tflops)",
            "simulated": tflops.get("simulated") is True,
            "gpu": gpu or None,
            "driver": tflops.get("driver"),
            "backend": tflops.get("backend"),
            "size": tflops.get("size"),
            "measuredAt": tflops.get("measuredAt"),
            "peakSource": tflops.get("peakSource") or peak_source(gpu),
            "notes": tflops.get("notes") or {},
        }
        warnings = []
        if host_model and gpu and gpu != host_model:
            warnings.append(f"measured on {gpu}, but the host's GPU is {host_model}")
        host_driver = outputs.host_driver_version
        if tflops.get("driver") and host_driver and tflops.get("driver") != host_driver:
            warnings.append(f"measured with driver {tflops.get('driver')}, the host's is {host_driver}")
        if warnings:
            section["warning"] = "; ".join(warnings)
    else:
        stored = outputs.measured_tflops
        if not isinstance(stored, Mapping) or not stored:
            return {"status": "not measured", "simulated": False, "howTo": HOW_TO_MEASURE}
        gpu = host_model or ""
        rows, ref = _results(stored, gpu)
        section = {
            "status": "measured",
            "source": f"stack output {o.MEASURED_TFLOPS}",
            "simulated": output_simulated,
            "gpu": gpu or None,
            "measuredAt": outputs.tflops_measured_at,
            "peakSource": peak_source(gpu),
        }
    two_rates = any(r["burst"] or r["sustained"] for r in rows.values())
    section.update(
        {
            "headline": "sustained" if two_rates else None,
            "results": rows,
            "reference": ref,
            "means": dict(MEANS),
        }
    )
    return dict(sanitize(section, "measuredTflops"))
