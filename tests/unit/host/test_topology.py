"""gpulab.host.topology: `nvidia-smi topo -m` parsed, and the NVML reader with a fake pynvml.

Inputs are in tests/data/topology/ (README.md there names each source): the real one-GPU
capture from an H200, and multi-GPU matrices laid out from outputs quoted in public issues:
a DGX H100 with NV18 links (vllm-project/vllm#13855), a DGX A100 with NV12 (NVIDIA/nccl#1505),
an 8x RTX 4090 PCIe box (NVIDIA/go-gpuallocator#17), a 2017 driver's matrix
(kubernetes/kubernetes#53497) and a pre-R384 SOC legend (gist ashwin/e139748b...).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab.host import nvml, topology
from gpulab.host.topology import Link, TopologyError
from tests.support.host_facts import compare_topologies
from tests.unit.host.test_nvml import FakeNvml

DATA = Path(__file__).resolve().parents[2] / "data"
TOPO = DATA / "topology"


def parse(name: str) -> topology.Topology:
    return topology.parse_topo_matrix((TOPO / name).read_text())


def test_real_h200_capture() -> None:
    t = parse("h200-1gpu.txt")
    (gpu,) = t.gpus
    assert gpu.index == 0 and gpu.links == {} and gpu.nics == {}
    assert gpu.cpu_affinity == ((0, 15),)
    assert gpu.numa_affinity == ((0, 0),) and gpu.numa_node == 0
    assert gpu.gpu_numa_id is None
    assert t.nics == () and t.source == "nvidia-smi topo -m"
    assert t.link(0, 0) == Link("X")


def test_dgx_h100_nv18_everywhere_and_nics_by_numa_side() -> None:
    """vllm-project/vllm#13855 (DGX H100): every GPU pair NV18, each GPU PXB to one NIC."""
    t = parse("dgx-h100-8gpu.txt")
    assert len(t.gpus) == 8 and len(t.nics) == 12
    for g in t.gpus:
        assert set(g.links) == set(range(8)) - {g.index}
        assert all(link == Link("NV", 18) for link in g.links.values())
        assert [k for k, v in g.nics.items() if v.kind == "PXB"] != []
    assert t.link(0, 7).code == "NV18"
    assert t.gpus[0].nics["NIC0"] == Link("PXB")
    assert t.gpus[0].nics["NIC6"] == Link("SYS")
    assert t.gpus[1].nics["NIC3"] == Link("PXB")
    assert t.gpus[0].cpu_affinity == ((0, 55), (112, 167)) and t.gpus[0].numa_node == 0
    assert t.gpus[7].cpu_affinity == ((56, 111), (168, 223)) and t.gpus[7].numa_node == 1
    assert [n.name for n in t.nics] == [f"mlx5_{k}" for k in range(12)]
    assert t.nics[0].links["GPU0"] == Link("PXB") and t.nics[0].links["NIC11"] == Link("SYS")


def test_dgx_a100_space_aligned_four_numa_nodes() -> None:
    """NVIDIA/nccl#1505 (DGX A100 40GB), space-aligned as pasted from a terminal."""
    t = parse("dgx-a100-8gpu.txt")
    assert {link.code for g in t.gpus for link in g.links.values()} == {"NV12"}
    assert [g.numa_node for g in t.gpus] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert t.gpus[4].cpu_affinity == ((112, 127), (240, 255))
    assert {k for k, v in t.gpus[6].nics.items() if v.kind == "PXB"} == {"NIC8", "NIC9"}
    assert t.nics[0].links["NIC1"] == Link("PXB")


