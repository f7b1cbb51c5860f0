"""gpulab.simcluster's multi-node support (``--nodes``): names, validation, stale nodes, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab import simcluster as sc


def test_node_names_follow_the_first_node() -> None:
    assert sc.node_names("gpu-sim-node", 1) == ["gpu-sim-node"]
    assert sc.node_names("gpu-sim-node", 3) == ["gpu-sim-node", "gpu-sim-node-2", "gpu-sim-node-3"]


@pytest.mark.parametrize("count", [0, -1, sc.MAX_NODES + 1])
def test_node_count_is_bounded(count: int) -> None:
    with pytest.raises(ValueError, match=f"nodes must be 1..{sc.MAX_NODES}"):
        sc.node_names("n", count)


def test_node_names_stay_dns_labels() -> None:
    with pytest.raises(ValueError, match="not a DNS label"):
        sc.node_names("n" * 62, 2)  # "nnn...-2" is 64 characters


def test_up_options_validate_the_node_count(tmp_path: Path) -> None:
    assert sc.UpOptions(name="lab", workdir=tmp_path, nodes=2).nodes == 2
    assert sc.UpOptions(name="lab", workdir=tmp_path).nodes == 1
    with pytest.raises(ValueError, match="nodes must be"):
        sc.UpOptions(name="lab", workdir=tmp_path, nodes=0)


def test_stale_nodes_are_only_the_extra_numbered_ones() -> None:
    existing = [
        "gpu-sim-node",
        "gpu-sim-node-2",
        "gpu-sim-node-3",
        "gpu-sim-node-x",
        "other",
        "gpu-sim-node2",
    ]
    assert sc.stale_nodes(existing, "gpu-sim-node", ["gpu-sim-node"]) == ["gpu-sim-node-2", "gpu-sim-node-3"]
    assert sc.stale_nodes(existing, "gpu-sim-node", sc.node_names("gpu-sim-node", 3)) == []


def test_every_node_gets_the_same_gpus_and_its_own_hostname_label() -> None:
    info = sc.parse_capture(sc.load_capture(1))
    manifests = [sc.render_node_manifest(n, 1, info) for n in sc.node_names("gpu-sim-node", 2)]
    assert [m["metadata"]["labels"]["kubernetes.io/hostname"] for m in manifests] == [
        "gpu-sim-node",
        "gpu-sim-node-2",
    ]
    assert all(m["status"]["allocatable"]["nvidia.com/gpu"] == "1" for m in manifests)
    assert all(m["metadata"]["annotations"]["gpulab.dev/simulated"] == "true" for m in manifests)


def test_cli_rejects_a_bad_node_count_with_usage_exit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert sc.main(["up", "--name", "lab", "--workdir", str(tmp_path), "--nodes", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "nodes must be" in captured.err
