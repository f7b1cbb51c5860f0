"""Operand DaemonSets (:mod:`gpulab.diagnose.daemonsets`)."""

from __future__ import annotations

from gpulab import diagnose

from .builders import daemonset, event, node, pod, rows, waiting

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


def test_daemonset_placed_by_affinity_or_by_nothing() -> None:
    """Without a nodeSelector the reason names the node affinity (quoted as the evidence), or
    says the DaemonSet schedules nowhere; no label is suggested."""
    by_affinity = daemonset("gpu-feature-discovery", desired=0, ready=0)
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    by_affinity["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": affinity}
    (d,) = diagnose.diagnose_cluster(pods=[], events=[], daemonsets=[by_affinity], nodes=[node()])
    assert d.reason == "desiredNumberScheduled is 0: no node matches its node affinity"
    assert d.detail == str(affinity) and "to test by hand" not in d.fix
    assert (d.variant, d.blocking) == ("gpu-feature-discovery", True)
    (nowhere,) = diagnose.diagnose_cluster(
        pods=[], events=[], daemonsets=[daemonset("gpu-feature-discovery", desired=0, ready=0)], nodes=[]
    )
    assert nowhere.reason == "desiredNumberScheduled is 0: it schedules on no node"
    assert nowhere.detail == "no nodes given"


def test_daemonset_refused_a_runtime_class_names_the_cause() -> None:
    """A FailedCreate event with a known message: its cause in the reason, its fix first; the
    DCGM exporter's DaemonSet does not block."""
    dsets = [daemonset("nvidia-dcgm-exporter", desired=1, ready=0)]
    ev = event(
        "nvidia-dcgm-exporter",
        "FailedCreate",
        'Error creating: pods "nvidia-dcgm-exporter-" is forbidden: RuntimeClass "nvidia" not found',
        kind="DaemonSet",
    )
    (d,) = diagnose.diagnose_cluster(pods=[], events=[ev], daemonsets=dsets, nodes=[node()])
    assert (d.row, d.variant, d.blocking) == ("daemonset-not-ready", "runtimeclass-missing", False)
    assert d.reason.startswith("0/1 pods ready: ")
    assert d.fix.endswith(
        "; scripts/kubectl -n gpu-operator describe ds nvidia-dcgm-exporter; "
        "scripts/kubectl -n gpu-operator get pods -o wide | grep nvidia-dcgm-exporter"
    )


def test_daemonset_not_ready_is_left_to_its_pods_diagnosis() -> None:
    dsets = [daemonset("nvidia-device-plugin-daemonset", desired=1, ready=0)]
    crashing = pod(
        "nvidia-device-plugin-daemonset-x2k9p",
        labels={"app": "nvidia-device-plugin-daemonset"},
        statuses=[waiting("nvidia-device-plugin", "CrashLoopBackOff", restartCount=3)],
    )
    diags = diagnose.diagnose_cluster(pods=[crashing], events=[], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["device-plugin-crashloop"]
