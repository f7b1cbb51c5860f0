"""Dense matmul throughput of the host's GPU, in TFLOP/s: burst, sustained, and a plain reference.

Host-side command (not part of the cluster)::

    python -m gpulab.tflops [--size N] [--dtypes bf16,fp16,fp32] [--json]
                            [--burst-iters K] [--warmup K] [--rest-seconds S] [--repeats R]
                            [--iters K] [--sustained-seconds S] [--warmup-seconds S]
                            [--no-reference] [--backend auto|torch|cupy] [--device I]

Why two rates: on an H200 (700 W limit) an 8192 bf16 product runs at boost clock (1980 MHz,
~790 TFLOP/s) for about the first 60 ms of load; then the board reaches its power limit
(``sw-power-cap``) and the SM clock settles near 1455-1470 MHz (~660 TFLOP/s), within about
2 s, and stays there (``tests/data/device-h200/README.md``). Both are real: the **burst** is
what a short kernel sequence after idle gets, the **sustained** rate what a long job gets. So
the document reports both, each with the SM clock (MHz) and board power (W) sampled while it
ran (:mod:`gpulab.tflops.clocks`: NVML every 10 ms, else ``nvidia-smi -lms 100``), and a
**reference**: the plain loop a user would write (``c = a @ b`` ten times, bf16, between two
CUDA events, after the same rest and warm-up). The burst must come within 3% of the
reference (``reference.burstOverReference``; a note is added when it does not).

Method (:mod:`gpulab.tflops.measure`): inputs are random normal values (never zeros: all-zero
inputs let the tensor cores run faster than real data). One product is ``2 * N**3``
floating-point operations. Rates are medians over runs (burst runs; steady sustained windows),
the best run is reported too. Peaks come from :mod:`gpulab.tflops.peaks` (dense datasheet figures).
The headline ``results.<dtype>.tflops`` is the sustained rate (``"headline": "sustained"``),
which is what the baseline card records.

Precision: ``bf16``/``fp16`` multiply on tensor cores with FP32 accumulate (PyTorch's
reduced-precision split-K reductions are switched off while measuring; the reference keeps
PyTorch's defaults, and on an H200 at 8192 the two run alike). ``fp32`` is true FP32: TF32 is
switched off (``torch.backends.cuda.matmul``) and the JSON says so. ``tf32`` (optional) is
FP32 inputs with TF32 allowed. With CuPy, ``bf16``, ``tf32`` and the reference are not
measured (reported as ``null`` with a note).

Backends: PyTorch if importable, else CuPy; neither -> exit 2 with a message naming what to
install. Exit codes: 0 measured; 1 a backend is present but no CUDA device works (message on
stderr); 2 usage error or no backend.

Modules: this one holds the arithmetic, the JSON document and the CLI; the backends and the
timed phases are in :mod:`gpulab.tflops.measure`, the clock sampler in
:mod:`gpulab.tflops.clocks` (all three, with :mod:`gpulab.tflops.peaks`, ship to the benchmark Pod).

JSON (``--json``; numbers from an H200, abridged)::

    {"schema": "gpulab.dev/tflops/v2", "gpu": "NVIDIA H200", "driver": "580.159.04",
     "backend": "torch 2.11.0+cu130", "size": 8192, "headline": "sustained",
     "iters": 20, "burstIters": 10, "warmup": 5, "restSeconds": 2.0, "repeats": 3,
     "sustainedSeconds": 10.0, "warmupSeconds": 5.0, "sampler": "nvml (...) every 10 ms",
     "results": {"bf16": {"tflops": 660.0, "tflopsBest": 680.1, "msPerMatmul": 1.666,
                          "peak": 989.5, "fraction": 0.667,
                          "burst": {"tflops": 790.0, "smClockMHz": {"median": 1980, ...},
                                    "powerW": {...}, ...},
                          "sustained": {"tflops": 660.0, "smClockMHz": {"median": 1470, ...},
                                        "powerW": {"median": 691.0, ...}, "trace": [...], ...}},
                 ...},
     "reference": {"dtype": "bf16", "products": 10, "tflops": 791.0,
                   "burstOverReference": 0.999, "withinTolerance": true, ...},
     "phases": {"burst": "...", "sustained": "...", "reference": "..."},
     "notes": {"fp32": "TF32 disabled: true FP32 (CUDA cores)"},
     "peakSource": "NVIDIA H200 Tensor Core GPU datasheet (2024), ...",
     "measuredAt": "2026-12-01T09:30:00+00:00"}
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.tflops import clocks, peaks
from gpulab.tflops.clocks import Sample
from gpulab.tflops.measure import (
    _BACKENDS,
    BACKEND_MISSING_MESSAGE,
    REFERENCE_DTYPE,
    Backend,
    BackendMissingError,
    Reference,
    Timing,
    Window,
    driver_version,
    load_backend,
    measure,
    measure_reference,
)

__all__ = [
    "BACKEND_MISSING_MESSAGE",
    "DEFAULT_DTYPES",
    "DTYPES",
    "PHASES",
    "REFERENCE_TOLERANCE",
    "SCHEMA",
    "Backend",
    "BackendMissingError",
    "Reference",
    "Timing",
    "Window",
    "assemble_result",
    "driver_version",
    "load_backend",
    "main",
    "matmul_flops",
    "measure",
    "measure_reference",
    "parse_dtypes",
    "tflops_from_seconds",
]

SCHEMA: Final = "gpulab.dev/tflops/v2"
#: Data types this command can measure.
DTYPES: Final[tuple[str, ...]] = ("bf16", "fp16", "fp32", "tf32")
DEFAULT_DTYPES: Final[tuple[str, ...]] = ("bf16", "fp16", "fp32")
#: How far the bf16 burst may sit from the plain reference loop (3%).
REFERENCE_TOLERANCE: Final = 0.03
#: What each phase is, as the JSON's ``phases`` says it.
PHASES: Final[dict[str, str]] = {
    "burst": (
        "short: after an idle rest and a few untimed products, one run of burstIters products "
        "timed with CUDA events, repeated; the board is still at boost clock. Power readings lag "
        "the load by tens of milliseconds, so a burst's power reads low"
    ),
    "sustained": (
        "long: products back to back for sustainedSeconds in timed windows of iters products; "
        "windows starting in the first warmupSeconds (the ramp into the power/thermal steady "
        "state) are not counted. This is the headline rate"
    ),
    "reference": (
        "the plain loop: c = a @ b (torch.matmul, bf16, PyTorch's default flags, no out=) ten "
        "times between two CUDA events, after the same rest and warm-up as a burst run"
    ),
}


def matmul_flops(n: int) -> int:
    """Floating-point operations of one ``n x n`` by ``n x n`` product: ``2 * n**3``.

    (``n**3`` multiply-adds, each counted as two operations, as datasheets count them.)
    Raises ``ValueError`` when ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"matrix size must be >= 1, got {n}")
    return 2 * n**3