def test_pcie_box_sys_phb_pix_without_nic_legend() -> None:
    """NVIDIA/go-gpuallocator#17 (8x RTX 4090): no NVLink, all GPU pairs SYS."""
    t = parse("pcie-4090-8gpu.txt")
    assert {link.kind for g in t.gpus for link in g.links.values()} == {"SYS"}
    assert t.gpus[6].nics == {"NIC0": Link("PHB"), "NIC1": Link("PHB")}
    assert t.nics[0].name is None  # no NIC legend printed
    assert t.nics[0].links["NIC1"] == Link("PIX")
    assert [g.numa_node for g in t.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_legacy_matrix_with_a_named_nic_and_cpu_affinity_only() -> None:
    """kubernetes/kubernetes#53497 (2017): PIX/PHB/SYS, a column named mlx4_0."""
    t = parse("legacy-2017-8gpu.txt")
    assert t.link(0, 1) == Link("PIX") and t.link(0, 2) == Link("PHB") and t.link(0, 4) == Link("SYS")
    assert t.gpus[0].nics == {"mlx4_0": Link("PHB")}
    assert t.nics[0].label == "mlx4_0" and t.nics[0].name == "mlx4_0"
    assert t.gpus[5].cpu_affinity == ((10, 19), (30, 39))
    assert t.gpus[5].numa_affinity == () and t.gpus[5].numa_node is None


def test_legacy_soc_reads_as_sys() -> None:
    """gist ashwin/e139748b... (pre-R384 legend): SOC is today's SYS."""
    t = parse("legacy-soc-4gpu.txt")
    assert t.link(0, 2) == Link("SYS") and t.link(2, 3) == Link("PHB")


def test_to_json_is_plain() -> None:
    doc = parse("dgx-h100-8gpu.txt").to_json()
    assert doc["gpus"][0]["links"]["1"] == "NV18"
    assert doc["gpus"][0]["cpuAffinity"] == [[0, 55], [112, 167]]
    json.dumps(doc)


@pytest.mark.parametrize(
    ("code", "expected"),
    [("NV1", Link("NV", 1)), ("NV18", Link("NV", 18)), ("PIX", Link("PIX")), ("NODE", Link("NODE"))],
)
def test_parse_link(code: str, expected: Link) -> None:
    assert topology.parse_link(code) == expected


@pytest.mark.parametrize("code", ["NV0", "NV", "XYZ", "PSB", "nv4", "C2C"])
def test_unknown_codes_are_named(code: str) -> None:
    with pytest.raises(TopologyError, match=f"unknown link code '{code}'"):
        topology.parse_link(code, "row GPU0 column GPU1")


def test_an_unknown_code_in_a_matrix_names_code_row_and_column() -> None:
    text = (TOPO / "pcie-4090-8gpu.txt").read_text().replace("PHB", "QPX", 1)
    with pytest.raises(TopologyError, match=r"unknown link code 'QPX' at row GPU6 column NIC0"):
        topology.parse_topo_matrix(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "no nvidia-smi"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\n", "lists 2 devices but 1 rows"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU1\tNV4\tSYS\t0-7\n", "diagonal"),
        ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU0\tNV4\t X \t0-7\n", "should be 'GPU1'"),
        ("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-7\n", "affinity cells"),
        ("\tGPU0\tCPU Affinity\nGPU0\t X \t0-7,x\n", "not a list of ranges"),
        ("\tGPU0\tCPU Affinity\nGPU0\t X \t7-3\n", "runs backwards"),
        ("\tGPU0\tNIC0\tCPU Affinity\nGPU0\t X \tPIX\t0-7\nNIC0\tPIX\t X \t0-7\n", "not a GPU"),
    ],
)
def test_malformed_matrices(text: str, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        topology.parse_topo_matrix(text)


def test_ranges_round_trip() -> None:
    assert topology.parse_ranges("0-55,112-167") == ((0, 55), (112, 167))
    assert topology.parse_ranges("3") == ((3, 3),)
    assert topology.parse_ranges("N/A") == ()
    assert topology.ranges_text(((0, 55), (112, 167))) == "0-55,112-167"
    assert topology.ranges_text(((3, 3),)) == "3"
    assert topology.ranges_text(()) == "N/A"


# --- NVML -------------------------------------------------------------------------------


def read(fake: FakeNvml, cpus: int = 16) -> topology.Topology:
    with nvml.session(fake):
        return topology.read_nvml_topology(fake, cpus)


def test_nvml_reader_on_the_h200_shape_matches_the_matrix() -> None:
    t = read(FakeNvml())  # NVLink and common ancestor Not Supported, as on the H200
    assert t.source == "nvml" and t.nics == ()
    assert compare_topologies(parse("h200-1gpu.txt"), t) == []


def _bus(i: int) -> str:
    return f"00000000:{0x18 + i:02X}:00.0"


def test_nvml_reader_counts_nvswitch_links_like_nvidia_smi_shows_nv18() -> None:
    gpus = [
        {
            "bus": _bus(i),
            "nvlinks": {link: ("FFFFFFFF:FF:FF.0", 2) for link in range(18)},  # all to NVSwitch
            "ancestors": {j: 40 if i // 4 == j // 4 else 50 for j in range(8)},
            "cpus": [0xFFFFFFFFFFFFFF, 0] if i < 4 else [0xFF << 56, 0xFFFFFFFFFFFF],
            "nodes": [1] if i < 4 else [2],
        }
        for i in range(8)
    ]
    t = read(FakeNvml(gpus), cpus=112)
    assert all(link == Link("NV", 18) for g in t.gpus for link in g.links.values())
    assert t.gpus[0].cpu_affinity == ((0, 55),) and t.gpus[0].numa_node == 0
    assert t.gpus[4].cpu_affinity == ((56, 111),) and t.gpus[4].numa_node == 1


def test_nvml_reader_direct_links_and_pcie_levels() -> None:
    gpus = [
        {"bus": _bus(0), "nvlinks": {0: (_bus(1), 0), 1: (_bus(1), 0)}, "ancestors": {1: 10, 2: 30}},
        {"bus": _bus(1), "nvlinks": {0: (_bus(0), 0), 1: (_bus(0), 0)}, "ancestors": {0: 10, 2: 20}},
        {"bus": _bus(2), "ancestors": {0: 30, 1: 20}, "numa": 4},
    ]
    t = read(FakeNvml(gpus))
    assert t.link(0, 1) == Link("NV", 2) and t.link(1, 0) == Link("NV", 2)
    assert t.link(0, 2) == Link("PHB") and t.link(1, 2) == Link("PXB")
    assert t.gpus[2].gpu_numa_id == 4


def test_nvml_reader_rejects_an_unknown_level() -> None:
    gpus = [{"bus": _bus(0), "ancestors": {1: 35}}, {"bus": _bus(1), "ancestors": {0: 35}}]
    with pytest.raises(TopologyError, match="unknown NVML topology level 35"):
        read(FakeNvml(gpus))


def test_compare_topologies_reports_differences() -> None:
    a = parse("dgx-h100-8gpu.txt")
    b = parse("dgx-a100-8gpu.txt")
    diffs = compare_topologies(a, b)
    assert any(d.startswith("gpu 0 links") for d in diffs)
    assert any(d.startswith("gpu 0 numa_node") for d in diffs)


def test_saved_h200_readings_agree() -> None:
    final = DATA / "device-h200" / "final"
    by_matrix = topology.parse_topo_matrix((final / "topo-m.txt").read_text())
    assert by_matrix.to_json() == json.loads((final / "topology-smi.json").read_text())
    saved_nvml = json.loads((final / "topology-nvml.json").read_text())
    assert saved_nvml["gpus"] == by_matrix.to_json()["gpus"]
    assert json.loads((final / "topology-compare.json").read_text()) == {"differences": []}
