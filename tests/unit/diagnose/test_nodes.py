"""Nodes: readiness, allocatable ``nvidia.com/gpu`` and GPU shortages (:mod:`gpulab.diagnose.nodes`)."""

from __future__ import annotations

from gpulab import diagnose

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
