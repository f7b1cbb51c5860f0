"""gpulab.tflops.measure with a fake backend: warm-up, timed runs, missing backends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gpulab.tflops import benchmark as tflops
from gpulab.tflops.benchmark import Backend, Timing


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def fake_backend(seconds_per_product: float, clock: FakeClock) -> tuple[Backend, list[str]]:
    log: list[str] = []

    @contextmanager
    def prepare(dtype: str, n: int) -> Iterator[Any]:
        log.append(f"prepare {dtype} {n}")

        def product() -> None:
            clock.t += seconds_per_product
            log.append("product")

        yield product
        log.append(f"release {dtype}")

    def time_products(product: Any, k: int) -> float:
        start = clock.t
        for _ in range(k):
            product()
        return clock.t - start

    backend = Backend(
        name="fake 1.0",
        device_name="NVIDIA H200",
        skip_reason=lambda d: "no bf16 here" if d == "bf16" else None,
        prepare=prepare,
        synchronize=lambda: log.append("sync"),
        time_products=time_products,
    )
    return backend, log


def test_measure_runs_burst_then_sustained_and_releases() -> None:
    clock = FakeClock()
    backend, log = fake_backend(0.002, clock)
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        clock.t += s

    out = tflops.measure(
        backend,
        size=64,
        iters=5,
        dtypes=["bf16", "fp16"],
        warmup=3,
        repeats=2,
        burst_iters=4,
        rest_seconds=1.5,
        sustained_seconds=0.1,
        settle_seconds=0.05,
        clock=clock,
        sleep=sleep,
    )
    assert out["bf16"] == Timing(skipped="no bf16 here")
    fp16 = out["fp16"]
    assert sleeps == [1.5, 1.5]  # one rest before each burst run
    assert [w.products for w in fp16.burst] == [4, 4]
    assert all(w.seconds_per_product == pytest.approx(0.002) for w in fp16.burst)
    # sustained: windows of 5 products (10 ms each) until 0.1 s passed; the first 50 ms settle
    start = fp16.sustained[0].t0
    assert fp16.sustained[-1].t1 - start >= 0.1
    steady = [w for w in fp16.sustained if w.t0 - start >= 0.05]
    assert fp16.runs == pytest.approx(tuple(w.seconds_per_product for w in steady))
    assert 0 < len(fp16.runs) < len(fp16.sustained) and fp16.settle_s == 0.05
    assert log[0] == "prepare fp16 64" and log[-1] == "release fp16"
    assert log.count("product") == 2 * (3 + 4) + 5 * len(fp16.sustained)
    assert log.count("sync") == 2  # after each burst warm-up


def test_measure_rejects_a_settle_as_long_as_the_phase() -> None:
    backend, _ = fake_backend(0.002, FakeClock())
    with pytest.raises(ValueError, match="settle time"):
        tflops.measure(backend, size=8, iters=1, dtypes=["fp16"], sustained_seconds=1, settle_seconds=1)


def test_reference_is_the_plain_loop_after_the_same_rest_and_warm_up() -> None:
    clock = FakeClock()
    backend, log = fake_backend(0.00138, clock)

    @contextmanager
    def plain(n: int) -> Iterator[Any]:
        log.append(f"plain {n}")

        def product() -> None:
            clock.t += 0.00138
            log.append("a @ b")

        yield product

    backend.prepare_plain = plain
    slept: list[float] = []
    ref = tflops.measure_reference(
        backend, size=8192, warmup=2, repeats=3, rest_seconds=2.0, clock=clock, sleep=slept.append
    )
    assert ref.dtype == "bf16" and ref.products == 10 and ref.skipped is None
    assert [w.products for w in ref.runs] == [10, 10, 10]
    assert slept == [2.0, 2.0, 2.0]
    assert log.count("a @ b") == 3 * (2 + 10)

    cupy_like, _ = fake_backend(0.001, clock)
    skipped = tflops.measure_reference(cupy_like, size=8, sleep=slept.append)
    assert skipped.runs == () and "PyTorch" in (skipped.skipped or "")


def test_missing_backend_message_names_what_to_install() -> None:
    def nothing(name: str) -> object:
        raise ImportError(name)

    with pytest.raises(tflops.BackendMissingError) as info:
        tflops.load_backend(importer=nothing)
    message = str(info.value)
    assert "pip install torch" in message
    assert "cupy" in message
    with pytest.raises(ValueError, match="unknown backend"):
        tflops.load_backend("jax", importer=nothing)


def test_a_dtype_that_dies_partway_is_failed_with_why_and_the_others_still_measure() -> None:
    """A run that dies partway is "failed", with the error, never "not measured": torch's
    out-of-memory error in the second dtype (the text torch prints), the first one kept."""
    from datetime import UTC, datetime

    clock = FakeClock()
    backend, _ = fake_backend(0.002, clock)
    real = backend.time_products

    def time_products(product: Any, k: int) -> float:
        if "fp32" in calls:
            raise RuntimeError(
                "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.72 GiB total capacity)\nmore"
            )
        return real(product, k)

    calls: list[str] = []
    prepare = backend.prepare

    @contextmanager
    def tracking(dtype: str, n: int) -> Iterator[Any]:
        calls.append(dtype)
        with prepare(dtype, n) as p:
            yield p

    backend = Backend(
        name=backend.name,
        device_name=backend.device_name,
        skip_reason=lambda d: None,
        prepare=tracking,
        synchronize=backend.synchronize,
        time_products=time_products,
    )
    out = tflops.measure(
        backend,
        size=64,
        iters=5,
        dtypes=["fp16", "fp32"],
        warmup=1,
        repeats=1,
        burst_iters=2,
        rest_seconds=0.0,
        sustained_seconds=0.05,
        settle_seconds=0.01,
        clock=clock,
        sleep=lambda s: None,
    )
    assert out["fp16"].runs and out["fp16"].failed is None
    assert out["fp32"].failed == (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.72 GiB total capacity)"
    )
    doc = tflops.assemble_result(
        gpu="NVIDIA H200",
        driver="580.159.04",
        backend="fake",
        size=64,
        iters=5,
        warmup=1,
        timings=out,
        measured_at=datetime(2026, 12, 1, tzinfo=UTC),
    )
    assert doc["results"]["fp32"]["tflops"] is None and doc["results"]["fp32"]["failed"].startswith(
        "RuntimeError"
    )
    assert doc["notes"]["fp32"].startswith("failed: RuntimeError: CUDA out of memory")
    assert doc["failed"] == {"fp32": out["fp32"].failed}
    assert "failed" not in doc["results"]["fp16"]
