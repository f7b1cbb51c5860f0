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
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from gpulab import peaks

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

BACKEND_MISSING_MESSAGE: Final = (
    "gpulab.tflops needs PyTorch or CuPy with CUDA to multiply matrices on the GPU, and "
    "neither imports here. Install one into this Python, e.g. "
    "`python -m pip install torch` (CUDA wheels: https://pytorch.org/get-started/locally/) "
    "or `python -m pip install cupy-cuda12x` (cupy-cuda13x for a CUDA 13 driver), then run "
    "`python -m gpulab.tflops --json` again."
)

_FP32_NOTE: Final = "TF32 disabled: true FP32 (CUDA cores, no tensor cores)"
_TF32_NOTE: Final = "FP32 inputs with TF32 tensor cores allowed"
_HALF_NOTE: Final = "tensor cores, FP32 accumulate (reduced-precision reductions off)"


class BackendMissingError(RuntimeError):
    """Neither PyTorch nor CuPy (or not the one asked for) can be imported."""


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


@dataclass(frozen=True)
class Timing:
    """Seconds per product for each timed run of one data type (``runs``), or why none."""

    runs: tuple[float, ...] = ()
    skipped: str | None = None


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


# --- backends ---------------------------------------------------------------------------

Product = Callable[[], None]


@dataclass
class Backend:
    """A way to run and time matrix products on one CUDA device.

    ``name``: e.g. ``"torch 2.11.0+cu130"``; ``device_name``: the GPU as the backend reports
    it (the same spelling as ``nvidia-smi``); ``skip_reason(dtype)``: why a dtype cannot be
    measured, or None; ``prepare(dtype, n)``: a context manager that allocates two random
    ``n x n`` inputs, sets the precision flags for ``dtype``, yields a function doing one
    product, and restores the flags and frees memory on exit; ``synchronize()``: wait for the
    device; ``time_products(product, k)``: seconds for ``k`` back-to-back products, timed
    with CUDA events; ``notes``: per-dtype precision notes.
    """

    name: str
    device_name: str
    skip_reason: Callable[[str], str | None]
    prepare: Callable[[str, int], AbstractContextManager[Product]]
    synchronize: Callable[[], None]
    time_products: Callable[[Product, int], float]
    notes: dict[str, str] = field(default_factory=dict)


def _torch_backend(device: int) -> Backend:
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError(f"torch {torch.__version__} is installed but sees no CUDA device")
    torch.cuda.set_device(device)
    dtypes = {
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "fp32": torch.float32,
        "tf32": torch.float32,
    }
    matmul = torch.backends.cuda.matmul
    # PyTorch >= 2.9 has fp32_precision and warns on the legacy allow_tf32 flag; older ones
    # have only allow_tf32. Read and write one API, never both (newer releases refuse mixing).
    new_api = hasattr(matmul, "fp32_precision")
    flag_off = "fp32_precision='ieee'" if new_api else "allow_tf32=False"
    flag_on = "fp32_precision='tf32'" if new_api else "allow_tf32=True"

    def get_tf32() -> Any:
        return matmul.fp32_precision if new_api else matmul.allow_tf32

    def set_tf32(value: Any) -> None:
        if new_api:
            matmul.fp32_precision = value
        else:
            matmul.allow_tf32 = value

    @contextmanager
    def prepare(dtype: str, n: int) -> Iterator[Product]:
        saved = (
            get_tf32(),
            matmul.allow_fp16_reduced_precision_reduction,
            matmul.allow_bf16_reduced_precision_reduction,
        )
        bufs: list[Any] = []
        try:
            allowed = dtype == "tf32"
            set_tf32(("tf32" if allowed else "ieee") if new_api else allowed)
            matmul.allow_fp16_reduced_precision_reduction = False
            matmul.allow_bf16_reduced_precision_reduction = False
            gen = torch.Generator(device="cuda").manual_seed(0)
            a = torch.randn(n, n, device="cuda", dtype=dtypes[dtype], generator=gen)
            b = torch.randn(n, n, device="cuda", dtype=dtypes[dtype], generator=gen)
            bufs.extend([a, b, torch.empty(n, n, device="cuda", dtype=dtypes[dtype])])
            del a, b

            def product() -> None:
                torch.matmul(bufs[0], bufs[1], out=bufs[2])

            yield product
        finally:
            bufs.clear()  # drop the tensors before returning their memory to the driver
            torch.cuda.empty_cache()
            set_tf32(saved[0])
            matmul.allow_fp16_reduced_precision_reduction = saved[1]
            matmul.allow_bf16_reduced_precision_reduction = saved[2]

    def time_products(product: Product, k: int) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(k):
            product()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1e3

    return Backend(
        name=f"torch {torch.__version__}",
        device_name=torch.cuda.get_device_name(device),
        skip_reason=lambda dtype: None,
        prepare=prepare,
        synchronize=torch.cuda.synchronize,
        time_products=time_products,
        notes={
            "bf16": _HALF_NOTE,
            "fp16": _HALF_NOTE,
            "fp32": f"{_FP32_NOTE}; torch.backends.cuda.matmul.{flag_off}",
            "tf32": f"{_TF32_NOTE}; torch.backends.cuda.matmul.{flag_on}",
        },
    )


