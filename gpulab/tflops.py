"""Dense matmul throughput of the host's GPU, in TFLOP/s, against the datasheet peak.

Host-side command (not part of the cluster)::

    python -m gpulab.tflops [--size N] [--iters K] [--dtypes bf16,fp16,fp32] [--json]
                            [--warmup K] [--warmup-seconds S] [--repeats R]
                            [--backend auto|torch|cupy] [--device I]

Method: for each data type, two ``N x N`` matrices of random normal values (not zeros:
all-zero inputs let the tensor cores run faster than real data) are multiplied at least
``warmup`` times and for at least ``warmupSeconds`` (the clocks ramp up under load), then
``repeats`` runs of ``iters`` back-to-back products each are timed with CUDA events. One
product is ``2 * N**3`` floating-point operations; the reported rate is the median over the
runs, the best run is reported too. Peaks come from :mod:`gpulab.peaks`
(dense datasheet figures).

Why the warm-up has a time floor: on an H200 (700 W limit) an 8192 bf16 product runs at boost
clock (1980 MHz, ~800 TFLOP/s) for a fraction of a second, then the board reaches its power
limit and the SM clock settles at ~1300-1500 MHz (~580-660 TFLOP/s), see
``tests/data/device-h200/README.md``. The sustained rate is the baseline a workload gets; a
warm-up of a few products would report the burst.

Precision: ``bf16``/``fp16`` multiply on tensor cores with FP32 accumulate (PyTorch's
reduced-precision split-K reductions are switched off while measuring). ``fp32`` is true
FP32: TF32 is switched off (``torch.backends.cuda.matmul``) and the JSON says so. ``tf32``
(optional) is FP32 inputs with TF32 allowed. With CuPy, ``bf16`` and ``tf32`` are not
measured (reported as ``null`` with a note).

Backends: PyTorch if importable, else CuPy; neither -> exit 2 with a message naming what to
install. Exit codes: 0 measured; 1 a backend is present but no CUDA device works (message on
stderr); 2 usage error or no backend.

Modules: this one holds the arithmetic, the JSON document and the CLI; the backends, the
warm-up and the timed runs are in :mod:`gpulab.tflops_measure`.

JSON (``--json``)::

    {"schema": "gpulab.dev/tflops/v1", "gpu": "NVIDIA H200", "driver": "580.159.04",
     "backend": "torch 2.11.0+cu130", "size": 8192, "iters": 20, "warmup": 5,
     "warmupSeconds": 1.0, "repeats": 3,
     "results": {"bf16": {"tflops": 790.1, "tflopsBest": 795.0, "msPerMatmul": 1.39,
                          "peak": 989.5, "fraction": 0.798}, ...},
     "notes": {"fp32": "TF32 disabled: true FP32 (CUDA cores)"},
     "peakSource": "NVIDIA H200 Tensor Core GPU datasheet (2024), ...",
     "measuredAt": "2026-11-29T23:40:00+00:00"}
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from gpulab import peaks
from gpulab.tflops_measure import (
    _BACKENDS,
    BACKEND_MISSING_MESSAGE,
    Backend,
    BackendMissingError,
    Timing,
    driver_version,
    load_backend,
    measure,
    warm_up,
)

__all__ = [
    "BACKEND_MISSING_MESSAGE",
    "DEFAULT_DTYPES",
    "DTYPES",
    "SCHEMA",
    "Backend",
    "BackendMissingError",
    "Timing",
    "assemble_result",
    "driver_version",
    "load_backend",
    "main",
    "matmul_flops",
    "measure",
    "parse_dtypes",
    "tflops_from_seconds",
    "warm_up",
]

SCHEMA: Final = "gpulab.dev/tflops/v1"
#: Data types this command can measure.
DTYPES: Final[tuple[str, ...]] = ("bf16", "fp16", "fp32", "tf32")
DEFAULT_DTYPES: Final[tuple[str, ...]] = ("bf16", "fp16", "fp32")


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
) -> dict[str, Any]:
    """Build the JSON document (see the module docstring) from per-dtype timings.

    For each dtype: ``tflops`` is the rate of the median run and ``tflopsBest`` of the
    fastest, ``msPerMatmul`` the median time in milliseconds; ``peak`` is
    :func:`gpulab.peaks.peak_for` (``None`` for an unknown GPU or a type the hardware lacks)
    and ``fraction`` is ``tflops / peak`` (``None`` without a peak). A skipped dtype has
    ``tflops: null`` and its reason in ``notes``. ``measured_at`` must be timezone-aware.
    """
    if measured_at.tzinfo is None:
        raise ValueError("measured_at must be timezone-aware")
    all_notes = dict(notes or {})
    results: dict[str, dict[str, float | None]] = {}
    for dtype, timing in timings.items():
        peak = peaks.peak_for(gpu, dtype)
        if timing.skipped is not None or not timing.runs:
            all_notes[dtype] = timing.skipped or "not measured"
            results[dtype] = {"tflops": None, "peak": peak, "fraction": None}
            continue
        median_s = statistics.median(timing.runs)
        rate = tflops_from_seconds(size, median_s)
        best = tflops_from_seconds(size, min(timing.runs))
        results[dtype] = {
            "tflops": _round(rate, 1),
            "tflopsBest": _round(best, 1),
            "msPerMatmul": _round(median_s * 1e3, 4),
            "peak": peak,
            "fraction": _round(rate / peak, 3) if peak else None,
        }
    row = peaks.row_for(gpu)
    return {
        "schema": SCHEMA,
        "gpu": gpu,
        "driver": driver,
        "backend": backend,
        "size": size,
        "iters": iters,
        "warmup": warmup,
        "warmupSeconds": warmup_seconds,
        "repeats": max((len(t.runs) for t in timings.values()), default=0),
        "flopsPerMatmul": matmul_flops(size),
        "results": results,
        "notes": all_notes,
        "peakSource": row.source if row else None,
        "measuredAt": measured_at.isoformat(timespec="seconds"),
    }


def _render_text(doc: Mapping[str, Any]) -> str:
    lines = [
        f"GPU {doc['gpu']}  driver {doc['driver'] or 'unknown'}  backend {doc['backend']}",
        f"{doc['size']}x{doc['size']} matmul, {doc['iters']} products x {doc['repeats']} runs "
        f"after >= {doc['warmup']} warm-ups and >= {doc.get('warmupSeconds') or 0} s "
        "(median run)",
        f"{'dtype':<6} {'TFLOP/s':>9} {'peak':>9} {'fraction':>9}  note",
    ]
    for dtype, r in doc["results"].items():
        rate = "-" if r["tflops"] is None else f"{r['tflops']:.1f}"
        peak = "-" if r["peak"] is None else f"{r['peak']:.1f}"
        frac = "-" if r["fraction"] is None else f"{r['fraction']:.1%}"
        lines.append(f"{dtype:<6} {rate:>9} {peak:>9} {frac:>9}  {doc['notes'].get(dtype, '')}")
    if doc.get("peakSource"):
        lines.append(f"peaks: dense datasheet figures, {doc['peakSource']}")
    else:
        lines.append("peaks: this GPU is not in gpulab/peaks.py; fraction not computed")
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
        description="Measure dense matmul TFLOP/s on this host's GPU against the datasheet.",
    )
    ap.add_argument("--size", type=_positive, default=8192, help="matrix size N (default 8192)")
    ap.add_argument("--iters", type=_positive, default=20, help="products per timed run")
    ap.add_argument("--warmup", type=int, default=5, help="untimed products first, at least")
    ap.add_argument("--warmup-seconds", type=float, default=1.0, help="untimed warm-up time, at least")
    ap.add_argument("--repeats", type=_positive, default=3, help="timed runs (median reported)")
    ap.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES), help=f"from {','.join(DTYPES)}")
    ap.add_argument("--backend", default="auto", choices=("auto", *_BACKENDS))
    ap.add_argument("--device", type=int, default=0, help="CUDA device index")
    ap.add_argument("--json", action="store_true", help="print the JSON document")
    args = ap.parse_args(argv)
    try:
        dtypes = parse_dtypes(args.dtypes)
    except ValueError as exc:
        print(f"gpulab.tflops: --dtypes: {exc}", file=sys.stderr)
        return 2
    try:
        backend = load_backend(args.backend, device=args.device)
    except BackendMissingError as exc:
        print(f"gpulab.tflops: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"gpulab.tflops: {exc}", file=sys.stderr)
        return 1
    timings = measure(
        backend,
        size=args.size,
        iters=args.iters,
        dtypes=dtypes,
        warmup=max(args.warmup, 0),
        warmup_seconds=max(args.warmup_seconds, 0.0),
        repeats=args.repeats,
    )
    doc = assemble_result(
        gpu=backend.device_name,
        driver=driver_version(args.device),
        backend=backend.name,
        size=args.size,
        iters=args.iters,
        warmup=max(args.warmup, 0),
        timings=timings,
        measured_at=datetime.now(UTC),
        notes={d: backend.notes[d] for d in dtypes if d in backend.notes},
        warmup_seconds=max(args.warmup_seconds, 0.0),
    )
    print(json.dumps(doc, indent=2) if args.json else _render_text(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
