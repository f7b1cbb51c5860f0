"""Parsers for ``nvidia-smi`` output: the header, the query CSV, ``-L`` and the plain table.

Pure functions over text captured from a host or from a smoke Pod's log; nothing here runs a
command. Every parser either returns facts it read or raises :class:`NvidiaSmiParseError`
quoting the line it could not read: it never returns an empty or guessed value.

Formats handled (see ``tests/data/nvidia-smi/`` for real captures from H200 hosts):

* plain table (``nvidia-smi``): header box ``Driver Version: X   CUDA Version: Y``;
  drivers 610 and newer print ``KMD Version: X   CUDA UMD Version: Y``; very old ones
  (e.g. 384.90) print no CUDA field at all;
* ``nvidia-smi -q``: ``Driver Version : X`` and ``CUDA Version : Y`` on separate lines;
* ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``, and the separate MIG
  query ``--query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending``;
* ``nvidia-smi -L``: ``GPU 0: NVIDIA H200 (UUID: GPU-...)`` plus indented MIG rows.

Units: memory is MiB (``nvidia-smi`` reports ``memory.total`` in MiB).

Modules: :mod:`~gpulab.host.nvsmi.header` (the header and :class:`NvidiaSmiParseError`),
:mod:`~gpulab.host.nvsmi.query` (the query CSV, :class:`GpuInfo`, :func:`model_warning`) and
:mod:`~gpulab.host.nvsmi.table` (``-L``'s MIG devices).
"""

from __future__ import annotations

from gpulab.host.nvsmi.header import NvidiaSmiParseError, SmiHeader, parse_header
from gpulab.host.nvsmi.query import (
    MIG_FIELDS,
    QUERY_FIELDS,
    GpuInfo,
    MigMode,
    mig_query_command,
    model_warning,
    parse_mig_csv,
    parse_query_csv,
    query_command,
)
from gpulab.host.nvsmi.table import MigDevice, parse_list_mig

__all__ = [
    "MIG_FIELDS",
    "QUERY_FIELDS",
    "GpuInfo",
    "MigDevice",
    "MigMode",
    "NvidiaSmiParseError",
    "SmiHeader",
    "mig_query_command",
    "model_warning",
    "parse_header",
    "parse_list_mig",
    "parse_mig_csv",
    "parse_query_csv",
    "query_command",
]
