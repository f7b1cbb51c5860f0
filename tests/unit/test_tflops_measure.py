"""gpulab.tflops_measure with a fake backend: warm-up, timed runs, missing backends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gpulab import tflops
from gpulab.tflops import Backend, Timing


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


def test_warm_up_runs_until_count_and_time_are_both_reached() -> None:
    clock = FakeClock()
    backend, log = fake_backend(0.1, clock)
    with backend.prepare("fp16", 8) as product:
        done = tflops.warm_up(product, backend.synchronize, count=2, seconds=0.5, clock=clock)
    assert done == 6  # batches of 2 until 0.5 s passed
    assert log.count("sync") == 3
    with backend.prepare("fp16", 8) as product:
        assert tflops.warm_up(product, backend.synchronize, count=0, seconds=0, clock=clock) == 0


def test_measure_skips_times_and_releases() -> None:
    clock = FakeClock()
    backend, log = fake_backend(0.002, clock)
    out = tflops.measure(
        backend,
        size=64,
        iters=5,
        dtypes=["bf16", "fp16"],
        warmup=3,
        warmup_seconds=0.0,
        repeats=2,
        clock=clock,
    )
    assert out["bf16"] == Timing(skipped="no bf16 here")
    assert out["fp16"].runs == pytest.approx((0.002, 0.002))
    assert log[0] == "prepare fp16 64"
    assert log[-1] == "release fp16"
    assert log.count("product") == 3 + 2 * 5


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
