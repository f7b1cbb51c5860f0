"""The human-readable listing ``nvidia-smi -L``: its MIG devices, each under its GPU."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gpulab.host.nvsmi.header import NvidiaSmiParseError

_LIST_GPU_RE: Final = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?)(?: \(UUID: (?P<uuid>[^)]+)\))?$")
_LIST_MIG_RE: Final = re.compile(
    r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>[^)]+)\)$"
)


@dataclass(frozen=True)
class MigDevice:
    """A MIG device listed by ``nvidia-smi -L`` under its parent GPU.

    ``gpu_index`` is the parent GPU's index, ``device_index`` the MIG device's index within
    that GPU, ``profile`` e.g. ``"1g.18gb"``, ``uuid`` e.g. ``"MIG-..."``.
    """

    gpu_index: int
    device_index: int
    profile: str
    uuid: str


# --- nvidia-smi -L --------------------------------------------------------------------


def _parse_list_lines(text: str) -> tuple[list[tuple[int, str, str | None]], list[MigDevice]]:
    gpus: list[tuple[int, str, str | None]] = []
    migs: list[MigDevice] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        gpu = _LIST_GPU_RE.match(line.rstrip())
        if gpu is not None:
            gpus.append((int(gpu.group("index")), gpu.group("name"), gpu.group("uuid")))
            continue
        mig = _LIST_MIG_RE.match(line.rstrip())
        if mig is not None:
            if not gpus:
                raise NvidiaSmiParseError(f"MIG device listed before any GPU: {line.strip()!r}")
            migs.append(
                MigDevice(
                    gpu_index=gpus[-1][0],
                    device_index=int(mig.group("index")),
                    profile=mig.group("profile"),
                    uuid=mig.group("uuid"),
                )
            )
            continue
        if line.strip() == "No devices found.":
            continue
        raise NvidiaSmiParseError(f"unrecognised nvidia-smi -L line: {line.strip()!r}")
    return gpus, migs


def parse_list_mig(text: str) -> list[MigDevice]:
    """Parse the MIG rows of ``nvidia-smi -L``, each attached to the GPU listed above it.

    Returns ``[]`` when MIG is off. Raises :class:`NvidiaSmiParseError` on empty input, a line
    of unknown shape (quoted), and a MIG row before any GPU row.
    """
    if not text.strip():
        raise NvidiaSmiParseError("empty nvidia-smi -L output")
    return _parse_list_lines(text)[1]
