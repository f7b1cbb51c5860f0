"""How the host's GPUs are linked: ``nvidia-smi topo -m`` parsed, or the same read from NVML.

One typed result, :class:`Topology`, from two readers:

* :func:`parse_topo_matrix` reads ``nvidia-smi topo -m`` (``--matrix``): a header row of
  device columns (``GPU0`` ..., then NICs as ``NIC0`` ... with a ``NIC Legend``, or, on old
  drivers, by name such as ``mlx5_0``), then ``CPU Affinity``, ``NUMA Affinity`` and, from
  about R535, ``GPU NUMA ID``; one row per device; then the legend. The header is printed
  underlined (ANSI ``ESC[4m`` ... ``ESC[0m``) even into a pipe, and cells are separated by
  tabs (an empty cell between ``NUMA Affinity`` and ``GPU NUMA ID``) or, in copies, spaces:
  the parser strips the escapes and splits on whitespace.
* :func:`read_nvml_topology` asks NVML: ``nvmlDeviceGetTopologyCommonAncestor`` per GPU pair,
  ``nvmlDeviceGetNvLinkState`` / ``...RemotePciInfo`` / ``...RemoteDeviceType`` per link,
  ``nvmlDeviceGetCpuAffinity``, ``nvmlDeviceGetMemoryAffinity`` (NUMA) and
  ``nvmlDeviceGetNumaNodeId``. NVML knows nothing of NICs: its result has none.

Link codes (NVIDIA's legend, printed under the matrix), best first:

====== ==============================================================================
``X``    self
``NV#``  a bonded set of # NVLinks (``NV18``: 18 links, e.g. through NVSwitch on a DGX H100)
``PIX``  at most a single PCIe bridge
``PXB``  multiple PCIe bridges, without the PCIe host bridge
``PHB``  PCIe and a PCIe host bridge (typically the CPU)
``NODE`` PCIe and the interconnect between PCIe host bridges within a NUMA node
``SYS``  PCIe and the SMP interconnect between NUMA nodes (QPI/UPI)
====== ==============================================================================

Drivers before about R384 printed ``SOC`` for what is now ``SYS``; it is read as ``SYS``. Any
other code raises :class:`TopologyError` naming it. CPU sets are tuples of inclusive
``(first, last)`` ranges (``"0-55,112-167"`` -> ``((0, 55), (112, 167))``); ``N/A`` is empty.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpulab.core.errors import GpuLabError
from gpulab.host import nvml

KINDS: Final[tuple[str, ...]] = ("X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS")
_LEGACY: Final = {"SOC": "SYS"}
_ANSI_RE: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_AFFINITY_COLUMNS: Final = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_GPU_RE: Final = re.compile(r"^GPU(\d+)$")
_NIC_LEGEND_RE: Final = re.compile(r"^\s*(NIC\d+):\s*(\S+)\s*$")
#: NVML_TOPOLOGY_* level -> link code (0 INTERNAL, a dual-GPU board's own switch, is PIX:
#: the legend has no code of its own for it).
NVML_LEVELS: Final = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}


class TopologyError(GpuLabError, ValueError):
    """The topology could not be read: an unknown link code, or output of an unknown shape."""


@dataclass(frozen=True)
class Link:
    """The path between two devices: ``kind`` one of :data:`KINDS`; ``nvlinks`` the NVLink
    count for ``NV`` (0 otherwise)."""

    kind: str
    nvlinks: int = 0

    @property
    def code(self) -> str:
        """The matrix code: ``"NV18"``, ``"PIX"``, ..."""
        return f"NV{self.nvlinks}" if self.kind == "NV" else self.kind


def parse_link(code: str, where: str = "") -> Link:
    """``"NV18"`` -> ``Link("NV", 18)``, ``"SYS"`` -> ``Link("SYS")`` (``"SOC"`` too).

    Raises:
        TopologyError: an unknown code; the message names it (and ``where``, e.g. the cell).
    """
    c = _LEGACY.get(code, code)
    m = re.fullmatch(r"NV(\d+)", c)
    if m is not None and int(m.group(1)) > 0:
        return Link("NV", int(m.group(1)))
    if c in KINDS and c != "NV":
        return Link(c)
    at = f" at {where}" if where else ""
    raise TopologyError(
        f"unknown link code {code!r}{at} in nvidia-smi topo -m (known: X, NV<n>, PIX, PXB, PHB, "
        "NODE, SYS; legacy SOC)"
    )


@dataclass(frozen=True)
class GpuTopology:
    """One GPU: ``links`` to every other GPU (by index), ``nics`` to each NIC (by label, e.g.
    ``"NIC0"``), ``cpu_affinity`` and ``numa_affinity`` as ranges, ``numa_node`` the single NUMA
    node of its CPUs (None when none or several), ``gpu_numa_id`` the GPU memory's own NUMA
    node (coherent systems such as Grace Hopper; None elsewhere)."""

    index: int
    links: dict[int, Link] = field(default_factory=dict)
    nics: dict[str, Link] = field(default_factory=dict)
    cpu_affinity: tuple[tuple[int, int], ...] = ()
    numa_affinity: tuple[tuple[int, int], ...] = ()
    numa_node: int | None = None
    gpu_numa_id: int | None = None


@dataclass(frozen=True)
class NicTopology:
    """A NIC row: ``label`` (``"NIC0"``, or the name on old drivers), ``name`` (``"mlx5_0"``,
    from the NIC legend; None without one), ``links`` to GPUs (``"GPU0"``) and NICs."""

    label: str
    name: str | None
    links: dict[str, Link] = field(default_factory=dict)


@dataclass(frozen=True)
class Topology:
    """The host: ``gpus`` in index order, ``nics`` in matrix order, ``source``
    (``"nvidia-smi topo -m"`` or ``"nvml"``)."""

    gpus: tuple[GpuTopology, ...]
    nics: tuple[NicTopology, ...] = ()
    source: str = "nvidia-smi topo -m"

    def link(self, a: int, b: int) -> Link:
        """The link between GPUs ``a`` and ``b`` (``X`` when equal). Raises ``KeyError``."""
        return Link("X") if a == b else self.gpus[a].links[b]

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: ``source``, ``gpus`` (``index``, ``links`` {peer: code}, ``nics``,
        ``cpuAffinity`` [[first, last], ...], ``numaAffinity``, ``numaNode``, ``gpuNumaId``),
        ``nics`` (``label``, ``name``, ``links``)."""
        return {
            "source": self.source,
            "gpus": [
                {
                    "index": g.index,
                    "links": {str(k): v.code for k, v in sorted(g.links.items())},
                    "nics": {k: v.code for k, v in g.nics.items()},
                    "cpuAffinity": [list(r) for r in g.cpu_affinity],
                    "numaAffinity": [list(r) for r in g.numa_affinity],
                    "numaNode": g.numa_node,
                    "gpuNumaId": g.gpu_numa_id,
                }
                for g in self.gpus
            ],
            "nics": [
                {"label": n.label, "name": n.name, "links": {k: v.code for k, v in n.links.items()}}
                for n in self.nics
            ],
        }


