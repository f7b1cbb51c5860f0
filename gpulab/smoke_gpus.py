"""The GPUs a Pod saw: the ``nvidia-smi -L`` lines of the smoke Pod's log.

The smoke Pod runs ``nvidia-smi && nvidia-smi -L`` (components/smoke.py): the table (driver
and CUDA versions, :func:`gpulab.nvsmi.parse_header`), then one line per GPU the container
was given, ``GPU 0: NVIDIA H200 (UUID: GPU-3b6b1d3a-...)``, and, under MIG, indented
``MIG 1g.18gb Device 0: (UUID: MIG-...)`` rows (left out here: they are not GPUs). NVIDIA's
nvkind CI checks a kind cluster's GPUs the same way: ``nvidia-smi -L`` in a Pod, compared
with the host's.

Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

import re
from typing import Final

#: One physical GPU line of ``nvidia-smi -L`` (the table's lines start with ``|`` or ``+``).
_GPU_LINE: Final = re.compile(r"^GPU (?P<index>\d+): .+ \(UUID: (?P<uuid>GPU-[0-9A-Fa-f-]+)\)\s*$")

#: One MIG device line of ``nvidia-smi -L`` (indented under its GPU):
#: ``  MIG 1g.18gb     Device  0: (UUID: MIG-...)``.
_MIG_LINE: Final = re.compile(
    r"^MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>MIG-[0-9A-Za-z-]+)\)\s*$"
)

#: The smoke Pod's command: the table first (its header is what the smoke check parses),
#: then the listing; ``&&`` so a failing ``nvidia-smi`` fails the Pod as before.
SMOKE_SCRIPT: Final = "nvidia-smi && nvidia-smi -L"


def gpu_uuids(log: str) -> list[str] | None:
    """The GPU UUIDs listed in ``log`` (``nvidia-smi -L`` lines anywhere in it), in listing
    order, each once: ``["GPU-00000000-0000-4000-8000-000000000000", ...]``; ``None`` when the
    log has no such line (a Pod that ran plain ``nvidia-smi``, or a simulated log without a
    listing): unknown, which is not the same as "no GPU"."""
    return _uuids(log, _GPU_LINE)


def mig_uuids(log: str) -> list[str] | None:
    """The MIG device UUIDs listed in ``log`` (``nvidia-smi -L``'s indented ``MIG ... Device N:``
    lines), in listing order, each once; ``None`` when it lists none."""
    return _uuids(log, _MIG_LINE)


def _uuids(log: str, pattern: re.Pattern[str]) -> list[str] | None:
    """The ``uuid`` groups of the lines of ``log`` that ``pattern`` matches (stripped), each once."""
    found: list[str] = []
    for line in log.splitlines():
        m = pattern.match(line.strip())
        if m and m.group("uuid") not in found:
            found.append(m.group("uuid"))
    return found or None
