"""gpulab.kube.gate_rules: when the state says the GPUs will not come by waiting."""

from __future__ import annotations

from typing import Any

from gpulab.config.mig import Expected
from gpulab.kube import gate_rules as rules
from tests.unit.diagnose.builders import node


def plugin_pod(restarts: int = 0, waiting: str | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        "metadata": {"name": "nvidia-device-plugin-daemonset-x2k"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "nvidia-device-plugin",
                    "restartCount": restarts,
                    "state": state,
                    "ready": not waiting,
                }
            ],
        },
    }


def ds(desired: int, ready: int, observed: int = 1, generation: int = 1) -> dict[str, Any]:
    return {
        "metadata": {"name": "nvidia-device-plugin-daemonset", "generation": generation},
        "status": {"desiredNumberScheduled": desired, "numberReady": ready, "observedGeneration": observed},
    }


def mig_node(alloc: dict[str, str]) -> dict[str, Any]:
    n = node(allocatable=None, capacity=None)
    n["status"]["allocatable"].update(alloc)
    n["status"]["capacity"].update(alloc)
    return n


def test_grace_counts_how_long_a_condition_has_held_and_resets_when_it_clears() -> None:
    g = rules.Grace(10)
    assert not g.expired("absent", True, 100.0)
    assert not g.expired("absent", True, 109.0)
    assert g.expired("absent", True, 110.0)
    assert not g.expired("absent", False, 111.0)
    assert not g.expired("absent", True, 112.0)  # a new stretch starts


def test_a_plugin_restarted_three_times_is_crash_looping_for_good() -> None:
    """The validator's plugin-validation finds nothing allocatable while the plugin restarts
    (NVIDIA/gpu-operator#1190)."""
    assert rules.crash_looping([plugin_pod(0)]) is None
    what, final = rules.crash_looping([plugin_pod(1, "CrashLoopBackOff")]) or ("", True)
    assert not final and "CrashLoopBackOff, 1 restart(s)" in what
    what, final = rules.crash_looping([plugin_pod(3, "CrashLoopBackOff")]) or ("", False)
    assert final and what.startswith("nvidia-device-plugin-daemonset-x2k/nvidia-device-plugin")
    stuck = rules.crash_stuck(what, "gpu-operator")
    assert stuck.row == "device-plugin-crashloop" and "--previous" in stuck.fix


def test_placement_absent_no_nodes_or_still_possible() -> None:
    """The operator creates no operand DaemonSet when it found no GPU node, and counts
    desiredNumberScheduled 0 as ready (gpu-operator controllers/object_controls.go)."""
    assert rules.placement(None) == "absent"
    assert rules.placement(ds(0, 0)) == "no-nodes"
    # The DaemonSet controller has not seen this generation yet: 0 means nothing yet.
    assert rules.placement(ds(0, 0, observed=1, generation=2)) is None
    assert rules.placement(ds(1, 0)) is None
    policy = {
        "status": {
            "state": "ready",
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "NoGPUNodes",
                    "message": "No GPU node found, watching for new nodes to join the cluster.",
                }
            ],
        }
    }
    stuck = rules.placement_stuck("absent", "nvidia-device-plugin-daemonset", "gpu-operator", policy)
    assert "does not exist" in stuck.cause and "NoGPUNodes: No GPU node found" in stuck.cause
    assert "pci-10de.present" in stuck.fix
    no_nodes = rules.placement_stuck("no-nodes", "nvidia-device-plugin-daemonset", "gpu-operator", None)
    assert "desiredNumberScheduled 0" in no_nodes.cause and "nodeSelector" in no_nodes.fix


def test_a_ready_node_without_the_key_is_absent() -> None:
    """Capacity lists cpu, memory and pods only (NVIDIA/k8s-device-plugin#834)."""
    key, cause = rules.resources_verdict([node(allocatable=None, capacity=None)], Expected("none", 1)) or (
        "",
        "",
    )
    assert key == "absent" and "no node has nvidia.com/gpu in status.allocatable" in cause
    stuck = rules.resources_stuck(key, cause, "gpu-lab", simulated=False)
    assert stuck.row == "allocatable-zero" and "minikube -p gpu-lab ssh -- nvidia-smi" in stuck.fix
    assert "simGpus" in rules.resources_stuck(key, cause, "gpu-lab", simulated=True).fix


def test_allocatable_zero_with_capacity_is_unhealthy_devices() -> None:
    """capacity 16, allocatable 0 (NVIDIA/k8s-device-plugin#58, "allocatable stuck at zero")."""
    key, cause = rules.resources_verdict([node(allocatable="0", capacity="16")], Expected("none", 16)) or (
        "",
        "",
    )
    assert key == "zero" and "devices unhealthy" in cause
    logs = "scripts/kubectl -n kube-system logs -l app.kubernetes.io/name=own-plugin --tail=50"
    stuck = rules.resources_stuck(key, cause, "gpu-lab", False, logs, unhealthy=True)
    assert stuck.row == "allocatable-zero" and "grep -i xid" in stuck.fix and logs in stuck.fix
    # Registered with no GPU at all (capacity 0): whether the node sees one, then the log.
    plain = rules.resources_stuck(key, cause, "gpu-lab", False, logs)
    assert "check the node sees the GPU" in plain.fix and logs in plain.fix


def test_a_crash_loop_fix_names_the_plugins_own_pods() -> None:
    stuck = rules.crash_stuck(
        "p/c: CrashLoopBackOff, 3 restart(s)", "kube-system", "app.kubernetes.io/name=own"
    )
    assert "kubectl -n kube-system logs -l app.kubernetes.io/name=own --previous" in stuck.fix


def test_a_count_other_than_expected_is_a_mismatch_and_the_right_count_is_done() -> None:
    key, cause = rules.resources_verdict([node(allocatable="1")], Expected("none", 2)) or ("", "")
    assert key == "mismatch" and "is 1, expected 2" in cause
    assert rules.resources_stuck(key, cause, "gpu-lab", False).row == "allocatable-mismatch"
    assert rules.resources_verdict([node(allocatable="2", capacity="2")], Expected("none", 2)) is None
    assert rules.resources_verdict([node(allocatable="2")], Expected("none")) is None


def test_no_ready_node_keeps_waiting() -> None:
    assert (rules.resources_verdict([node(ready=False)], Expected("none", 1)) or ("",))[0] == "not-ready"


def test_mixed_waits_for_the_expected_mig_resources_and_ignores_gpu_zero() -> None:
    want = Expected("mixed", 0, {"nvidia.com/mig-1g.18gb": 7})
    good = mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7"})
    assert rules.resources_verdict([good], want) is None
    assert rules.resources_verdict([good], Expected("mixed")) is None
    fewer = mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "6"})
    assert (rules.resources_verdict([fewer], want) or ("",))[0] == "mismatch"
    key, cause = rules.resources_verdict([mig_node({"nvidia.com/gpu": "1"})], want) or ("", "")
    assert key == "absent" and "nvidia.com/mig-*" in cause
    zero = mig_node({"nvidia.com/mig-1g.18gb": "0"})
    assert (rules.resources_verdict([zero], Expected("mixed")) or ("",))[0] == "zero"
