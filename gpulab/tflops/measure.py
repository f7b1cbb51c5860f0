"""Measurement for :mod:`gpulab.tflops`: the PyTorch and CuPy backends and the three timed phases.

Per data type, on one pair of random ``N x N`` inputs:

* **burst**: ``repeats`` times: rest ``rest_seconds`` (the board drops back under its power
  limit), ``warmup`` untimed products, then ``burst_iters`` products between two CUDA events.
  About 20 ms of load: on an H200 the board is still at boost clock (1980 MHz) then;
* **sustained**: products back to back for ``sustained_seconds``, timed in windows of
  ``iters`` products; windows that start in the first ``settle_seconds`` are the ramp into the
  power/thermal steady state and do not count;
* **reference** (once, bf16, PyTorch only): the plain loop a user would write, ``c = a @ b``
  ten times between two CUDA events after the same rest and warm-up, with PyTorch's default
  flags and no ``out=``. The burst rate must come within 3% of it.

Every timed run keeps its host window (:class:`Window`, ``time.perf_counter`` seconds) so the
clock and power samples of :mod:`gpulab.tflops.clocks` can be matched to it.

Imports only the standard library at module level (PyTorch, CuPy and NVML are imported when a
backend is loaded), so the benchmark Pod can run it from the mounted ``gpulab`` modules.
See :mod:`gpulab.tflops` for the precision of each data type.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

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


# Not a gpulab.core.errors.GpuLabError: this module also runs alone in the benchmark Pod, which
# ships only the tflops modules (components/benchmark.py), so it imports no other gpulab module.
class BackendMissingError(RuntimeError):
    """Neither PyTorch nor CuPy (or not the one asked for) can be imported."""


#: The reference loop's data type and product count.
REFERENCE_DTYPE: Final = "bf16"
REFERENCE_PRODUCTS: Final = 10


@dataclass(frozen=True)
class Window:
    """One timed run: host seconds ``t0``..``t1`` (``time.perf_counter``) around it,
    ``seconds_per_product`` from the CUDA events, and how many ``products`` it timed."""

    t0: float
    t1: float
    seconds_per_product: float
    products: int


@dataclass(frozen=True)
class Timing:
    """One data type's measurement, or why none (``skipped``: never attempted), or why it died
    partway (``failed``: the error, e.g. ``OutOfMemoryError: CUDA out of memory ...`` or
    ``RuntimeError: CUDA error: an illegal memory access was encountered``, and how far it got).

    ``runs``: seconds per product of the runs the headline rate is the median of (the steady
    sustained windows); ``burst``: the burst runs; ``sustained``: every sustained window, the
    settling ones included; ``settle_s``: how long the sustained phase settled before
    windows counted. Timings built with ``runs`` alone (no phases) are plain repeated runs.
    """

    runs: tuple[float, ...] = ()
    skipped: str | None = None
    burst: tuple[Window, ...] = ()
    sustained: tuple[Window, ...] = ()
    settle_s: float = 0.0
    failed: str | None = None


@dataclass(frozen=True)
class Reference:
    """The plain-loop reference: its runs, or why it was not measured (``skipped``)."""

    runs: tuple[Window, ...] = ()
    dtype: str = REFERENCE_DTYPE
    products: int = REFERENCE_PRODUCTS
    skipped: str | None = None


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
    with CUDA events; ``notes``: per-dtype precision notes; ``prepare_plain(n)`` (PyTorch
    only, else None): like ``prepare`` for the reference, bf16 inputs and a product that is
    just ``a @ b`` under PyTorch's default flags.
    """

    name: str
    device_name: str
    skip_reason: Callable[[str], str | None]
    prepare: Callable[[str, int], AbstractContextManager[Product]]
    synchronize: Callable[[], None]
    time_products: Callable[[Product, int], float]
    notes: dict[str, str] = field(default_factory=dict)
    prepare_plain: Callable[[int], AbstractContextManager[Product]] | None = None


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

    @contextmanager
    def prepare_plain(n: int) -> Iterator[Product]:
        bufs: list[Any] = []
        try:
            gen = torch.Generator(device="cuda").manual_seed(1)
            bufs.append(torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen))
            bufs.append(torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=gen))

            def product() -> None:
                bufs[0] @ bufs[1]

            yield product
        finally:
            bufs.clear()
            torch.cuda.empty_cache()

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
        prepare_plain=prepare_plain,
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


