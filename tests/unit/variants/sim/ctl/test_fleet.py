"""variants.sim.ctl.fleet: node specs, made-up UUIDs (distinct, stable), the per-node logs and
ClusterLogs, the found stack's manifests (annotated simulated)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.kube import fleet as kube_fleet
from gpulab.kube import smoke_gpus
from variants.sim.ctl import fleet


def test_specs() -> None:
    assert fleet.parse_node_spec("gpu-a=8") == fleet.FleetNode("gpu-a", 8, 8)
    assert fleet.parse_node_spec("gpu-c=8/7") == fleet.FleetNode("gpu-c", 8, 7)
    for bad in ("GPU=1", "a=0", "a=9", "a=2/3", "a", "a=b"):
        with pytest.raises(ValueError):
            fleet.parse_node_spec(bad)
    with pytest.raises(ValueError, match="twice"):
        fleet.parse_node_specs(["a=1", "a=2"])
    with pytest.raises(ValueError, match="at most 128"):
        fleet.parse_node_specs([f"n{i}=1" for i in range(129)])


def test_uuids_are_stable_and_distinct_and_the_smoke_log_lists_them() -> None:
    a = fleet.gpu_uuids("lab", "gpu-a", 8)
    assert a == fleet.gpu_uuids("lab", "gpu-a", 8) and len(set(a)) == 8
    assert not set(a) & set(fleet.gpu_uuids("lab", "gpu-b", 8))
    log = fleet.smoke_log("header\n", a)
    assert smoke_gpus.gpu_uuids(log) == a
    assert smoke_gpus.gpu_uuids(fleet.compute_log(a[3], "Test PASSED\n")) == [a[3]]


def test_cluster_logs_name_each_nodes_pods() -> None:
    docs = fleet.cluster_logs(Path("/w"), [fleet.FleetNode("gpu-a", 2, 2)], ["gpu-lab"])
    smoke, compute = docs
    assert smoke["spec"]["selector"] == {
        "matchNamespaces": ["gpu-lab"],
        "matchNames": [kube_fleet.pod_name("gpu-smoke-", "gpu-a")],
    }
    assert [e["containers"] for e in compute["spec"]["logs"]] == [["vectoradd-0"], ["vectoradd-1"]]
    assert compute["spec"]["logs"][1]["logsFile"] == "/w/logs/fleet/gpu-a-compute-1.log"


def test_the_found_stack_is_the_operators_daemonset_annotated_simulated() -> None:
    ns, ds = fleet.preinstalled_manifests()
    assert (
        ns["metadata"]["name"] == "gpu-operator"
        and ds["metadata"]["name"] == "nvidia-device-plugin-daemonset"
    )
    assert ds["spec"]["template"]["metadata"]["labels"] == {"app": "nvidia-device-plugin-daemonset"}
    assert ds["metadata"]["annotations"]["gpulab.dev/simulated"] == "true"
