"""gpulab.tflops.clocks: the NVML and nvidia-smi samplers (with fakes) and the summaries."""

from __future__ import annotations

import io
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from gpulab.tflops import clocks as tflops_clocks
from gpulab.tflops.clocks import Sample


def fake_pynvml(sm: int = 1980, power_mw: int = 690_000, instant_mw: int | None = 700_000) -> Any:
    def field_values(h: Any, ids: list[int]) -> list[Any]:
        assert ids == [186]  # NVML_FI_DEV_POWER_INSTANT
        if instant_mw is None:
            return [SimpleNamespace(nvmlReturn=3, valueType=1, value=SimpleNamespace(uiVal=0))]
        return [SimpleNamespace(nvmlReturn=0, valueType=1, value=SimpleNamespace(uiVal=instant_mw))]

    return SimpleNamespace(
        __version__="13.615.71",
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetClockInfo=lambda h, t: sm,
        nvmlDeviceGetPowerUsage=lambda h: power_mw,
        nvmlDeviceGetFieldValues=field_values,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4,
        nvmlDeviceGetTemperature=lambda h, s: 59,
    )


def test_nvml_sampler_polls_in_a_thread() -> None:
    nvml = fake_pynvml()
    read, three = [0], threading.Event()

    def temperature(handle: Any, sensor: int) -> int:  # the last reading of each sample
        read[0] += 1
        if read[0] >= 3:
            three.set()
        return 59

    nvml.nvmlDeviceGetTemperature = temperature
    sampler = tflops_clocks.NvmlSampler(nvml, interval_s=0.002)
    sampler.start()
    t0 = time.perf_counter()
    # On the event, not on time: a loaded machine may run the thread late.
    assert three.wait(timeout=30), "the sampler's thread never read three samples"
    samples = sampler.stop()
    assert len(samples) >= 3
    assert samples[-1] == Sample(samples[-1].t, 1980, 690.0, 700.0, 0x4, 59)
    summary = tflops_clocks.summarize(samples, t0, time.perf_counter())
    assert summary["smClockMHz"] == {"median": 1980, "min": 1980, "max": 1980}
    assert summary["powerW"]["median"] == 700.0 and summary["powerSource"] == "instant"
    assert summary["powerAverageW"]["median"] == 690.0
    assert summary["clockEventReasons"] == ["sw-power-cap"]
    assert sampler.source == "nvml (pynvml 13.615.71) every 2 ms"


def test_nvml_sampler_without_instant_power_uses_the_average() -> None:
    sampler = tflops_clocks.NvmlSampler(fake_pynvml(instant_mw=None), interval_s=0.002)
    sampler.start()
    time.sleep(0.01)
    samples = sampler.stop()
    assert all(s.power_instant_w is None for s in samples)
    summary = tflops_clocks.summarize(samples, samples[0].t, samples[-1].t)
    assert summary["powerSource"] == "average" and summary["powerW"]["median"] == 690.0


def test_parse_smi_line() -> None:
    assert tflops_clocks.parse_smi_line("1470, 691.96\n", 5.0) == Sample(5.0, 1470, 691.96)
    assert tflops_clocks.parse_smi_line("1470 MHz, 691.96 W", 5.0) == Sample(5.0, 1470, 691.96)
    assert tflops_clocks.parse_smi_line("[N/A], 80.1", 1.0) == Sample(1.0, None, 80.1)
    assert tflops_clocks.parse_smi_line("[N/A], [N/A]", 1.0) is None
    assert tflops_clocks.parse_smi_line("", 1.0) is None


def test_smi_sampler_reads_lines_as_they_come() -> None:
    started: list[list[str]] = []

    class Proc:
        stdout = io.StringIO("1980, 120.5\n1455, 691.2\nnot a line\n")

        def terminate(self) -> None:
            pass

        def wait(self, timeout: float) -> int:
            return 0

    def popen(argv: list[str], **_: Any) -> Proc:
        started.append(argv)
        return Proc()

    ticks = iter([1.0, 2.0, 3.0])
    sampler = tflops_clocks.SmiSampler(
        "/usr/bin/nvidia-smi", device=1, clock=lambda: next(ticks), popen=popen
    )
    sampler.start()
    samples = sampler.stop()
    assert started == [
        [
            "/usr/bin/nvidia-smi",
            "--id=1",
            "--query-gpu=clocks.sm,power.draw",
            "--format=csv,noheader,nounits",
            "-lms=100",
        ]
    ]
    assert samples == [Sample(1.0, 1980, 120.5), Sample(2.0, 1455, 691.2)]
    assert sampler.source == "nvidia-smi -lms 100"


def test_open_sampler_falls_back_to_nvidia_smi_then_to_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_module(name: str) -> Any:
        raise ImportError(name)

    null = tflops_clocks.open_sampler(importer=no_module, which=lambda name: None)
    assert null.source is None and null.stop() == []
    monkeypatch.setattr(tflops_clocks.SmiSampler, "start", lambda self: None)
    smi = tflops_clocks.open_sampler(importer=no_module, which=lambda name: "/usr/bin/nvidia-smi")
    assert isinstance(smi, tflops_clocks.SmiSampler)
    nv = tflops_clocks.open_sampler(importer=lambda name: fake_pynvml(), which=lambda name: None)
    assert isinstance(nv, tflops_clocks.NvmlSampler)
    assert nv.stop()


def test_summarize_windows_takes_the_nearest_sample_for_a_short_run() -> None:
    samples = [Sample(0.0, 345, 80.0), Sample(0.010, 1980, 120.0), Sample(0.020, 1980, 121.0)]
    # a 4 ms run between two samples
    summary = tflops_clocks.summarize_windows(samples, [(0.012, 0.016)])
    assert summary["samples"] == 0 and summary["nearestSampleMs"] == 4.0
    assert summary["smClockMHz"]["median"] == 1980 and summary["powerSource"] == "average"
    both = tflops_clocks.summarize_windows(samples, [(0.0, 0.011), (0.019, 0.021)])
    assert both["samples"] == 3 and both["smClockMHz"] == {"median": 1980, "min": 345, "max": 1980}
    assert tflops_clocks.summarize_windows([], [(0.0, 1.0)])["smClockMHz"] is None