def _burst(
    backend: Backend,
    product: Product,
    *,
    products: int,
    warmup: int,
    rest_seconds: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Window:
    """Rest, warm up with ``warmup`` untimed products, then time ``products`` of them."""
    if rest_seconds > 0:
        sleep(rest_seconds)
    for _ in range(warmup):
        product()
    backend.synchronize()
    t0 = clock()
    seconds = backend.time_products(product, products)
    return Window(t0, clock(), seconds / products, products)


def measure(
    backend: Backend,
    *,
    size: int,
    iters: int,
    dtypes: Sequence[str],
    warmup: int = 5,
    repeats: int = 3,
    burst_iters: int = 10,
    rest_seconds: float = 2.0,
    sustained_seconds: float = 10.0,
    settle_seconds: float = 5.0,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Timing]:
    """Time each dtype on ``backend`` (burst, then sustained); ``{dtype: Timing}`` in order given.

    Burst: ``repeats`` runs of ``burst_iters`` products, each after ``rest_seconds`` idle and
    ``warmup`` untimed products. Sustained: windows of ``iters`` products back to back until
    ``sustained_seconds`` passed and at least one window started after ``settle_seconds``;
    ``Timing.runs`` holds the windows that started after it. Raises ``ValueError`` when
    ``settle_seconds`` is not below ``sustained_seconds``.
    """
    if settle_seconds >= sustained_seconds:
        raise ValueError(
            f"settle time ({settle_seconds} s) must be shorter than the sustained phase "
            f"({sustained_seconds} s)"
        )
    out: dict[str, Timing] = {}
    for dtype in dtypes:
        reason = backend.skip_reason(dtype)
        if reason is not None:
            out[dtype] = Timing(skipped=reason)
            continue
        try:
            out[dtype] = _measure_one(
                backend,
                dtype,
                size=size,
                iters=iters,
                warmup=warmup,
                repeats=repeats,
                burst_iters=burst_iters,
                rest_seconds=rest_seconds,
                sustained_seconds=sustained_seconds,
                settle_seconds=settle_seconds,
                clock=clock,
                sleep=sleep,
            )
        except Exception as exc:  # the GPU or the library failed partway: failed, with why
            out[dtype] = Timing(failed=failure_text(exc))
    return out


def failure_text(exc: BaseException) -> str:
    """An error in one line: its class and first line (``OutOfMemoryError: CUDA out of memory.
    Tried to allocate ...``), at most 300 characters."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}"[:300]


def _measure_one(
    backend: Backend,
    dtype: str,
    *,
    size: int,
    iters: int,
    warmup: int,
    repeats: int,
    burst_iters: int,
    rest_seconds: float,
    sustained_seconds: float,
    settle_seconds: float,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Timing:
    """One dtype's burst and sustained phases (:func:`measure`)."""
    with backend.prepare(dtype, size) as product:
        burst = tuple(
            _burst(
                backend,
                product,
                products=burst_iters,
                warmup=warmup,
                rest_seconds=rest_seconds,
                clock=clock,
                sleep=sleep,
            )
            for _ in range(repeats)
        )
        windows: list[Window] = []
        start = clock()
        while True:
            t0 = clock()
            seconds = backend.time_products(product, iters)
            t1 = clock()
            windows.append(Window(t0, t1, seconds / iters, iters))
            if t1 - start >= sustained_seconds and t0 - start >= settle_seconds:
                break
    steady = tuple(w.seconds_per_product for w in windows if w.t0 - start >= settle_seconds)
    return Timing(steady, None, burst, tuple(windows), settle_seconds)


def measure_reference(
    backend: Backend,
    *,
    size: int,
    warmup: int = 5,
    repeats: int = 3,
    rest_seconds: float = 2.0,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> Reference:
    """Time the plain reference loop (bf16 ``a @ b``, :data:`REFERENCE_PRODUCTS` products)
    ``repeats`` times, each after the same rest and warm-up as a burst run.

    Returns a skipped :class:`Reference` for a backend without ``prepare_plain`` (CuPy).
    """
    if backend.prepare_plain is None:
        return Reference(skipped=f"the reference is a PyTorch loop; backend {backend.name} has none")
    with backend.prepare_plain(size) as product:
        runs = tuple(
            _burst(
                backend,
                product,
                products=REFERENCE_PRODUCTS,
                warmup=warmup,
                rest_seconds=rest_seconds,
                clock=clock,
                sleep=sleep,
            )
            for _ in range(repeats)
        )
    return Reference(runs)
