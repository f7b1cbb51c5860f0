"""Parsers for ``nvidia-smi`` output: the header, the query CSV, ``-L`` and the plain table.

Pure functions over text captured from a host or from a smoke Pod's log; nothing here runs a
command. Every parser either returns facts it read or raises :class:`NvidiaSmiParseError`
quoting the line it could not read: it never returns an empty or guessed value.

Formats handled (see ``tests/data/nvidia-smi/`` for real captures from H200 hosts):

* plain table (``nvidia-smi``): header box ``Driver Version: X   CUDA Version: Y``;
  drivers 610 and newer print ``KMD Version: X   CUDA UMD Version: Y``; very old ones
  (e.g. 384.90) print no CUDA field at all;
* ``nvidia-smi -q``: ``Driver Version : X`` and ``CUDA Version : Y`` on separate lines;
* ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``;
* ``nvidia-smi -L``: ``GPU 0: NVIDIA H200 (UUID: GPU-...)`` plus indented MIG rows.

Units: memory is MiB (``nvidia-smi`` reports ``memory.total`` in MiB).
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "QUERY_FIELDS",
    "GpuInfo",
    "MigDevice",
    "NvidiaSmiParseError",
    "SmiHeader",
    "model_warning",
    "parse_header",
    "parse_list",
    "parse_list_mig",
    "parse_query_csv",
    "parse_table",
    "query_command",
]

#: Fields asked of ``nvidia-smi --query-gpu``, in column order. ``compute_cap`` is left out on
#: purpose: R470-era drivers reject it and the whole query then fails.
QUERY_FIELDS: Final[tuple[str, ...]] = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "memory.total",
    "pci.bus_id",
)

# Cell values nvidia-smi prints when it has no value for a field.
_NOT_AVAILABLE: Final = frozenset({"[N/A]", "[Not Supported]", "N/A", ""})

_DRIVER_LABELS: Final = frozenset({"Driver", "KMD"})
_CUDA_LABELS: Final = frozenset({"CUDA", "CUDA UMD"})

# ``<Label> Version: <value>`` (table) or ``<Label> Version   : <value>`` (-q). Label words
# start with a letter, so a preceding version number such as ``NVIDIA-SMI 580.159.04`` never
# becomes part of a label. At most one space after the colon: an empty value must read as
# empty, not as the next field's label.
_FIELD_RE: Final = re.compile(
    r"(?P<label>[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)*) Version[ \t]*:[ \t]?"
    r"(?P<value>[^\s|]*)"
)
_DRIVER_VERSION_RE: Final = re.compile(r"^\d+(?:\.\d+)+$")
_CUDA_VERSION_RE: Final = re.compile(r"^\d+\.\d+$")

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


class NvidiaSmiParseError(ValueError):
    """``nvidia-smi`` output could not be read; the message quotes the offending line."""


@dataclass(frozen=True)
class SmiHeader:
    """Versions from the ``nvidia-smi`` header.

    ``driver_version`` is the kernel driver version, e.g. ``"580.159.04"``. ``cuda_version``
    is the newest CUDA ``"X.Y"`` the driver supports (not an installed toolkit), or ``None``
    when the driver prints no CUDA field (pre-CUDA-field drivers such as 384.90) or prints
    ``N/A`` (no CUDA driver library visible, e.g. a container without the compute capability).
    """

    driver_version: str
    cuda_version: str | None


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as ``nvidia-smi`` reports it (MIG instances are not GPUs).

    ``memory_total_mib`` is in MiB. ``pci_bus_id`` is nvidia-smi's form, e.g.
    ``"00000000:00:06.0"``. Optional fields are ``None`` when the source did not carry them or
    nvidia-smi printed ``[N/A]`` / ``[Not Supported]``.
    """

    index: int
    name: str
    uuid: str | None
    driver_version: str | None
    memory_total_mib: int | None
    pci_bus_id: str | None
    compute_cap: str | None = None
    mig_mode: str | None = None

    def to_json(self) -> dict[str, int | str | None]:
        """Return the per-GPU shape of the ``hostGpus`` output (``gpulab.outputs.HOST_GPUS``).

        Keys: ``index``, ``name``, ``uuid``, ``memoryMiB``, ``pciBusId``, ``computeCap``,
        ``migMode``, ``driverVersion``; missing values are ``None``.
        """
        return {
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "memoryMiB": self.memory_total_mib,
            "pciBusId": self.pci_bus_id,
            "computeCap": self.compute_cap,
            "migMode": self.mig_mode,
            "driverVersion": self.driver_version,
        }


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


# --- header ---------------------------------------------------------------------------


def _first_nonempty_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return None


