"""Clock and power sampling for :mod:`gpulab.tflops`: what the board ran at while it was timed.

A sampler runs beside the timed products and records, with host timestamps
(:func:`time.perf_counter`), the SM clock in MHz and the board power in W. Sources, first that
works:

* **NVML** (``pynvml``, PyPI ``nvidia-ml-py``) polled in a thread every ``interval_s``
  (default 10 ms): ``nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM)``, ``nvmlDeviceGetPowerUsage``
  (mW; on Hopper a running average, about the last second), the instantaneous power field
  ``NVML_FI_DEV_POWER_INSTANT`` where the driver answers it, and the clock event reasons
  bitmask (``nvmlDeviceGetCurrentClocksEventReasons``: SW power cap, thermal slowdown, ...);
* **nvidia-smi** ``--query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100``
  read line by line in a thread (a line is stamped when it arrives);
* neither: no samples; the summaries say so (``source: null``).

Imports only the standard library at module level, like :mod:`gpulab.tflops.measure`: the
benchmark Pod ships this module beside it.
"""

from __future__ import annotations

import importlib
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

#: Clock event reason bits (NVML ``nvmlClocksEventReason*``) and the names the JSON uses.
REASON_BITS: Final[tuple[tuple[int, str], ...]] = (
    (0x1, "gpu-idle"),
    (0x2, "applications-clocks-setting"),
    (0x4, "sw-power-cap"),
    (0x8, "hw-slowdown"),
    (0x10, "sync-boost"),
    (0x20, "sw-thermal-slowdown"),
    (0x40, "hw-thermal-slowdown"),
    (0x80, "hw-power-brake-slowdown"),
    (0x100, "display-clock-setting"),
)
_NVML_CLOCK_SM: Final = 1
_NVML_FI_DEV_POWER_INSTANT: Final = 186


@dataclass(frozen=True)
class Sample:
    """One reading: ``t`` host seconds (``time.perf_counter``), ``sm_mhz`` SM clock in MHz,
    ``power_w`` board power in W (NVML's running average, or nvidia-smi's ``power.draw``),
    ``power_instant_w`` instantaneous board power in W (NVML only, None where not answered),
    ``reasons`` the clock event reasons bitmask (NVML only) and ``temp_c`` the GPU
    temperature in degrees C (NVML only)."""

    t: float
    sm_mhz: int | None
    power_w: float | None
    power_instant_w: float | None = None
    reasons: int | None = None
    temp_c: int | None = None


class Sampler(Protocol):
    """Start, then stop and take the samples. ``source`` names where they come from."""

    source: str | None

    def start(self) -> None: ...

    def stop(self) -> list[Sample]: ...


class NullSampler:
    """No clock source: no samples."""

    source: str | None = None

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> list[Sample]:
        """Return no samples."""
        return []