def tflops_from_seconds(n: int, seconds_per_matmul: float) -> float:
    """TFLOP/s (10**12 operations per second) for one ``n``-sized product taking that time.

    Raises ``ValueError`` when the time is not positive.
    """
    if seconds_per_matmul <= 0:
        raise ValueError(f"time per matmul must be > 0 s, got {seconds_per_matmul}")
    return matmul_flops(n) / seconds_per_matmul / 1e12


def parse_dtypes(text: str) -> tuple[str, ...]:
    """Parse ``"bf16,fp16,fp32"`` into a tuple, keeping order and dropping repeats.

    Raises ``ValueError`` naming the unknown entries and the known ones.
    """
    items = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"no dtypes given; known: {','.join(DTYPES)}")
    unknown = [t for t in items if t not in DTYPES]
    if unknown:
        raise ValueError(f"unknown dtype(s) {','.join(unknown)}; known: {','.join(DTYPES)}")
    return tuple(dict.fromkeys(items))


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _rates(size: int, seconds: Sequence[float], peak: float | None) -> dict[str, Any]:
    """Median and best rate of runs given in seconds per product."""
    median_s = statistics.median(seconds)
    rate = tflops_from_seconds(size, median_s)
    return {
        "tflops": _round(rate, 1),
        "tflopsBest": _round(tflops_from_seconds(size, min(seconds)), 1),
        "msPerMatmul": _round(median_s * 1e3, 4),
        "fraction": _round(rate / peak, 3) if peak else None,
    }


def _clocks(samples: Sequence[Sample], windows: Sequence[Window]) -> dict[str, Any]:
    return clocks.summarize_windows(samples, [(w.t0, w.t1) for w in windows])


