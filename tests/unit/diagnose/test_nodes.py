"""Nodes: readiness, allocatable ``nvidia.com/gpu`` and GPU shortages (:mod:`gpulab.diagnose.nodes`)."""

from __future__ import annotations

from typing import Any

from gpulab import diagnose
from gpulab.core import fixes
from gpulab.core.names import SIMULATED_ANNOTATION

from .builders import daemonset, event, healthy_operator, node, pod, rows, running

# --- allocatable ------------------------------------------------------------------------------


def test_allocatable_key_missing_on_every_node_is_not_registered() -> None:
    pods, _ = healthy_operator()
    dsets = [daemonset("nvidia-device-plugin-daemonset", desired=1, ready=0)]
    diags = diagnose.diagnose_cluster(
        pods=pods[:1],
        events=[],
        daemonsets=dsets,
        nodes=[node(allocatable=None, capacity=None)],
    )
    d = next(d for d in diags if d.row == "allocatable-zero")
    assert d.variant == "not-registered"
    assert "device plugin not registered" in d.reason
    assert d.object == "node gpu-lab"
    assert "ready 0/1" in d.detail
    assert "minikube -p gpu-lab ssh -- nvidia-smi" in d.fix
    assert "logs -l app=nvidia-device-plugin-daemonset" in d.fix


def test_allocatable_zero_with_capacity_is_unhealthy() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(allocatable="0", capacity="1")]
    )
    assert rows(diags) == ["allocatable-zero"]
    d = diags[0]
    assert d.variant == "unhealthy"
    assert "devices unhealthy (e.g. XID errors)" in d.reason
    assert "xid" in d.fix.lower()


def test_the_plugin_the_gate_waits_for_is_the_one_named() -> None:
    """An existing cluster's own device plugin (the real-node run's kube-system/
    gpulab-device-plugin, tests/data/device-h200-node) is not named as the operator's: the
    diagnosis finds it by the name the gate was given and its fix selects its pods."""
    own = daemonset("gpulab-device-plugin", desired=1, ready=1, ns="kube-system")
    own["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "gpulab-device-plugin"}}
    diags = diagnose.diagnose_cluster(
        pods=[],
        events=[],
        daemonsets=[own],
        nodes=[node(allocatable="0", capacity="1")],
        device_plugin=("kube-system", "gpulab-device-plugin"),
    )
    d = next(d for d in diags if d.row == "allocatable-zero")
    assert d.variant == "unhealthy" and d.detail == "DaemonSet kube-system/gpulab-device-plugin ready 1/1"
    assert "-n kube-system logs -l app.kubernetes.io/name=gpulab-device-plugin --tail=50" in d.fix
    # Without the name, only NVIDIA's DaemonSet names are recognised, as before.
    unnamed = diagnose.diagnose_cluster(
        pods=[], events=[], daemonsets=[own], nodes=[node(allocatable="0", capacity="1")]
    )
    assert (
        next(d for d in unnamed if d.row == "allocatable-zero").detail == "no device-plugin DaemonSet given"
    )


def test_allocatable_zero_with_zero_capacity_means_no_devices_seen() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(allocatable="0", capacity="0")]
    )
    assert diags[0].variant == "no-devices"


def test_allocatable_below_expected_count() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods,
        events=[],
        daemonsets=dsets,
        nodes=[node(allocatable="1", capacity="2")],
        expected_gpus=2,
    )
    assert rows(diags) == ["allocatable-mismatch"]
    assert diags[0].variant == "fewer"
    assert "is 1, expected 2" in diags[0].reason


def test_insufficient_gpu_names_the_holders() -> None:
    pods, dsets = healthy_operator()
    holder = pod("trainer-0", "ml", gpus=1, statuses=[running("main")])
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Pending",
        node_name=None,
        gpus=1,
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    ev = event(
        "gpu-smoke",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.",
        ns="default",
    )
    diags = diagnose.diagnose_cluster(
        pods=[*pods, holder, smoke], events=[ev], daemonsets=dsets, nodes=[node()]
    )
    assert rows(diags) == ["gpu-insufficient"]
    d = diags[0]
    assert d.variant == "held-by-pods"
    assert d.object == "pod default/gpu-smoke"
    assert "ml/trainer-0 holds 1" in d.reason
    assert "1 of 1 allocatable" in d.reason
    assert "kubectl -n ml delete pod trainer-0" in d.fix
    assert "Insufficient nvidia.com/gpu" in d.detail


def test_insufficient_gpu_with_allocatable_missing_is_reported_as_not_registered() -> None:
    pods, dsets = healthy_operator()
    smoke = pod("gpu-smoke", "default", phase="Pending", node_name=None, gpus=1)
    ev = event(
        "gpu-smoke",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        ns="default",
    )
    diags = diagnose.diagnose_cluster(
        pods=[*pods, smoke],
        events=[ev],
        daemonsets=dsets,
        nodes=[node(allocatable=None, capacity=None)],
    )
    assert rows(diags) == ["allocatable-zero"]
    assert "pod default/gpu-smoke Pending" in diags[0].detail


def test_node_not_ready_comes_first() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(ready=False, allocatable=None)]
    )
    assert rows(diags) == ["node-not-ready", "allocatable-zero"]