def parse_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """``"0-55,112-167"`` -> ``((0, 55), (112, 167))``; ``"3"`` -> ``((3, 3),)``; ``"N/A"`` -> ``()``.

    Raises:
        TopologyError: anything else (quoted).
    """
    if text in ("N/A", ""):
        return ()
    out: list[tuple[int, int]] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if m is None:
            raise TopologyError(f"affinity {text!r} is not a list of ranges such as 0-55,112-167")
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) is not None else first
        if last < first:
            raise TopologyError(f"affinity range {part!r} runs backwards in {text!r}")
        out.append((first, last))
    return tuple(out)


def _single(ranges: tuple[tuple[int, int], ...]) -> int | None:
    return ranges[0][0] if len(ranges) == 1 and ranges[0][0] == ranges[0][1] else None


def _optional_int(text: str, what: str) -> int | None:
    if text in ("N/A", ""):
        return None
    if not text.isdigit():
        raise TopologyError(f"{what} {text!r} is not a number or N/A")
    return int(text)


def _header(lines: list[str]) -> tuple[int, list[str], list[str]]:
    for i, line in enumerate(lines):
        tokens = line.split()
        if "GPU0" in tokens:
            rest = line
            extra: list[str] = []
            for name in _AFFINITY_COLUMNS:
                if name in rest:
                    extra.append(name)
                    rest = rest.replace(name, " ")
            positions = [line.index(name) for name in extra]
            if positions != sorted(positions):
                raise TopologyError(f"affinity columns out of order in header: {line.strip()!r}")
            return i, rest.split(), extra
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    raise TopologyError(f"no nvidia-smi topo -m header (a row naming GPU0); first line: {first!r}")