def _ends_header(stripped: str) -> bool:
    """True for the first line after the header: table column headings or the -q GPU list."""
    if stripped.startswith(("|=", "Attached GPUs")):
        return True
    return stripped.startswith("|") and "Bus-Id" in stripped


def _header_fields(line: str) -> list[tuple[str, str]]:
    return [(m.group("label"), m.group("value")) for m in _FIELD_RE.finditer(line)]


def parse_header(text: str) -> SmiHeader:
    """Read the driver and CUDA versions from ``nvidia-smi`` or ``nvidia-smi -q`` output.

    ``text`` may be a whole smoke Pod log: lines before the header are skipped unless they
    look like a header. The header is found by its labels (``Driver``/``KMD`` ``Version`` and
    ``CUDA``/``CUDA UMD`` ``Version``), not by the ``NVIDIA-SMI`` token. A CUDA field with no
    driver field, outside the table box and the ``-q`` preamble, is taken for an application's
    own output and skipped. When several headers are present (nvidia-smi run twice), the
    first one wins.

    Raises:
        NvidiaSmiParseError: a header-looking line carries a label this parser does not know
            (e.g. ``Version:`` fields with unknown labels in the top box of the table, or a
            top-level ``... Version :`` line in a ``-q`` log), a version value is malformed,
            a CUDA field comes without a driver field, or no header is present at all (the
            message then quotes the first non-empty line, which is usually nvidia-smi's own
            error, e.g. ``NVIDIA-SMI has failed because ...``).
    """
    driver: str | None = None
    cuda: str | None = None
    cuda_seen = False
    header_started = False
    in_q_log = False
    first_line: str | None = None

    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if header_started:
                break
            continue
        if first_line is None:
            first_line = stripped
        if "==NVSMI LOG==" in stripped:
            in_q_log = True
            continue
        if _ends_header(stripped):
            if header_started:
                break
            in_q_log = False
            continue
        fields = _header_fields(line)
        labels = {label for label, _ in fields}
        known = labels & (_DRIVER_LABELS | _CUDA_LABELS)
        is_box = stripped.startswith("|")
        is_q_top = in_q_log and not line[0].isspace()
        if not known:
            # A table header box or a -q preamble line we cannot read is an unknown header
            # format, not noise: guessing would report a wrong version.
            if (is_box and (fields or "NVIDIA-SMI" in stripped)) or (is_q_top and fields):
                raise NvidiaSmiParseError(f"unrecognised nvidia-smi header line: {stripped!r}")
            if header_started:
                break
            continue
        if not header_started and not (is_box or is_q_top) and not labels & _DRIVER_LABELS:
            # A lone "CUDA Version: 12.1" outside the table and the -q preamble, before any
            # driver field, is an application's own print (a smoke Pod log), not nvidia-smi's.
            continue
        if labels - known:
            raise NvidiaSmiParseError(
                f"nvidia-smi header line has unknown labels {sorted(labels - known)}: {stripped!r}"
            )
        header_started = True
        for label, value in fields:
            if label in _DRIVER_LABELS:
                if not _DRIVER_VERSION_RE.match(value):
                    raise NvidiaSmiParseError(
                        f"malformed driver version {value!r} in nvidia-smi header: {stripped!r}"
                    )
                if driver is not None and driver != value:
                    raise NvidiaSmiParseError(
                        f"nvidia-smi header gives two driver versions ({driver!r} and "
                        f"{value!r}): {stripped!r}"
                    )
                driver = value
            else:
                if value == "N/A":
                    parsed_cuda = None
                elif _CUDA_VERSION_RE.match(value):
                    parsed_cuda = value
                else:
                    raise NvidiaSmiParseError(
                        f"malformed CUDA version {value!r} in nvidia-smi header: {stripped!r}"
                    )
                if cuda_seen and cuda != parsed_cuda:
                    raise NvidiaSmiParseError(
                        f"nvidia-smi header gives two CUDA versions ({cuda!r} and "
                        f"{parsed_cuda!r}): {stripped!r}"
                    )
                cuda, cuda_seen = parsed_cuda, True

    if driver is not None:
        return SmiHeader(driver_version=driver, cuda_version=cuda)
    if header_started:
        raise NvidiaSmiParseError(
            f"nvidia-smi header has a CUDA version but no driver version; first line: {first_line!r}"
        )
    raise NvidiaSmiParseError(
        f"no nvidia-smi header (Driver Version / KMD Version) found; first non-empty line: {first_line!r}"
    )


# --- query CSV ------------------------------------------------------------------------


