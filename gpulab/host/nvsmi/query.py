"""``nvidia-smi --query-gpu=... --format=csv`` output into :class:`GpuInfo`, and the mixed-model
warning over those GPUs.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gpulab.host.nvsmi.header import NvidiaSmiParseError

#: Fields asked of ``nvidia-smi --query-gpu``, in column order. ``compute_cap`` is left out on
#: purpose: R470-era drivers reject it and the whole query then fails. So are the MIG fields,
#: which drivers older than R450 do not know: they are asked separately (:data:`MIG_FIELDS`).
QUERY_FIELDS: Final[tuple[str, ...]] = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "memory.total",
    "pci.bus_id",
)

#: Fields of the separate MIG query (:func:`mig_query_command`), in column order. A driver
#: that does not know one of them fails this query alone (``Field "mig.mode.current" is not a
#: valid field to query.``, exit 2), and the probe then reports the MIG mode as unknown.
MIG_FIELDS: Final[tuple[str, ...]] = ("index", "pci.bus_id", "mig.mode.current", "mig.mode.pending")

# Cell values nvidia-smi prints when it has no value for a field.
_NOT_AVAILABLE: Final = frozenset({"[N/A]", "[Not Supported]", "N/A", ""})
#: Cell values nvidia-smi prints when it could not read a field: the query failed for that
#: field (``[Unknown Error]``: enkore/i3pystatus#850, Quake4/MindMiner#627), the table's
#: ``ERR!`` (NVIDIA/open-gpu-kernel-modules#1193), a GPU that fell off the bus or needs a
#: reset, or no permission. Never a value: the field is recorded as unreadable
#: (:attr:`GpuInfo.unreadable`), with what nvidia-smi printed.
UNREADABLE: Final = frozenset(
    {
        "[Unknown Error]",
        "ERR!",
        "[ERR!]",
        "[GPU requires reset]",
        "[Insufficient Permissions]",
        "[GPU is lost]",
    }
)


@dataclass(frozen=True)
class GpuInfo:
    """One physical GPU as ``nvidia-smi`` reports it (MIG instances are not GPUs).

    ``memory_total_mib`` is in MiB. ``pci_bus_id`` is nvidia-smi's form, e.g.
    ``"00000000:00:06.0"``. ``mig_mode`` and ``mig_mode_pending`` are the current and pending
    MIG mode as nvidia-smi spells them, ``"Enabled"`` or ``"Disabled"`` (NVML's
    ``nvmlDeviceGetMigMode`` is mapped to the same words). Optional fields are ``None`` when the
    source did not carry them or nvidia-smi printed ``[N/A]`` / ``[Not Supported]`` (a GPU
    without MIG, e.g. an L4 or an RTX card).
    """

    index: int
    name: str
    uuid: str | None
    driver_version: str | None
    memory_total_mib: int | None
    pci_bus_id: str | None
    compute_cap: str | None = None
    mig_mode: str | None = None
    mig_mode_pending: str | None = None
    #: Fields nvidia-smi could not read, query name -> what it printed (:data:`UNREADABLE`,
    #: e.g. ``{"memory.total": "[Unknown Error]"}``); their values above are None (a name
    #: ``""``).
    unreadable: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        """Return the per-GPU shape of the ``hostGpus`` output (``gpulab.core.outputs.HOST_GPUS``).

        Keys: ``index``, ``name``, ``uuid``, ``memoryMiB``, ``pciBusId``, ``computeCap``,
        ``migMode``, ``migModePending``, ``driverVersion``; missing values are ``None``; and
        ``unreadable`` (field -> what nvidia-smi printed) only when a field was unreadable.
        """
        extra: dict[str, object] = {"unreadable": dict(self.unreadable)} if self.unreadable else {}
        return {
            **extra,
            "index": self.index,
            "name": self.name,
            "uuid": self.uuid,
            "memoryMiB": self.memory_total_mib,
            "pciBusId": self.pci_bus_id,
            "computeCap": self.compute_cap,
            "migMode": self.mig_mode,
            "migModePending": self.mig_mode_pending,
            "driverVersion": self.driver_version,
        }


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
    return None if value in _NOT_AVAILABLE or value in UNREADABLE else value


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
      except ``compute_cap``, ``mig.mode.current`` and ``mig.mode.pending``, which fill
      :class:`GpuInfo`.

    Cells ``[N/A]``, ``[Not Supported]``, ``N/A`` and empty cells become ``None``; cells
    nvidia-smi could not read (:data:`UNREADABLE`: ``[Unknown Error]``, ``ERR!``, ...) become
    ``None`` too (a name ``""``) and are listed in :attr:`GpuInfo.unreadable`, as are ``[N/A]``
    and ``[Not Supported]`` in a :data:`QUERY_FIELDS` column (every GPU has those). Names keep
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
        # [N/A] in a field every GPU has (QUERY_FIELDS) is nvidia-smi failing to read it too;
        # in an optional one (compute_cap, the MIG modes) it says the GPU has none.
        unreadable = tuple(
            (col, c.strip())
            for col, c in zip(columns, cells, strict=True)
            if c.strip() in UNREADABLE or (col in QUERY_FIELDS and c.strip() in ("[N/A]", "[Not Supported]"))
        )
        index = values.get("index")
        if index is None or not index.isdigit():
            raise NvidiaSmiParseError(f"GPU index {index!r} is not an integer in row: {row!r}")
        name = values.get("name")
        if name is None and "name" not in dict(unreadable):
            raise NvidiaSmiParseError(f"GPU has no name in row: {row!r}")
        gpus.append(
            GpuInfo(
                index=int(index),
                name=name or "",
                uuid=values.get("uuid"),
                driver_version=values.get("driver_version"),
                memory_total_mib=_memory_mib(values.get("memory.total"), row),
                pci_bus_id=values.get("pci.bus_id"),
                compute_cap=values.get("compute_cap"),
                mig_mode=values.get("mig.mode.current"),
                mig_mode_pending=values.get("mig.mode.pending"),
                unreadable=unreadable,
            )
        )
    return gpus


def mig_query_command() -> list[str]:
    """Return the argv of the separate MIG query, read by :func:`parse_mig_csv`.

    ``["nvidia-smi", "--query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending",
    "--format=csv,noheader,nounits"]``.
    """
    return ["nvidia-smi", f"--query-gpu={','.join(MIG_FIELDS)}", "--format=csv,noheader,nounits"]


@dataclass(frozen=True)
class MigMode:
    """One GPU's MIG mode from :func:`parse_mig_csv`: ``index``, ``pci_bus_id``, ``current`` and
    ``pending`` (``"Enabled"``, ``"Disabled"``, or ``None`` for ``[N/A]``: no MIG on this GPU)."""

    index: int
    pci_bus_id: str | None
    current: str | None
    pending: str | None


_MIG_WORDS: Final = frozenset({"Enabled", "Disabled"})


def parse_mig_csv(text: str) -> list[MigMode]:
    """Parse the output of :func:`mig_query_command` (no header, :data:`MIG_FIELDS` order).

    ``0, 00000000:00:06.0, Disabled, Disabled`` gives ``MigMode(0, "00000000:00:06.0",
    "Disabled", "Disabled")``; ``[N/A]`` cells give ``None``. Raises
    :class:`NvidiaSmiParseError` (quoting the row) on empty input, a row of another width, a
    non-integer index, or a mode other than ``Enabled``/``Disabled``/N/A, e.g. nvidia-smi's
    ``Field "mig.mode.current" is not a valid field to query.`` printed on an old driver.
    """
    rows = [line for line in text.splitlines() if line.strip()]
    if not rows:
        raise NvidiaSmiParseError("empty nvidia-smi MIG query output: no rows")
    modes: list[MigMode] = []
    for row in rows:
        cells = [_cell(c) for c in _split_row(row)]
        if len(cells) != len(MIG_FIELDS):
            raise NvidiaSmiParseError(
                f"expected {len(MIG_FIELDS)} columns ({', '.join(MIG_FIELDS)}), got {len(cells)} "
                f"in row: {row!r}"
            )
        index, bus, current, pending = cells
        if index is None or not index.isdigit():
            raise NvidiaSmiParseError(f"GPU index {index!r} is not an integer in row: {row!r}")
        for mode in (current, pending):
            if mode is not None and mode not in _MIG_WORDS:
                raise NvidiaSmiParseError(f"MIG mode {mode!r} is not Enabled/Disabled in row: {row!r}")
        modes.append(MigMode(int(index), bus, current, pending))
    return modes


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