def _trace(size: int, samples: Sequence[Sample], windows: Sequence[Window]) -> list[dict[str, Any]]:
    """Per second of the sustained phase: the median window rate, SM clock and power."""
    start = windows[0].t0
    bins: dict[int, list[Window]] = {}
    for w in windows:
        bins.setdefault(int(w.t0 - start), []).append(w)
    out = []
    for second, ws in sorted(bins.items()):
        ck = _clocks(samples, ws)
        out.append(
            {
                "t": second,
                "tflops": _round(
                    tflops_from_seconds(size, statistics.median(w.seconds_per_product for w in ws)), 1
                ),
                "smClockMHz": (ck["smClockMHz"] or {}).get("median"),
                "powerW": (ck["powerW"] or {}).get("median"),
            }
        )
    return out


def _phases(size: int, timing: Timing, peak: float | None, samples: Sequence[Sample]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if timing.burst:
        out["burst"] = {
            **_rates(size, [w.seconds_per_product for w in timing.burst], peak),
            "runs": len(timing.burst),
            "products": timing.burst[0].products,
            **_clocks(samples, timing.burst),
        }
    if timing.sustained:
        start = timing.sustained[0].t0
        steady = [w for w in timing.sustained if w.t0 - start >= timing.settle_s]
        out["sustained"] = {
            **_rates(size, [w.seconds_per_product for w in steady], peak),
            "tflopsWorst": _round(tflops_from_seconds(size, max(w.seconds_per_product for w in steady)), 1),
            "windows": len(steady),
            "windowProducts": steady[0].products,
            "seconds": _round(timing.sustained[-1].t1 - start, 2),
            "settleSeconds": timing.settle_s,
            **_clocks(samples, steady),
            "trace": _trace(size, samples, timing.sustained),
        }
    return out


def _reference(
    size: int, ref: Reference, results: Mapping[str, Mapping[str, Any]], samples: Sequence[Sample]
) -> dict[str, Any]:
    doc: dict[str, Any] = {"dtype": ref.dtype, "products": ref.products}
    if ref.skipped is not None or not ref.runs:
        return {**doc, "tflops": None, "skipped": ref.skipped or "not measured"}
    doc.update(_rates(size, [w.seconds_per_product for w in ref.runs], None))
    doc.pop("fraction")
    doc.update({"runs": len(ref.runs), **_clocks(samples, ref.runs)})
    burst = (results.get(ref.dtype) or {}).get("burst") or {}
    if burst.get("tflops") and doc["tflops"]:
        ratio = burst["tflops"] / doc["tflops"]
        doc["burstOverReference"] = round(ratio, 3)
        doc["tolerance"] = REFERENCE_TOLERANCE
        doc["withinTolerance"] = abs(ratio - 1) <= REFERENCE_TOLERANCE
    return doc


def assemble_result(
    *,
    gpu: str,
    driver: str | None,
    backend: str,
    size: int,
    iters: int,
    warmup: int,
    timings: Mapping[str, Timing],
    measured_at: datetime,
    notes: Mapping[str, str] | None = None,
    warmup_seconds: float | None = None,
    reference: Reference | None = None,
    samples: Sequence[Sample] = (),
    sampler: str | None = None,
    burst_iters: int | None = None,
    rest_seconds: float | None = None,
    sustained_seconds: float | None = None,
) -> dict[str, Any]:
    """Build the JSON document (see the module docstring) from per-dtype timings.

    For each dtype: ``tflops`` is the rate of the median run of ``Timing.runs`` (the steady
    sustained windows) and ``tflopsBest`` of the fastest, ``msPerMatmul`` the median time in
    milliseconds; ``peak`` is :func:`gpulab.tflops.peaks.peak_for` (``None`` for an unknown GPU or a
    type the hardware lacks) and ``fraction`` is ``tflops / peak`` (``None`` without a peak).
    A timing with phases adds ``burst`` and ``sustained`` blocks, each with its rates and the
    clocks of ``samples`` taken during it (:func:`gpulab.tflops.clocks.summarize_windows`);
    ``sustained.trace`` gives the rate, SM clock and power per second. ``reference`` adds the
    top-level ``reference`` block with ``burstOverReference`` (bf16 burst / reference; a note
    ``reference`` is added when it is off by more than :data:`REFERENCE_TOLERANCE`). A skipped
    dtype has ``tflops: null`` and its reason in ``notes``; one that died partway (``Timing.failed``)
    has ``tflops: null``, ``failed: <error>`` and the note ``failed: <error>``, and the document's
    ``failed`` maps each such dtype to its error. ``measured_at`` must be timezone-aware.
    """
    if measured_at.tzinfo is None:
        raise ValueError("measured_at must be timezone-aware")
    all_notes = dict(notes or {})
    results: dict[str, dict[str, Any]] = {}
    for dtype, timing in timings.items():
        peak = peaks.peak_for(gpu, dtype)
        if timing.failed is not None:
            # It died partway: failed, with why (never "not measured").
            all_notes[dtype] = f"failed: {timing.failed}"
            results[dtype] = {"tflops": None, "peak": peak, "fraction": None, "failed": timing.failed}
            continue
        if timing.skipped is not None or not timing.runs:
            all_notes[dtype] = timing.skipped or "not measured"
            results[dtype] = {"tflops": None, "peak": peak, "fraction": None}
            continue
        rates = _rates(size, timing.runs, peak)
        results[dtype] = {
            "tflops": rates["tflops"],
            "tflopsBest": rates["tflopsBest"],
            "msPerMatmul": rates["msPerMatmul"],
            "peak": peak,
            "fraction": rates["fraction"],
            **_phases(size, timing, peak, samples),
        }
    row = peaks.row_for(gpu)
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "gpu": gpu,
        "driver": driver,
        "backend": backend,
        "size": size,
        "headline": "sustained",
        "iters": iters,
        "burstIters": burst_iters,
        "warmup": warmup,
        "restSeconds": rest_seconds,
        "warmupSeconds": warmup_seconds,
        "sustainedSeconds": sustained_seconds,
        "repeats": max(((len(t.burst) if t.burst else len(t.runs)) for t in timings.values()), default=0),
        "flopsPerMatmul": matmul_flops(size),
        "sampler": sampler,
        "results": results,
    }
    if reference is not None:
        doc["reference"] = _reference(size, reference, results, samples)
        if doc["reference"].get("withinTolerance") is False:
            off = doc["reference"]["burstOverReference"] - 1
            all_notes["reference"] = (
                f"the {REFERENCE_DTYPE} burst is {off:+.1%} off the plain reference loop (tolerance "
                f"{REFERENCE_TOLERANCE:.0%}): the burst measurement is suspect"
            )
    doc.update(
        {
            "phases": dict(PHASES),
            "notes": all_notes,
            "peakSource": row.source if row else None,
            "measuredAt": measured_at.isoformat(timespec="seconds"),
        }
    )
    failed = {d: t.failed for d, t in timings.items() if t.failed is not None}
    if failed:
        doc["failed"] = failed
    return doc


