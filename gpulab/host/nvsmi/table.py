"""The human-readable listings: ``nvidia-smi -L`` (GPUs and MIG devices) and the plain table."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gpulab.host.nvsmi.header import NvidiaSmiParseError, SmiHeader, _first_nonempty_line, parse_header
from gpulab.host.nvsmi.query import GpuInfo

_LIST_GPU_RE: Final = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?)(?: \(UUID: (?P<uuid>[^)]+)\))?$")
_LIST_MIG_RE: Final = re.compile(
    r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>[^)]+)\)$"
)

# First line of a GPU cell in the plain table: index, name, persistence mode | bus id, display.
_TABLE_GPU_RE: Final = re.compile(
    r"^\|\s*(?P<index>\d+)\s+(?P<name>.+?)\s+(?:On|Off|N/A|WDDM|TCC)\s*\|"
    r"\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+\S+\s*\|"
)
_TABLE_MEMORY_RE: Final = re.compile(r"(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB")


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


def parse_list(text: str) -> list[tuple[int, str, str | None]]:
    """Parse ``nvidia-smi -L`` into physical GPUs: ``[(index, name, uuid | None), ...]``.

    MIG rows (``  MIG 1g.18gb  Device  0: (UUID: MIG-...)``) are not GPUs and are left out;
    read them with :func:`parse_list_mig`. ``No devices found.`` yields ``[]``.

    Raises :class:`NvidiaSmiParseError` on empty input or a line of unknown shape (quoted).
    """
    if not text.strip():
        raise NvidiaSmiParseError("empty nvidia-smi -L output")
    return _parse_list_lines(text)[0]


def parse_list_mig(text: str) -> list[MigDevice]:
    """Parse the MIG rows of ``nvidia-smi -L``, each attached to the GPU listed above it.

    Returns ``[]`` when MIG is off. Raises :class:`NvidiaSmiParseError` like
    :func:`parse_list`, and when a MIG row comes before any GPU row.
    """
    if not text.strip():
        raise NvidiaSmiParseError("empty nvidia-smi -L output")
    return _parse_list_lines(text)[1]


# --- plain table ----------------------------------------------------------------------


def parse_table(text: str) -> tuple[SmiHeader, list[GpuInfo]]:
    """Parse the plain ``nvidia-smi`` table into its header and physical GPUs.

    Per GPU: index, name, PCI bus id, total memory in MiB (from ``0MiB / 143771MiB``), MIG
    mode (the ``MIG M.`` cell, when present) and the header's driver version; ``uuid`` is
    ``None`` (the table does not show it). Only the first GPU block is read, so the
    ``MIG devices`` and ``Processes`` boxes below it never yield GPUs. Names in the table can
    be cut short by nvidia-smi's column width; prefer :func:`parse_query_csv` for names.

    Raises :class:`NvidiaSmiParseError` when the header is unreadable (see
    :func:`parse_header`), the GPU column headings are absent, or a GPU cell's first line is
    not ``| <index> <name> <persistence> | <bus id> <display> |`` (quoted).
    """
    header = parse_header(text)
    lines = text.splitlines()

    start = None
    for i, line in enumerate(lines):
        if line.strip().startswith("|") and "Bus-Id" in line:
            start = i
            break
    if start is None:
        raise NvidiaSmiParseError(
            f"no GPU table (column headings with 'Bus-Id') in nvidia-smi output; first line: "
            f"{_first_nonempty_line(text)!r}"
        )

    # Each GPU cell sits between separator lines (``|===`` after the headings, ``+---``
    # between GPUs); the block ends at the first line outside the table.
    cells: list[list[str]] = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if not stripped.startswith(("|", "+")):
            break
        if "MIG devices:" in stripped or "Processes:" in stripped:
            break
        if stripped.startswith(("|=", "+")):
            cells.append([])
        elif cells:
            cells[-1].append(stripped)
    return header, [_table_gpu(cell, header.driver_version) for cell in cells if cell]


def _table_gpu(cell: list[str], driver_version: str) -> GpuInfo:
    m = _TABLE_GPU_RE.match(cell[0])
    if m is None:
        raise NvidiaSmiParseError(f"unrecognised GPU row in nvidia-smi table: {cell[0]!r}")
    memory: int | None = None
    mig_mode: str | None = None
    for line in cell[1:]:
        mem = _TABLE_MEMORY_RE.search(line)
        if mem is not None and memory is None:
            memory = int(mem.group("total"))
        last = line.strip("|").split("|")[-1].strip()
        if last in ("Enabled", "Disabled"):
            mig_mode = last
    return GpuInfo(
        index=int(m.group("index")),
        name=m.group("name"),
        uuid=None,
        driver_version=driver_version,
        memory_total_mib=memory,
        pci_bus_id=m.group("bus"),
        mig_mode=mig_mode,
    )