def query_command() -> list[str]:
    """Return the argv that produces what :func:`parse_query_csv` reads fastest.

    ``["nvidia-smi", "--query-gpu=index,name,uuid,driver_version,memory.total,pci.bus_id",
    "--format=csv,noheader,nounits"]``.
    """
    return [
        "nvidia-smi",
        f"--query-gpu={','.join(QUERY_FIELDS)}",
        "--format=csv,noheader,nounits",
    ]


def _cell(value: str) -> str | None:
    value = value.strip()
    return None if value in _NOT_AVAILABLE else value


def _memory_mib(value: str | None, row: str) -> int | None:
    if value is None:
        return None
    m = re.fullmatch(r"(\d+)(?:\s*MiB)?", value)
    if m is None:
        raise NvidiaSmiParseError(f"memory.total {value!r} is not a MiB count in row: {row!r}")
    return int(m.group(1))


def _column_name(header_cell: str) -> str:
    # "memory.total [MiB]" -> "memory.total"
    return re.sub(r"\s*\[[^\]]*\]$", "", header_cell.strip())


def _split_row(line: str) -> list[str]:
    return next(csv.reader([line], skipinitialspace=True))


def parse_query_csv(text: str) -> list[GpuInfo]:
    """Parse ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`` output.

    Two forms are accepted:

    * no header: exactly ``len(QUERY_FIELDS)`` columns in :data:`QUERY_FIELDS` order (what
      :func:`query_command` asks for);
    * with a header row naming the columns, possibly with units (``memory.total [MiB]`` and
      values like ``143771 MiB``); columns may come in any order and extra ones are ignored,
      except ``compute_cap`` and ``mig.mode.current``, which fill :class:`GpuInfo`.

    Cells ``[N/A]``, ``[Not Supported]``, ``N/A`` and empty cells become ``None``. Names keep
    their spaces (rows are split with :mod:`csv`, ``skipinitialspace=True``).

    Returns the GPUs in row order. Raises :class:`NvidiaSmiParseError` on empty input, a row
    whose column count differs from the header's (or from ``QUERY_FIELDS``), a non-integer
    index, a missing name, a header without ``index`` and ``name``, or a memory value that is
    not a MiB count; the message quotes the row.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise NvidiaSmiParseError("empty nvidia-smi --query-gpu output: no rows")

    first = [_column_name(c) for c in _split_row(lines[0])]
    if first and first[0] and not first[0].strip().isdigit() and "index" in first:
        columns = first
        rows = lines[1:]
        if "name" not in columns:
            raise NvidiaSmiParseError(f"query CSV header has no 'name' column: {lines[0]!r}")
        if not rows:
            raise NvidiaSmiParseError(f"query CSV has a header but no GPU rows: {lines[0]!r}")
    else:
        columns = list(QUERY_FIELDS)
        rows = lines

    gpus: list[GpuInfo] = []
    for row in rows:
        cells = _split_row(row)
        if len(cells) != len(columns):
            raise NvidiaSmiParseError(
                f"expected {len(columns)} columns ({', '.join(columns)}), got {len(cells)} in row: {row!r}"
            )
        values = {col: _cell(cell) for col, cell in zip(columns, cells, strict=True)}
        index = values.get("index")
        if index is None or not index.isdigit():
            raise NvidiaSmiParseError(f"GPU index {index!r} is not an integer in row: {row!r}")
        name = values.get("name")
        if name is None:
            raise NvidiaSmiParseError(f"GPU has no name in row: {row!r}")
        gpus.append(
            GpuInfo(
                index=int(index),
                name=name,
                uuid=values.get("uuid"),
                driver_version=values.get("driver_version"),
                memory_total_mib=_memory_mib(values.get("memory.total"), row),
                pci_bus_id=values.get("pci.bus_id"),
                compute_cap=values.get("compute_cap"),
                mig_mode=values.get("mig.mode.current"),
            )
        )
    return gpus


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


# --- mixed models ---------------------------------------------------------------------


def model_warning(gpus: Sequence[GpuInfo]) -> str | None:
    """Warn when the GPUs are of more than one model; ``None`` when they are all alike.

    The device plugin advertises every GPU as the same extended resource,
    ``nvidia.com/gpu``, so the scheduler cannot tell the models apart. The message names each
    model with its count, in order of first appearance, e.g.
    ``"... 2 x NVIDIA H200, 1 x NVIDIA H100 80GB HBM3"``.
    """
    counts = Counter(gpu.name for gpu in gpus)
    if len(counts) <= 1:
        return None
    models = ", ".join(f"{count} x {name}" for name, count in counts.items())
    return (
        f"GPUs of {len(counts)} different models ({models}): nvidia.com/gpu cannot tell them "
        "apart, every GPU is the same resource to the scheduler, so a Pod that requests "
        "nvidia.com/gpu may get any of them"
    )