def _cupy_backend(device: int) -> Backend:
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        raise RuntimeError(f"cupy {cupy.__version__} is installed but CUDA fails: {exc}") from exc
    if count <= device:
        raise RuntimeError(f"cupy sees {count} CUDA device(s); device {device} does not exist")
    cupy.cuda.Device(device).use()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    raw_name = props["name"]
    name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
    dtypes = {"fp16": cupy.float16, "fp32": cupy.float32}

    def skip_reason(dtype: str) -> str | None:
        # CuPy has no bfloat16 array type, and uses TF32 only when CUPY_TF32=1 is set before
        # import, so neither can be chosen per measurement.
        return None if dtype in dtypes else f"{dtype} is not measured with CuPy (use PyTorch)"

    @contextmanager
    def prepare(dtype: str, n: int) -> Iterator[Product]:
        rng = cupy.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=cupy.float32).astype(dtypes[dtype])
        b = rng.standard_normal((n, n), dtype=cupy.float32).astype(dtypes[dtype])
        bufs = [a, b, cupy.empty((n, n), dtype=dtypes[dtype])]
        del a, b

        def product() -> None:
            cupy.matmul(bufs[0], bufs[1], out=bufs[2])

        try:
            yield product
        finally:
            bufs.clear()
            cupy.get_default_memory_pool().free_all_blocks()

    def time_products(product: Product, k: int) -> float:
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(k):
            product()
        end.record()
        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end)) / 1e3

    return Backend(
        name=f"cupy {cupy.__version__}",
        device_name=name,
        skip_reason=skip_reason,
        prepare=prepare,
        synchronize=lambda: cupy.cuda.Device().synchronize(),
        time_products=time_products,
        notes={"fp16": "tensor cores (cuBLAS default compute type)", "fp32": _FP32_NOTE},
    )


_BACKENDS: Final[dict[str, Callable[[int], Backend]]] = {
    "torch": _torch_backend,
    "cupy": _cupy_backend,
}
_MODULES: Final = {"torch": "torch", "cupy": "cupy"}


def load_backend(
    prefer: str = "auto",
    *,
    device: int = 0,
    importer: Callable[[str], object] | None = None,
) -> Backend:
    """Return the first backend that imports: PyTorch, then CuPy (or only ``prefer``).

    ``importer`` (tests) replaces :func:`importlib.import_module` for the availability
    check. Raises :class:`BackendMissingError` (message: :data:`BACKEND_MISSING_MESSAGE`)
    when none imports, ``ValueError`` for an unknown ``prefer``, and ``RuntimeError`` when a
    backend imports but cannot use a CUDA device.
    """
    import importlib

    if prefer != "auto" and prefer not in _BACKENDS:
        raise ValueError(f"unknown backend {prefer!r}; known: auto, {', '.join(_BACKENDS)}")
    imp = importer or importlib.import_module
    order = list(_BACKENDS) if prefer == "auto" else [prefer]
    for key in order:
        try:
            imp(_MODULES[key])
        except ImportError:
            continue
        return _BACKENDS[key](device)
    raise BackendMissingError(BACKEND_MISSING_MESSAGE)


def driver_version(device: int = 0) -> str | None:
    """The NVIDIA driver version: NVML (``pynvml``) first, else ``nvidia-smi``, else None."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # NVML absent or failing: fall back to nvidia-smi
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, f"--id={device}", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out else None


def warm_up(
    product: Product,
    synchronize: Callable[[], None],
    *,
    count: int,
    seconds: float,
    clock: Callable[[], float] = time.perf_counter,
) -> int:
    """Run untimed products until at least ``count`` ran and ``seconds`` passed; return how many.

    Products run in batches of ``max(count, 1)`` with a device synchronisation after each, so
    the elapsed time is the device's, not the time to queue work. The time floor lets the
    clocks ramp up (an idle H200 reads 345 MHz SM, 1980 MHz under load). Returns 0 when both
    limits are 0.
    """
    if count <= 0 and seconds <= 0:
        return 0
    batch = max(count, 1)
    start = clock()
    done = 0
    while True:
        for _ in range(batch):
            product()
        synchronize()
        done += batch
        if done >= count and clock() - start >= seconds:
            return done


def measure(
    backend: Backend,
    *,
    size: int,
    iters: int,
    dtypes: Sequence[str],
    warmup: int = 5,
    warmup_seconds: float = 1.0,
    repeats: int = 3,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Timing]:
    """Time each dtype on ``backend``; returns ``{dtype: Timing}`` in the order given.

    Per dtype: :func:`warm_up`, then ``repeats`` runs of ``iters`` products, each run timed
    with the backend's CUDA events; a run's time is divided by ``iters``.
    """
    out: dict[str, Timing] = {}
    for dtype in dtypes:
        reason = backend.skip_reason(dtype)
        if reason is not None:
            out[dtype] = Timing(skipped=reason)
            continue
        with backend.prepare(dtype, size) as product:
            warm_up(product, backend.synchronize, count=warmup, seconds=warmup_seconds, clock=clock)
            runs = tuple(backend.time_products(product, iters) / iters for _ in range(repeats))
        out[dtype] = Timing(runs)
    return out


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