def parse_topo_matrix(text: str) -> Topology:
    """Parse ``nvidia-smi topo -m`` output (see the module docstring) into a :class:`Topology`.

    Checks that rows come in header order, each has one code per device column with ``X`` on
    the diagonal (and only there), GPU rows carry every affinity column and NIC rows none.

    Raises:
        TopologyError: an unknown link code (named, with its row and column), a malformed
            row or affinity (quoted), or no header.
    """
    lines = [_ANSI_RE.sub("", ln).rstrip("\r") for ln in text.splitlines()]
    start, devices, extra = _header(lines)
    nic_names: dict[str, str] = {}
    for ln in lines:
        m = _NIC_LEGEND_RE.match(ln)
        if m is not None:
            nic_names[m.group(1)] = m.group(2)
    gpus: list[GpuTopology] = []
    nics: list[NicTopology] = []
    rows = lines[start + 1 : start + 1 + len(devices)]
    if len(rows) < len(devices):
        raise TopologyError(f"nvidia-smi topo -m lists {len(devices)} devices but {len(rows)} rows")
    for i, (label, row) in enumerate(zip(devices, rows, strict=True)):
        tokens = row.split()
        if not tokens or tokens[0] != label:
            raise TopologyError(f"row {i} should be {label!r}: {row.strip()!r}")
        codes, rest = tokens[1 : 1 + len(devices)], tokens[1 + len(devices) :]
        if len(codes) != len(devices):
            raise TopologyError(f"row {label} has {len(codes)} of {len(devices)} link codes: {row.strip()!r}")
        links: dict[str, Link] = {}
        for j, (col, code) in enumerate(zip(devices, codes, strict=True)):
            link = parse_link(code, f"row {label} column {col}")
            if (link.kind == "X") != (i == j):
                raise TopologyError(f"row {label} column {col}: {code!r} where the diagonal is {devices[i]}")
            if i != j:
                links[col] = link
        gpu = _GPU_RE.match(label)
        if gpu is None:
            if rest:
                raise TopologyError(f"row {label} is not a GPU but carries affinity cells: {row.strip()!r}")
            # NIC0.. name themselves in the NIC legend; old drivers label the column by name.
            name = nic_names.get(label) or (None if re.fullmatch(r"NIC\d+", label) else label)
            nics.append(NicTopology(label, name, links))
            continue
        if len(rest) != len(extra):
            raise TopologyError(
                f"row {label} has {len(rest)} affinity cells for the columns {extra}: {row.strip()!r}"
            )
        cells = dict(zip(extra, rest, strict=True))
        numa = parse_ranges(cells.get("NUMA Affinity", "N/A"))
        gpus.append(
            GpuTopology(
                index=int(gpu.group(1)),
                links={int(k[3:]): v for k, v in links.items() if _GPU_RE.match(k)},
                nics={k: v for k, v in links.items() if not _GPU_RE.match(k)},
                cpu_affinity=parse_ranges(cells.get("CPU Affinity", "N/A")),
                numa_affinity=numa,
                numa_node=_single(numa),
                gpu_numa_id=_optional_int(cells.get("GPU NUMA ID", "N/A"), "GPU NUMA ID"),
            )
        )
    if [g.index for g in gpus] != list(range(len(gpus))):
        raise TopologyError(f"GPU rows are not GPU0..GPU{len(gpus) - 1}: {[g.index for g in gpus]}")
    return Topology(tuple(gpus), tuple(nics), "nvidia-smi topo -m")


# --- NVML -------------------------------------------------------------------------------


def _nvlink_peers(nv: Any, h: Any, max_links: int) -> tuple[dict[str, int], int]:
    """Active NVLinks of one GPU: {remote PCI bus id: count} for GPU peers, and switch links."""
    peers: dict[str, int] = {}
    switch = 0
    for link in range(max_links):
        try:
            if nv.nvmlDeviceGetNvLinkState(h, link) != 1:  # NVML_FEATURE_ENABLED
                continue
        except nv.NVMLError:
            continue  # Not Supported (no NVLink) or past this GPU's last link
        try:
            remote_type = nv.nvmlDeviceGetNvLinkRemoteDeviceType(h, link)
        except nv.NVMLError:
            remote_type = 0  # older drivers: assume a GPU, matched by bus id below
        if remote_type == 2:  # NVML_NVLINK_DEVICE_TYPE_SWITCH
            switch += 1
            continue
        bus = nvml.text(nv.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId).upper()
        peers[bus] = peers.get(bus, 0) + 1
    return peers, switch