# --- each allocatable rule and each shortage rule, one case each --------------------------------


def _pending_gpu_pod(name: str, gpus: int, resource: str = "nvidia.com/gpu") -> dict[str, Any]:
    """A Pending pod the scheduler refused for want of GPUs (its FailedScheduling condition)."""
    res = {"limits": {resource: str(gpus)}}
    return pod(
        name,
        "default",
        phase="Pending",
        node_name=None,
        containers=[{"name": "main", "image": "busybox:1.36", "resources": res}],
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": f"0/1 nodes are available: 1 Insufficient {resource}.",
            }
        ],
    )


def test_gpus_registered_under_the_shared_name_the_lab_did_not_ask_for() -> None:
    """The node has ``nvidia.com/gpu.shared`` only, the lab counts ``nvidia.com/gpu``: another
    sharing config renamed them (variant ``renamed``)."""
    shared = node(allocatable=None, capacity=None)
    shared["status"]["allocatable"]["nvidia.com/gpu.shared"] = "4"
    pods, dsets = healthy_operator()
    (d,) = diagnose.diagnose_cluster(pods=pods, events=[], daemonsets=dsets, nodes=[shared])
    assert (d.row, d.variant) == ("allocatable-mismatch", "renamed")
    assert d.reason == (
        "no node has nvidia.com/gpu but nvidia.com/gpu.shared is 4: time-slicing's rename "
        "(renameByDefault) was applied, not expected"
    )
    assert d.fix.startswith("another sharing config renames the GPUs")
    assert "gpu-lab:timeSlicingRename true" in d.fix
    assert d.detail == "DaemonSet gpu-operator/nvidia-device-plugin-daemonset ready 1/1"


def test_a_simulated_node_without_gpus_points_at_sim_gpus() -> None:
    """A kwok node advertises what the sim lab wrote: the fix is simGpus, not the node's GPU."""
    sim = node(allocatable=None, capacity=None)
    sim["metadata"]["annotations"] = {SIMULATED_ANNOTATION: "true"}
    (d,) = diagnose.diagnose_cluster(pods=[], events=[], daemonsets=[], nodes=[sim])
    assert (d.row, d.variant) == ("allocatable-zero", "not-registered")
    assert d.fix == f"simulated lab: {fixes.sim_allocatable()}"
    assert d.detail == "no device-plugin DaemonSet given"


def test_two_nodes_are_named_together() -> None:
    diags = diagnose.diagnose_cluster(
        pods=[],
        events=[],
        daemonsets=[],
        nodes=[node("a", allocatable="0", capacity="0"), node("b", allocatable="0", capacity="0")],
    )
    (d,) = diags
    assert (d.object, d.variant) == ("nodes a, b", "no-devices")
    assert d.reason == "the device plugin registered but found no GPU (capacity 0)"


def test_allocatable_above_expected_count_asks_about_time_slicing() -> None:
    pods, dsets = healthy_operator()
    (d,) = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(allocatable="4", capacity="4")], expected_gpus=1
    )
    assert (d.row, d.variant) == ("allocatable-mismatch", "more")
    assert d.reason == "allocatable nvidia.com/gpu is 4, expected 1"
    assert d.detail == "capacity 4; DaemonSet gpu-operator/nvidia-device-plugin-daemonset ready 1/1"
    assert "is time-slicing on?" in d.fix


def test_a_request_above_what_the_nodes_have() -> None:
    pods, dsets = healthy_operator()
    (d,) = diagnose.diagnose_cluster(
        pods=[*pods, _pending_gpu_pod("big", 2)], events=[], daemonsets=dsets, nodes=[node()]
    )
    assert (d.row, d.variant, d.object) == ("gpu-insufficient", "request-too-large", "pod default/big")
    assert d.reason == "asks for 2 nvidia.com/gpu, more than the 1 allocatable (held now: none)"
    assert d.fix == "lower the pod's nvidia.com/gpu limit to <= 1"
    assert d.detail == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."


def test_a_shortage_nobody_holds_is_a_retry() -> None:
    pods, dsets = healthy_operator()
    (d,) = diagnose.diagnose_cluster(
        pods=[*pods, _pending_gpu_pod("waiting", 1)], events=[], daemonsets=dsets, nodes=[node()]
    )
    assert (d.row, d.variant) == ("gpu-insufficient", "retrying")
    assert d.reason.startswith("asks for 1 nvidia.com/gpu; 1 allocatable and none held by other pods")
    assert d.fix == "wait for the scheduler's next attempt: scripts/kubectl get events -w"


def test_a_request_for_the_shared_name_the_nodes_do_not_have() -> None:
    pods, dsets = healthy_operator()
    asks_shared = _pending_gpu_pod("shared", 1, resource="nvidia.com/gpu.shared")
    (d,) = diagnose.diagnose_cluster(pods=[*pods, asks_shared], events=[], daemonsets=dsets, nodes=[node()])
    assert (d.row, d.variant) == ("gpu-insufficient", "other-resource-name")
    assert d.reason == (
        "asks for 1 nvidia.com/gpu.shared, which no node advertises: the nodes have 1 nvidia.com/gpu"
    )
    assert d.fix == "ask for nvidia.com/gpu in the pod's limits"