def _fmt(block: Mapping[str, Any] | None) -> str:
    """``"790.1 @1980 MHz 650 W"`` for a phase block; ``"-"`` without one."""
    if not block or block.get("tflops") is None:
        return "-"
    sm = (block.get("smClockMHz") or {}).get("median")
    power = (block.get("powerW") or {}).get("median")
    clock_text = f" @{sm} MHz" if sm is not None else ""
    watts = f" {power:.0f} W" if power is not None else ""
    return f"{block['tflops']:.1f}{clock_text}{watts}"


def _render_text(doc: Mapping[str, Any]) -> str:
    lines = [
        f"GPU {doc['gpu']}  driver {doc['driver'] or 'unknown'}  backend {doc['backend']}",
        f"{doc['size']}x{doc['size']} matmul; burst: {doc.get('burstIters')} products x "
        f"{doc['repeats']} runs after {doc.get('restSeconds')} s rest and {doc['warmup']} warm-ups; "
        f"sustained: {doc.get('sustainedSeconds')} s in windows of {doc['iters']}, first "
        f"{doc.get('warmupSeconds')} s not counted (medians; clocks: {doc.get('sampler') or 'none'})",
        f"{'dtype':<6} {'burst TFLOP/s':>28} {'sustained TFLOP/s':>28} {'peak':>7} {'sust/peak':>9}  note",
    ]
    for dtype, r in doc["results"].items():
        peak = "-" if r["peak"] is None else f"{r['peak']:.1f}"
        frac = "-" if r["fraction"] is None else f"{r['fraction']:.1%}"
        sustained = r.get("sustained") or ({"tflops": r["tflops"]} if r["tflops"] is not None else None)
        lines.append(
            f"{dtype:<6} {_fmt(r.get('burst')):>28} {_fmt(sustained):>28} {peak:>7} {frac:>9}  "
            f"{doc['notes'].get(dtype, '')}"
        )
    ref = doc.get("reference")
    if ref is not None:
        ratio = ref.get("burstOverReference")
        vs = f"; burst/reference {ratio:.3f}" if ratio is not None else ""
        got = _fmt(ref) if ref.get("tflops") is not None else f"skipped ({ref.get('skipped')})"
        lines.append(f"reference (plain {ref['dtype']} a @ b x{ref['products']}): {got}{vs}")
        if "reference" in doc["notes"]:
            lines.append(f"warning: {doc['notes']['reference']}")
    if doc.get("peakSource"):
        lines.append(f"peaks: dense datasheet figures, {doc['peakSource']}")
    else:
        lines.append("peaks: this GPU is not in gpulab/tflops/peaks.py; fraction not computed")
    return "\n".join(lines)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 measured, 1 no usable GPU, 2 usage/backend)."""
    ap = argparse.ArgumentParser(
        prog="python -m gpulab.tflops",
        description="Measure dense matmul TFLOP/s (burst and sustained) on this host's GPU.",
    )
    ap.add_argument("--size", type=_positive, default=8192, help="matrix size N (default 8192)")
    ap.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES), help=f"from {','.join(DTYPES)}")
    ap.add_argument("--burst-iters", type=_positive, default=10, help="products per burst run")
    ap.add_argument("--warmup", type=int, default=5, help="untimed products before each burst run")
    ap.add_argument("--rest-seconds", type=float, default=2.0, help="idle time before each burst run")
    ap.add_argument("--repeats", type=_positive, default=3, help="burst (and reference) runs")
    ap.add_argument("--iters", type=_positive, default=20, help="products per sustained window")
    ap.add_argument("--sustained-seconds", type=float, default=10.0, help="length of the sustained phase")
    ap.add_argument(
        "--warmup-seconds", type=float, default=5.0, help="sustained windows starting earlier do not count"
    )
    ap.add_argument("--no-reference", action="store_true", help="skip the plain bf16 reference loop")
    ap.add_argument("--backend", default="auto", choices=("auto", *_BACKENDS))
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    ap.add_argument("--json", action="store_true", help="print the JSON document")
    args = ap.parse_args(argv)
    try:
        dtypes = parse_dtypes(args.dtypes)
    except ValueError as exc:
        print(f"gpulab.tflops: --dtypes: {exc}", file=sys.stderr)
        return 2
    settle = max(args.warmup_seconds, 0.0)
    if settle >= args.sustained_seconds:
        print(
            f"gpulab.tflops: --warmup-seconds ({settle}) must be below --sustained-seconds "
            f"({args.sustained_seconds})",
            file=sys.stderr,
        )
        return 2
    try:
        backend = load_backend(args.backend, device=args.device)
    except BackendMissingError as exc:
        print(f"gpulab.tflops: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"gpulab.tflops: {exc}", file=sys.stderr)
        return 1
    warmup, rest = max(args.warmup, 0), max(args.rest_seconds, 0.0)
    sampler = clocks.open_sampler(args.device)
    try:
        reference = (
            None
            if args.no_reference
            else measure_reference(
                backend, size=args.size, warmup=warmup, repeats=args.repeats, rest_seconds=rest
            )
        )
        timings = measure(
            backend,
            size=args.size,
            iters=args.iters,
            dtypes=dtypes,
            warmup=warmup,
            repeats=args.repeats,
            burst_iters=args.burst_iters,
            rest_seconds=rest,
            sustained_seconds=args.sustained_seconds,
            settle_seconds=settle,
        )
    finally:
        samples = sampler.stop()
    doc = assemble_result(
        gpu=backend.device_name,
        driver=driver_version(args.device),
        backend=backend.name,
        size=args.size,
        iters=args.iters,
        warmup=warmup,
        timings=timings,
        measured_at=datetime.now(UTC),
        notes={d: backend.notes[d] for d in dtypes if d in backend.notes},
        warmup_seconds=settle,
        reference=reference,
        samples=samples,
        sampler=sampler.source,
        burst_iters=args.burst_iters,
        rest_seconds=rest,
        sustained_seconds=args.sustained_seconds,
    )
    print(json.dumps(doc, indent=2) if args.json else _render_text(doc))
    # Every dtype it tried died partway: the run failed (the document says why, per dtype).
    tried = [t for t in timings.values() if t.skipped is None]
    if tried and all(t.failed is not None for t in tried):
        print(
            f"gpulab.tflops: failed: {'; '.join(f'{d}: {w}' for d, w in doc['failed'].items())}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
