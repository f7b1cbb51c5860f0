"""gpulab.host.topology_probe and the probe's topology step: NVML first, ``nvidia-smi topo -m`` as the
fallback, a failure a note (never a preflight failure), the captures' topology files."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpulab.host import nvsmi, probe
from gpulab.host import topology_probe as host_topology
from tests.support.host_facts import facts_from_json
from tests.unit.host.test_nvml import FakeNvml

DATA = Path(__file__).resolve().parents[2] / "data"
FINAL = DATA / "device-h200" / "final"
TOPO = DATA / "topology"
BUS_A, BUS_B = "00000000:00:06.0", "00000000:00:07.0"


def runner(topo: tuple[int | None, str] | None = None) -> tuple[probe.Runner, list[list[str]]]:
    """nvidia-smi answering from the saved H200 outputs; ``topo`` answers ``topo -m``."""
    calls: list[list[str]] = []

    def run(argv: Sequence[str]) -> tuple[int | None, str, str]:
        calls.append(list(argv))
        if list(argv) == host_topology.TOPO_COMMAND:
            rc, out = topo if topo is not None else (0, (FINAL / "topo-m.txt").read_text())
            return rc, out, ""
        if list(argv) == ["nvidia-smi"]:
            return 0, (FINAL / "nvidia-smi.txt").read_text(), ""
        if list(argv) == nvsmi.mig_query_command():
            return 0, (FINAL / "query-mig.csv").read_text(), ""
        return 0, (FINAL / "query-gpu.csv").read_text(), ""

    return run, calls


def two_nvlinked() -> FakeNvml:
    """Two GPUs joined by four direct NVLinks, CPUs 0-7 and 8-15 on NUMA nodes 0 and 1."""
    return FakeNvml(
        [
            {
                "bus": BUS_A,
                "uuid": "GPU-a",
                "cpus": [0xFF],
                "nodes": [1],
                "nvlinks": {i: (BUS_B, 0) for i in range(4)},
            },
            {
                "bus": BUS_B,
                "uuid": "GPU-b",
                "cpus": [0xFF00],
                "nodes": [2],
                "nvlinks": {i: (BUS_A, 0) for i in range(4)},
            },
        ]
    )


def test_nvml_reads_the_topology_and_runs_no_command() -> None:
    run, calls = runner()
    facts = probe.probe_host(run, nvml_loader=two_nvlinked)
    assert facts.source == "nvml" and calls == []
    assert facts.topology is not None and facts.topology.source == "nvml" and facts.topology_note is None
    doc = facts.topology_json()
    assert doc["source"] == "nvml" and doc["note"] is None
    g0, g1 = doc["gpus"]
    assert g0 == {
        "index": 0,
        "uuid": "GPU-a",
        "links": [{"peer": 1, "peerUuid": "GPU-b", "kind": "NV", "nvlinks": 4, "code": "NV4"}],
        "cpuAffinity": "0-7",
        "numaNode": 0,
        "gpuNumaId": None,
    }
    assert g1["cpuAffinity"] == "8-15" and g1["numaNode"] == 1


def test_nvml_topology_failing_falls_back_to_topo_m_and_says_why() -> None:
    # Two GPUs without NVLink: nvmlDeviceGetTopologyCommonAncestor is Not Supported (as on the
    # lent H200 VMs, tests/data/device-h200/README.md), so NVML cannot say how they are linked.
    fake = FakeNvml([{"bus": BUS_A}, {"bus": BUS_B, "uuid": "GPU-b"}])
    matrix = (DATA.parent.parent / "gpulab" / "host" / "captures" / "h200-2gpu" / "topo-m.txt").read_text()
    run, calls = runner(topo=(0, matrix))
    facts = probe.probe_host(run, nvml_loader=lambda: fake)
    assert facts.source == "nvml" and calls == [host_topology.TOPO_COMMAND]
    assert facts.topology is not None and facts.topology.source == "nvidia-smi topo -m"
    assert facts.topology_note is not None
    assert facts.topology_note.startswith("NVML topology not read (NvmlUnavailable: ")
    assert "nvmlDeviceGetTopologyCommonAncestor" in facts.topology_note
    assert facts.notes[-1] == facts.topology_note
    assert facts.topology_json()["gpus"][0]["links"][0]["code"] == "NV18"


def test_a_topology_failure_is_a_note_never_a_preflight_failure() -> None:
    def missing() -> Any:
        from gpulab.host import nvml

        raise nvml.NvmlUnavailable(nvml.Finding(nvml.CHECK_NVML, False, "pynvml is not importable", "pip"))

    failed = "Failed to initialize NVML: Driver/library version mismatch\n"
    facts = probe.probe_host(runner(topo=(255, failed))[0], nvml_loader=missing)
    assert facts.source == "nvidia-smi" and facts.driver_version == "580.159.04"
    assert facts.topology is None
    assert facts.topology_note == (
        "topology not read: TopologyError: `nvidia-smi topo -m` exited 255: "
        "'Failed to initialize NVML: Driver/library version mismatch'"
    )
    assert facts.notes[0].startswith("NVML not used") and facts.notes[-1] == facts.topology_note
    assert facts.topology_json() == {"source": None, "gpus": [], "note": facts.topology_note}


def test_an_unknown_matrix_or_a_missing_binary_is_a_note() -> None:
    text = (TOPO / "pcie-4090-8gpu.txt").read_text().replace("PHB", "QPX", 1)
    topo, note = host_topology.read_host_topology(runner(topo=(0, text))[0], None, 8)
    assert topo is None and note is not None and "unknown link code 'QPX'" in note
    topo, note = host_topology.read_host_topology(runner(topo=(None, ""))[0], None, 1)
    assert topo is None and note == "topology not read: TopologyError: `nvidia-smi topo -m` not found: ''"


def test_a_topology_of_other_gpus_is_dropped() -> None:
    topo, note = host_topology.read_host_topology(runner()[0], None, 2)
    assert topo is None and note == "topology not used: nvidia-smi topo -m lists 1 GPUs, the probe 2"


def test_real_h200_nvidia_smi_path_reads_the_saved_matrix() -> None:
    def missing() -> Any:
        from gpulab.host import nvml

        raise nvml.NvmlUnavailable(nvml.Finding(nvml.CHECK_NVML, False, "no binding", "pip"))

    facts = probe.probe_host(runner()[0], nvml_loader=missing)
    saved = json.loads((FINAL / "topology-smi.json").read_text())
    assert facts.topology is not None and facts.topology.to_json() == saved
    assert facts.topology_note is None


def test_captures_carry_their_topology_labelled_by_the_capture() -> None:
    one = probe.probe_capture("h200-1gpu")
    assert one.topology is not None and one.topology_note is None
    doc = one.topology_json()
    assert doc["source"] == "capture:h200-1gpu (nvidia-smi topo -m)"
    assert doc["gpus"] == [
        {
            "index": 0,
            "uuid": "GPU-00000000-0000-4000-8000-000000000000",
            "links": [],
            "cpuAffinity": "0-15",
            "numaNode": 0,
            "gpuNumaId": None,
        }
    ]
    # The 1-GPU capture's matrix is the real H200's, byte for byte.
    captured = (Path(probe.CAPTURES_DIR) / "h200-1gpu" / "topo-m.txt").read_bytes()
    assert captured == (FINAL / "topo-m.txt").read_bytes()
    two = probe.probe_capture("h200-2gpu").topology_json()
    assert [lk["code"] for g in two["gpus"] for lk in g["links"]] == ["NV18", "NV18"]


def test_a_capture_without_topology_says_so(tmp_path: Path) -> None:
    d = tmp_path / "x"
    d.mkdir()
    for name in ("query-gpu.csv", "nvidia-smi.txt"):
        (d / name).write_text((Path(probe.CAPTURES_DIR) / "h200-1gpu" / name).read_text())
    facts = probe.probe_capture("x", captures_dir=tmp_path)
    assert facts.topology is None
    assert facts.topology_note == "topology not read: the capture x has no topo-m.txt"
    (d / "topo-m.txt").write_text("no matrix here\n")
    note = probe.probe_capture("x", captures_dir=tmp_path).topology_note
    assert note is not None and note.startswith("topology not read: topo-m.txt: no nvidia-smi topo -m header")


def test_json_round_trip_keeps_the_topology_and_old_probes_stay_equal() -> None:
    facts = probe.probe_host(runner()[0], nvml_loader=two_nvlinked)
    doc = json.loads(json.dumps(facts.to_json()))
    assert doc["topology"]["gpus"][0]["links"] == {"1": "NV4"}
    assert facts_from_json(doc) == facts
    # A probe saved before the topology step has neither key, and reads back without one.
    old = json.loads((FINAL / "probe-nvml.json").read_text())
    assert "topology" not in old and facts_from_json(old).topology is None
    assert "topology" not in facts_from_json(old).to_json()


def test_the_h200_run_of_both_paths_agrees_with_these_readers() -> None:
    """tests/data/device-h200/topology-probe.json: probe_host on a real H200, NVML and then
    nvidia-smi topo -m; here the same readers on that machine's saved outputs."""
    saved = json.loads((DATA / "device-h200" / "topology-probe.json").read_text())
    assert saved["same"] is True
    by_nvml, by_smi = saved["nvml"]["hostTopology"], saved["nvidia-smi"]["hostTopology"]
    assert (by_nvml["source"], by_smi["source"]) == ("nvml", "nvidia-smi topo -m")
    assert by_nvml["note"] is None and by_smi["note"] is None

    def missing() -> Any:
        from gpulab.host import nvml

        raise nvml.NvmlUnavailable(nvml.Finding(nvml.CHECK_NVML, False, "no binding", "pip"))

    here = probe.probe_host(runner()[0], nvml_loader=missing).topology_json()
    assert here == by_smi
    assert probe.probe_host(runner()[0], nvml_loader=FakeNvml).topology_json()["gpus"] == by_nvml["gpus"]
