"""Measurement for :mod:`gpulab.tflops`: the PyTorch and CuPy backends, the warm-up and the timed runs.

Imports only the standard library at module level (PyTorch, CuPy and NVML are imported when a
backend is loaded), so the benchmark Pod can run it from the mounted ``gpulab`` modules.
See :mod:`gpulab.tflops` for the method and the precision of each data type.
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


class BackendMissingError(RuntimeError):
    """Neither PyTorch nor CuPy (or not the one asked for) can be imported."""


@dataclass(frozen=True)
class Timing:
    """Seconds per product for each timed run of one data type (``runs``), or why none."""

    runs: tuple[float, ...] = ()
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
