"""One pod's diagnoses: Pending, Failed (:mod:`gpulab.diagnose.pods`)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import diagnose

from .builders import NS, event, healthy_operator, node, pod, rows, running

# --- operator pending -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "variant"),
    [
        ("0/1 nodes are available: 1 Insufficient cpu.", "insufficient-cpu"),
        ("0/1 nodes are available: 1 Insufficient memory.", "insufficient-memory"),
        (
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: "
            "0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            "insufficient-cpu-memory",
        ),
    ],
)
def test_operator_pending_on_cpu_or_memory(message: str, variant: str) -> None:
    operator = pod(
        "gpu-operator-6d8f9c7b5d-q7x2m",
        phase="Pending",
        node_name=None,
        labels={"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
    )
    nfd = pod(
        "gpu-operator-node-feature-discovery-worker-8wz5c",
        phase="Pending",
        node_name=None,
        labels={"app.kubernetes.io/name": "node-feature-discovery"},
    )
    events = [
        event(operator["metadata"]["name"], "FailedScheduling", message),
        event(nfd["metadata"]["name"], "FailedScheduling", message),
    ]
    diags = diagnose.diagnose_cluster(
        pods=[operator, nfd],
        events=events,
        daemonsets=[],
        nodes=[node(allocatable=None, capacity=None)],
    )
    assert rows(diags)[:2] == ["operator-pending", "operator-pending"]
    # Root cause first: the missing allocatable is a consequence and comes after.
    assert rows(diags)[-1] == "allocatable-zero"
    d = diags[0]
    assert d.variant == variant
    assert d.object == f"pod {NS}/gpu-operator-6d8f9c7b5d-q7x2m"
    assert "give the node >= 4 CPUs / 8 GiB (minikube start --cpus 4 --memory 8g)" in d.fix
    assert "Insufficient" in d.detail


def test_admission_refusal_of_the_gpu_is_a_failed_pod() -> None:
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Failed",
        gpus=1,
        reason="UnexpectedAdmissionError",
        message="Allocate failed due to requested number of devices unavailable for "
        "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
    )
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["pod-failed"]
    assert "refused the GPU at admission" in diags[0].fix


# --- each pod rule, one case each ---------------------------------------------------------------

_NO_MATCH = [
    {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.",
    }
]


def _diagnose(*extra: dict[str, Any]) -> list[diagnose.Diagnosis]:
    pods, dsets = healthy_operator()
    return diagnose.diagnose_cluster(pods=[*pods, *extra], events=[], daemonsets=dsets, nodes=[node()])


def test_pending_for_another_reason_says_how_to_compare_selectors_and_taints() -> None:
    (d,) = _diagnose(pod("app", "ml", phase="Pending", node_name=None, conditions=_NO_MATCH))
    assert (d.row, d.object, d.variant, d.blocking) == ("pod-unschedulable", "pod ml/app", "", True)
    assert d.reason == "Pending: the scheduler finds no node for it"
    assert d.detail == "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    assert d.fix.startswith("scripts/kubectl -n ml describe pod app; compare its nodeSelector")


def test_the_dcgm_exporter_pending_does_not_block_and_sorts_last() -> None:
    dcgm = pod(
        "nvidia-dcgm-exporter-abc",
        phase="Pending",
        node_name=None,
        labels={"app": "nvidia-dcgm-exporter"},
        conditions=_NO_MATCH,
    )
    app = pod("app", "ml", phase="Failed", reason="Error")
    diags = _diagnose(dcgm, app)
    assert rows(diags) == ["pod-failed", "pod-unschedulable"]
    assert diags[1].object == f"pod {NS}/nvidia-dcgm-exporter-abc" and not diags[1].blocking


def test_an_operand_running_but_not_ready_names_its_container() -> None:
    toolkit = pod(
        "nvidia-container-toolkit-daemonset-x",
        labels={"app": "nvidia-container-toolkit-daemonset"},
        statuses=[running("toolkit", ready=False)],
    )
    (d,) = _diagnose(toolkit)
    assert (d.row, d.object) == (
        "pod-not-ready",
        f"pod {NS}/nvidia-container-toolkit-daemonset-x/container toolkit",
    )
    assert d.detail == "last log line: (no log line given)"
    assert d.fix == (
        f"scripts/kubectl -n {NS} describe pod nvidia-container-toolkit-daemonset-x; "
        f"scripts/kubectl -n {NS} logs nvidia-container-toolkit-daemonset-x -c toolkit"
    )


def test_a_workload_not_ready_or_succeeded_is_not_diagnosed() -> None:
    assert _diagnose(pod("app", "ml", statuses=[running("main", ready=False)])) == []
    assert _diagnose(pod("done", "ml", phase="Succeeded")) == []


def test_a_bound_pod_without_container_status_is_stuck_creating() -> None:
    (d,) = _diagnose(pod("app", "ml", phase="Pending"))
    assert (d.row, d.object, d.variant) == ("smoke-container-creating", "pod ml/app", "runtime")
    assert d.detail == "no warning event"


def test_a_failed_pod_without_a_gpu_cause_gets_the_plain_fix() -> None:
    evicted = pod(
        "app", "ml", phase="Failed", reason="Evicted", message="The node was low on resource: memory."
    )
    (d,) = _diagnose(evicted)
    assert (d.row, d.reason, d.variant) == ("pod-failed", "phase Failed (Evicted)", "Evicted")
    assert d.detail == "The node was low on resource: memory."
    assert d.fix == "scripts/kubectl -n ml describe pod app; delete it and re-run: make verify"
