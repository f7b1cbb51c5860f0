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

from gpulab.nvsmi.header import NvidiaSmiParseError

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
