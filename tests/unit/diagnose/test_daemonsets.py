"""Operand DaemonSets (:mod:`gpulab.diagnose.daemonsets`)."""

from __future__ import annotations

from gpulab import diagnose

from .builders import daemonset, event, node, rows

# --- DaemonSet on no node ----------------------------------------------------------------------


def test_daemonset_with_no_desired_pods_names_the_missing_labels() -> None:
    dsets = [
        daemonset(
            "nvidia-device-plugin-daemonset",
            desired=0,
            ready=0,
            node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"},
        ),
        # Normal when MIG is off: never reported.
        daemonset(
            "nvidia-mig-manager",
            desired=0,
            ready=0,
            node_selector={"nvidia.com/gpu.deploy.mig-manager": "true"},
        ),
    ]
    plain = node(allocatable=None, capacity=None, labels={"kubernetes.io/hostname": "gpu-lab"})
    diags = diagnose.diagnose_cluster(pods=[], events=[], daemonsets=dsets, nodes=[plain])
    assert rows(diags) == ["daemonset-no-nodes", "allocatable-zero"]
    d = diags[0]
    assert d.object == "daemonset gpu-operator/nvidia-device-plugin-daemonset"
    assert "nvidia.com/gpu.deploy.device-plugin=true" in d.reason
    assert "node gpu-lab lacks nvidia.com/gpu.deploy.device-plugin=true" in d.detail
    assert "kubectl get nodes --show-labels" in d.fix
    assert "kubectl label node gpu-lab nvidia.com/gpu.deploy.device-plugin=true" in d.fix


def test_daemonset_not_ready_without_pods_is_reported_once() -> None:
    dsets = [daemonset("gpu-feature-discovery", desired=1, ready=0)]
    ev = event(
        "gpu-feature-discovery",
        "FailedCreate",
        'Error creating: pods "gpu-feature-discovery-" is forbidden: exceeded quota',
        kind="DaemonSet",
    )
    diags = diagnose.diagnose_cluster(pods=[], events=[ev], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["daemonset-not-ready"]
    assert "exceeded quota" in diags[0].detail