class NvmlSampler:
    """Poll NVML in a daemon thread every ``interval_s`` seconds for device ``device``.

    ``nvml`` is the ``pynvml`` module (or a fake with the same functions); NVML is
    initialised in :meth:`start` and shut down in :meth:`stop`. A reading NVML refuses
    (``Not Supported``) is ``None``. Raises what ``nvmlInit`` raises (the caller falls back).
    """

    def __init__(
        self,
        nvml: Any,
        device: int = 0,
        interval_s: float = 0.01,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.nvml = nvml
        self.device = device
        self.interval_s = interval_s
        self.clock = clock
        version = getattr(nvml, "__version__", None) or _dist_version("nvidia-ml-py")
        self.source: str | None = f"nvml (pynvml {version or '?'}) every {interval_s * 1e3:g} ms"
        self._samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._instant_ok = True

    def _read(self, handle: Any) -> Sample:
        nv = self.nvml
        t = self.clock()
        sm = _try(lambda: int(nv.nvmlDeviceGetClockInfo(handle, _NVML_CLOCK_SM)))
        power = _try(lambda: float(nv.nvmlDeviceGetPowerUsage(handle)) / 1e3)
        instant = None
        if self._instant_ok:
            instant = _try(lambda: _instant_power(nv, handle))
            self._instant_ok = instant is not None
        reasons = _try(lambda: int(nv.nvmlDeviceGetCurrentClocksEventReasons(handle)))
        temp = _try(lambda: int(nv.nvmlDeviceGetTemperature(handle, 0)))
        return Sample(t, sm, power, instant, reasons, temp)

    def start(self) -> None:
        """Initialise NVML and start polling."""
        self.nvml.nvmlInit()
        handle = self.nvml.nvmlDeviceGetHandleByIndex(self.device)
        self._samples.append(self._read(handle))

        def loop() -> None:
            while not self._stop.wait(self.interval_s):
                self._samples.append(self._read(handle))

        self._thread = threading.Thread(target=loop, name="gpulab-nvml-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> list[Sample]:
        """Stop polling, shut NVML down, and return the samples in time order."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        _try(self.nvml.nvmlShutdown)
        return list(self._samples)


class SmiSampler:
    """Read ``nvidia-smi --query-gpu=clocks.sm,power.draw ... -lms <interval>`` in a thread.

    ``popen`` (tests) replaces :class:`subprocess.Popen`; it must return an object with
    ``stdout`` (an iterable of text lines), ``terminate()`` and ``wait(timeout)``.
    """

    def __init__(
        self,
        smi: str = "nvidia-smi",
        device: int = 0,
        interval_ms: int = 100,
        clock: Callable[[], float] = time.perf_counter,
        popen: Callable[..., Any] = subprocess.Popen,
    ) -> None:
        self.argv = [
            smi,
            f"--id={device}",
            "--query-gpu=clocks.sm,power.draw",
            "--format=csv,noheader,nounits",
            f"-lms={interval_ms}",
        ]
        self.clock = clock
        self.popen = popen
        self.source: str | None = f"nvidia-smi -lms {interval_ms}"
        self._samples: list[Sample] = []
        self._proc: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start nvidia-smi and its reader thread."""
        self._proc = self.popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1
        )

        def loop() -> None:
            for line in self._proc.stdout:
                sample = parse_smi_line(line, self.clock())
                if sample is not None:
                    self._samples.append(sample)

        self._thread = threading.Thread(target=loop, name="gpulab-smi-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> list[Sample]:
        """Stop nvidia-smi and return the samples in time order."""
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return list(self._samples)


def parse_smi_line(line: str, t: float) -> Sample | None:
    """Parse one ``clocks.sm, power.draw`` line (``"1980, 689.52"``; units optional) into a
    :class:`Sample` stamped ``t``; None for a blank line or one that is not two numbers
    (``[N/A]`` fields become None, a line with neither number is dropped)."""
    cells = [c.strip().split(" ")[0] for c in line.strip().split(",")]
    if len(cells) != 2:
        return None
    sm = int(float(cells[0])) if _is_number(cells[0]) else None
    power = float(cells[1]) if _is_number(cells[1]) else None
    if sm is None and power is None:
        return None
    return Sample(t, sm, power)


def open_sampler(
    device: int = 0,
    *,
    interval_s: float = 0.01,
    importer: Callable[[str], Any] = importlib.import_module,
    which: Callable[[str], str | None] = shutil.which,
) -> Sampler:
    """The first sampler that starts: NVML, else nvidia-smi, else :class:`NullSampler`.

    The returned sampler is already started; call ``stop()`` to end it.
    """
    try:
        nvml_sampler = NvmlSampler(importer("pynvml"), device, interval_s)
        nvml_sampler.start()
        return nvml_sampler
    except Exception:  # pynvml missing or NVML failing: try nvidia-smi
        pass
    smi = which("nvidia-smi")
    if smi is not None:
        try:
            smi_sampler = SmiSampler(smi, device, max(int(interval_s * 1e3), 100))
            smi_sampler.start()
            return smi_sampler
        except OSError:
            pass
    null = NullSampler()
    null.start()
    return null


def _stats(values: Sequence[float], digits: int) -> dict[str, float] | None:
    """``{"median", "min", "max"}`` rounded to ``digits`` (integers when 0); None when empty."""
    if not values:
        return None

    def r(x: float) -> float:
        return round(x) if digits == 0 else round(x, digits)

    return {"median": r(statistics.median(values)), "min": r(min(values)), "max": r(max(values))}


def summarize(samples: Sequence[Sample], t0: float, t1: float) -> dict[str, Any]:
    """Summarise the samples taken in ``[t0, t1]`` (host seconds); see :func:`summarize_windows`."""
    return summarize_windows(samples, [(t0, t1)])


def summarize_windows(samples: Sequence[Sample], windows: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Summarise the samples taken inside any of ``windows`` (``(t0, t1)`` host seconds).

    Returns ``{"samples": n, "smClockMHz": {"median", "min", "max"} | None, "powerW": ...,
    "powerSource": "instant" | "average" | None, "powerAverageW": ..., "tempC": ...,
    "clockEventReasons": [names seen]}``. ``powerW`` is the instantaneous board power where NVML
    answers it, else the averaged reading (NVML's, or nvidia-smi's ``power.draw``); both lag
    the load by tens of milliseconds or more, so a run of a few milliseconds reads low. A
    window with no sample inside (a run shorter than the sampling interval) takes the one
    sample nearest its middle; ``"nearestSampleMs"`` is then the largest such distance.
    """
    inside: list[Sample] = []
    nearest_ms: list[float] = []
    for t0, t1 in windows:
        got = [s for s in samples if t0 <= s.t <= t1]
        if not got and samples:
            mid = (t0 + t1) / 2
            near = min(samples, key=lambda s: abs(s.t - mid))
            got = [near]
            nearest_ms.append(abs(near.t - mid) * 1e3)
        inside.extend(got)
    out: dict[str, Any] = {"samples": len(inside) - len(nearest_ms)}
    if nearest_ms:
        out["nearestSampleMs"] = round(max(nearest_ms), 1)
    instant = [s.power_instant_w for s in inside if s.power_instant_w is not None]
    average = [s.power_w for s in inside if s.power_w is not None]
    out["smClockMHz"] = _stats([s.sm_mhz for s in inside if s.sm_mhz is not None], 0)
    out["powerW"] = _stats(instant or average, 1)
    out["powerSource"] = "instant" if instant else ("average" if average else None)
    out["powerAverageW"] = _stats(average, 1)
    out["tempC"] = _stats([s.temp_c for s in inside if s.temp_c is not None], 0)
    mask = 0
    for s in inside:
        mask |= s.reasons or 0
    out["clockEventReasons"] = [name for bit, name in REASON_BITS if mask & bit]
    return out


def _instant_power(nv: Any, handle: Any) -> float | None:
    values = nv.nvmlDeviceGetFieldValues(handle, [_NVML_FI_DEV_POWER_INSTANT])
    v = values[0]
    if getattr(v, "nvmlReturn", 0) != 0:
        return None
    # NVML_VALUE_TYPE_*: 0 double, 1 unsigned int, 2 unsigned long, 3 unsigned long long,
    # 4 signed long long, 5 signed int, 6 unsigned short. The field is in mW.
    member = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    return float(getattr(v.value, member.get(int(v.valueType), "uiVal"))) / 1e3


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # a reading the driver refuses is simply absent
        return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _dist_version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None
