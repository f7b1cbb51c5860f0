"""The NVML binding (``pynvml``, PyPI ``nvidia-ml-py``): loading it, a session, one call with
its failure as a finding.

NVML is the library nvidia-smi itself is built on (``libnvidia-ml.so.1``, installed with the
driver); ``pynvml`` is NVIDIA's ctypes binding for it, pinned in ``requirements.txt``.
Everything takes the ``pynvml`` module as an argument (``nv``), so tests pass a fake with the
same functions; :func:`load_pynvml` imports the real one. Failures raise
:class:`NvmlUnavailable`, whose :class:`~gpulab.host.preflight.Finding` names the cause and the
first fix, as the nvidia-smi probe does. The facts read through it: :mod:`gpulab.host.nvml_facts`
(GPUs, driver, CUDA) and :mod:`gpulab.host.topology_probe` (links).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Final

from gpulab.core.errors import GpuLabError
from gpulab.host.preflight import Finding

CHECK_NVML: Final = "nvml"
#: The pinned binding (``requirements.txt``).
PYNVML_REQUIREMENT: Final = "nvidia-ml-py==13.615.71"
SOURCE: Final = "nvml"

# NVML_ERROR_* codes (nvml.h; pynvml defines the same numbers).
NOT_SUPPORTED: Final = 3
_NO_PERMISSION: Final = 4
_DRIVER_NOT_LOADED: Final = 9
_LIBRARY_NOT_FOUND: Final = 12
_FUNCTION_NOT_FOUND: Final = 13
_GPU_IS_LOST: Final = 15
_LIB_RM_VERSION_MISMATCH: Final = 18

_DRIVER_FIX: Final = (
    "install the NVIDIA driver on the host (the lab never installs it; the operator runs with "
    "driver.enabled=false), then check that `nvidia-smi` runs"
)
#: code -> (cause, first fix)
_CAUSES: Final[dict[int, tuple[str, str]]] = {
    _LIBRARY_NOT_FOUND: (
        "libnvidia-ml.so.1 (NVML, part of the NVIDIA driver) cannot be loaded: no driver here, "
        "or its libraries are not on the loader path",
        _DRIVER_FIX,
    ),
    _DRIVER_NOT_LOADED: (
        "the NVIDIA kernel driver is not loaded",
        "load it (`sudo modprobe nvidia`) or reboot after a driver install; `nvidia-smi` must run",
    ),
    _NO_PERMISSION: (
        "no permission to open the GPU device files (/dev/nvidia*)",
        "run as root or as a user allowed to open /dev/nvidia* (see `ls -l /dev/nvidia*`)",
    ),
    _LIB_RM_VERSION_MISMATCH: (
        "the NVML library and the loaded kernel driver are of different versions (the driver "
        "was upgraded without a reboot)",
        "reboot the host (or unload and reload the nvidia kernel modules)",
    ),
    _GPU_IS_LOST: (
        "a GPU has fallen off the bus (NVML: GPU is lost)",
        "check `dmesg` for Xid errors and reset or reboot the host",
    ),
    _FUNCTION_NOT_FOUND: (
        "the driver's NVML lacks a function this binding calls (driver older than the binding)",
        "update the NVIDIA driver, or rely on nvidia-smi (the probe falls back to it)",
    ),
}


class NvmlUnavailable(GpuLabError, RuntimeError):
    """NVML could not give the facts; ``finding`` holds the cause and the first fix."""

    def __init__(self, finding: Finding) -> None:
        self.finding = finding
        super().__init__(f"{finding.message}; fix: {finding.fix}")


def load_pynvml(importer: Callable[[str], Any] = importlib.import_module) -> Any:
    """Import and return ``pynvml``.

    Raises:
        NvmlUnavailable: the binding is not installed (fix: install the pinned
            ``nvidia-ml-py``).
    """
    try:
        return importer("pynvml")
    except ImportError as exc:
        raise NvmlUnavailable(
            Finding(
                CHECK_NVML,
                False,
                f"the NVML binding pynvml is not importable ({exc})",
                f"`python -m pip install {PYNVML_REQUIREMENT}` (it is in requirements.txt)",
            )
        ) from exc


def error_code(exc: BaseException) -> int | None:
    """The NVML_ERROR_* code of a ``pynvml.NVMLError`` (its ``value``), else None."""
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def finding_for(exc: BaseException, during: str) -> Finding:
    """A failed :class:`Finding` for an NVML error raised by ``during`` (a call's name).

    Known codes (library not found, driver not loaded, no permission, version mismatch, GPU
    lost, function not found) get their cause and first fix; others quote NVML's message.
    """
    code = error_code(exc)
    cause, fix = _CAUSES.get(
        code if code is not None else -1,
        (
            f"NVML failed: {exc}",
            "run `nvidia-smi`: if it fails too, fix the driver first; if it works, the probe "
            "reads it instead",
        ),
    )
    return Finding(CHECK_NVML, False, f"{during}: {cause} (NVML error {code}: {exc})", fix)


@contextmanager
def session(nv: Any) -> Iterator[Any]:
    """``nvmlInit()`` ... ``nvmlShutdown()`` around a block; yields ``nv``.

    Raises:
        NvmlUnavailable: ``nvmlInit`` failed (cause and fix from :func:`finding_for`).
    """
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise NvmlUnavailable(finding_for(exc, "nvmlInit")) from exc
    try:
        yield nv
    finally:
        with suppress(nv.NVMLError):
            nv.nvmlShutdown()


def text(value: Any) -> str:
    """NVML strings come as ``str`` or, from ctypes structure fields, ``bytes``: always str."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def cuda_version_text(version: int) -> str:
    """``nvmlSystemGetCudaDriverVersion_v2`` form to ``"X.Y"``: 13000 -> "13.0", 12040 -> "12.4".

    Raises ``ValueError`` for a non-positive value.
    """
    if version <= 0:
        raise ValueError(f"CUDA driver version must be > 0, got {version}")
    return f"{version // 1000}.{(version % 1000) // 10}"


def mig_word(mode: int) -> str:
    """NVML MIG mode (``NVML_DEVICE_MIG_ENABLE`` 1 / ``_DISABLE`` 0) in nvidia-smi's words.

    Raises ``ValueError`` for another value.
    """
    words = {0: "Disabled", 1: "Enabled"}
    if mode not in words:
        raise ValueError(f"unknown NVML MIG mode {mode!r} (expected 0 or 1)")
    return words[mode]


def call(nv: Any, during: str, fn: Callable[..., Any], *args: Any, optional: bool = False) -> Any:
    """Return ``fn(*args)``, one NVML call. ``Not Supported`` gives None when ``optional``;
    other errors raise.

    Raises:
        NvmlUnavailable: the call failed (cause and fix from :func:`finding_for`).
    """
    try:
        return fn(*args)
    except nv.NVMLError as exc:
        if optional and error_code(exc) == NOT_SUPPORTED:
            return None
        raise NvmlUnavailable(finding_for(exc, during)) from exc


def bitmask_ranges(words: Sequence[int], bits_per_word: int = 64) -> tuple[tuple[int, int], ...]:
    """Set bits of an NVML affinity mask (array of 64-bit words, word 0 = bits 0-63) as ranges.

    ``[0xFFFF]`` -> ``((0, 15),)``; ``[0b1011]`` -> ``((0, 1), (3, 3))``. Used for CPU sets
    (``nvmlDeviceGetCpuAffinity``) and NUMA node sets (``nvmlDeviceGetMemoryAffinity``).
    """
    bits = [
        w * bits_per_word + b
        for w, word in enumerate(words)
        for b in range(bits_per_word)
        if int(word) >> b & 1
    ]
    ranges: list[tuple[int, int]] = []
    for bit in bits:
        if ranges and ranges[-1][1] == bit - 1:
            ranges[-1] = (ranges[-1][0], bit)
        else:
            ranges.append((bit, bit))
    return tuple(ranges)
