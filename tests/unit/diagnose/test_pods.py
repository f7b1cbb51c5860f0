"""One pod's diagnoses: Pending, Failed (:mod:`gpulab.diagnose.pods`)."""

from __future__ import annotations

import pytest

from gpulab import diagnose

from .builders import NS, event, healthy_operator, node, pod, rows

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