def read_nvml_topology(nv: Any, cpu_count: int, max_numa_nodes: int = 256) -> Topology:
    """Read the GPU topology from an initialised NVML (inside :func:`gpulab.host.nvml.session`).

    Per GPU pair: NVLink count (direct links to the peer's PCI bus id; through NVSwitch, the
    smaller of the two GPUs' switch link counts, as nvidia-smi shows NV18 on a DGX H100), else
    the PCIe common ancestor (:data:`NVML_LEVELS`). Per GPU: CPU affinity
    (``nvmlDeviceGetCpuAffinity`` over ``cpu_count`` CPUs), NUMA affinity
    (``nvmlDeviceGetMemoryAffinity``, node scope), GPU NUMA id (``nvmlDeviceGetNumaNodeId``;
    ``Not Supported`` -> None). NVML cannot see NICs: ``nics`` is empty.

    Raises:
        gpulab.host.nvml.NvmlUnavailable: a required NVML call failed.
        TopologyError: NVML reported a common-ancestor level this module does not know.
    """
    count = int(nvml.call(nv, "nvmlDeviceGetCount", nv.nvmlDeviceGetCount))
    handles = [
        nvml.call(nv, "nvmlDeviceGetHandleByIndex", nv.nvmlDeviceGetHandleByIndex, i) for i in range(count)
    ]
    buses = [
        nvml.text(nvml.call(nv, "nvmlDeviceGetPciInfo", nv.nvmlDeviceGetPciInfo, h).busId).upper()
        for h in handles
    ]
    max_links = int(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18))
    nvlinks = [_nvlink_peers(nv, h, max_links) for h in handles]
    cpu_words = max(1, (cpu_count + 63) // 64)
    node_words = max(1, (max_numa_nodes + 63) // 64)
    gpus = []
    for i, h in enumerate(handles):
        links: dict[int, Link] = {}
        for j, hj in enumerate(handles):
            if i == j:
                continue
            direct = nvlinks[i][0].get(buses[j], 0)
            via_switch = min(nvlinks[i][1], nvlinks[j][1])
            if direct or via_switch:
                links[j] = Link("NV", direct or via_switch)
                continue
            level = nvml.call(
                nv,
                "nvmlDeviceGetTopologyCommonAncestor",
                nv.nvmlDeviceGetTopologyCommonAncestor,
                h,
                hj,
            )
            if level not in NVML_LEVELS:
                raise TopologyError(f"unknown NVML topology level {level!r} between GPU{i} and GPU{j}")
            links[j] = Link(NVML_LEVELS[level])
        cpus = nvml.call(
            nv,
            "nvmlDeviceGetCpuAffinity",
            nv.nvmlDeviceGetCpuAffinity,
            h,
            cpu_words,
            optional=True,
        )
        nodes = nvml.call(
            nv,
            "nvmlDeviceGetMemoryAffinity",
            nv.nvmlDeviceGetMemoryAffinity,
            h,
            node_words,
            0,  # NVML_AFFINITY_SCOPE_NODE
            optional=True,
        )
        numa = nvml.bitmask_ranges(list(nodes)) if nodes is not None else ()
        gpu_numa = nvml.call(nv, "nvmlDeviceGetNumaNodeId", nv.nvmlDeviceGetNumaNodeId, h, optional=True)
        gpus.append(
            GpuTopology(
                index=i,
                links=links,
                cpu_affinity=nvml.bitmask_ranges(list(cpus)) if cpus is not None else (),
                numa_affinity=numa,
                numa_node=_single(numa),
                gpu_numa_id=int(gpu_numa) if gpu_numa is not None and gpu_numa >= 0 else None,
            )
        )
    return Topology(tuple(gpus), (), "nvml")


def ranges_text(ranges: Sequence[tuple[int, int]]) -> str:
    """``((0, 55), (112, 167))`` -> ``"0-55,112-167"`` (``"N/A"`` when empty), nvidia-smi's form."""
    if not ranges:
        return "N/A"
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)
