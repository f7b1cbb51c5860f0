"""ops.teardown: a cluster deleted by hand is confirmed gone before its state is dropped."""

from __future__ import annotations

import pytest

from ops import teardown

STACK = "urn:pulumi:sim::gpu-lab::pulumi:pulumi:Stack::gpu-lab-sim"
CMD = "urn:pulumi:sim::gpu-lab::gpulab:sim:SimCluster$command:local:Command::sim-cluster"
PROV = "urn:pulumi:sim::gpu-lab::pulumi:providers:kubernetes::k8s"
OP = "urn:pulumi:sim::gpu-lab::gpulab:gpu_operator:GpuOperator"
NS = f"{OP}$kubernetes:core/v1:Namespace::gpu-operator-namespace"
REL = f"{OP}$kubernetes:helm.sh/v3:Release::gpu-operator-release"
GATE = "urn:pulumi:sim::gpu-lab::gpulab:gpu_operator:GpuOperator$command:local:Command::gpu-operator-gate"


def deployment() -> dict:
    return {
        "manifest": {},
        "resources": [
            {"urn": STACK, "type": "pulumi:pulumi:Stack"},
            {"urn": CMD, "type": "command:local:Command", "parent": STACK},
            {"urn": PROV, "type": "pulumi:providers:kubernetes", "dependencies": [CMD]},
            {"urn": NS, "type": "kubernetes:core/v1:Namespace", "provider": PROV + "::id"},
            {"urn": REL, "type": "kubernetes:helm.sh/v3:Release", "dependencies": [NS]},
            {
                "urn": GATE,
                "type": "command:local:Command",
                "dependencies": [REL, CMD],
                "propertyDependencies": {"triggers": [REL], "environment": [CMD]},
            },
        ],
        "pending_operations": [{"resource": {"urn": REL}, "type": "creating"}],
    }


def test_prune_removes_kubernetes_objects_and_every_reference_to_them() -> None:
    new, removed = teardown.prune_kubernetes(deployment())
    assert removed == [NS, REL]
    urns = [r["urn"] for r in new["resources"]]
    assert urns == [STACK, CMD, PROV, GATE]  # the provider and the commands stay
    gate = new["resources"][-1]
    assert gate["dependencies"] == [CMD]
    assert gate["propertyDependencies"] == {"triggers": [], "environment": [CMD]}
    assert new["pending_operations"] == []


def answers(verdict: str, detail: str = "") -> object:
    return lambda: (verdict, detail)


def test_plan_does_nothing_when_the_api_server_answers() -> None:
    new, removed, why = teardown.plan(
        "sim", "gpu-lab", deployment(), answers(teardown.ANSWERS), lambda: (True, "x")
    )
    assert new is None and removed == [] and "answers" in why


def test_plan_refuses_an_existing_cluster_that_does_not_answer_and_names_the_forget_flag() -> None:
    with pytest.raises(teardown.TeardownError) as e:
        teardown.plan(
            "existing",
            "c",
            deployment(),
            answers(teardown.SILENT, "connection refused"),
            lambda: (True, "x"),
            stack="existing",
        )
    msg = str(e.value)
    assert "does not own it" in msg and "connection refused" in msg
    assert "`GPULAB_STACK=existing make destroy FORGET=1`" in msg


def test_forget_drops_an_existing_clusters_objects_from_the_state_only() -> None:
    new, removed, why = teardown.plan(
        "existing",
        "c",
        deployment(),
        answers(teardown.SILENT, "timed out"),
        lambda: (False, "x"),
        forget=True,
    )
    assert new is not None and removed == [NS, REL] and "forgetting" in why


def test_plan_prunes_a_cluster_confirmed_gone() -> None:
    new, removed, why = teardown.plan(
        "minikube",
        "gpu-lab",
        deployment(),
        answers(teardown.SILENT, "the API server at https://192.168.49.2:8443 did not answer"),
        lambda: (True, "minikube profile gpu-lab is absent"),
    )
    assert new is not None and removed == [NS, REL]
    assert "is gone" in why and "minikube profile gpu-lab is absent" in why


def test_plan_prunes_an_owned_cluster_that_exists_but_does_not_answer() -> None:
    # Its own delete command (run by the destroy that follows) removes it whole: a stopped
    # minikube profile or a sim lab whose etcd froze must not keep make destroy from finishing.
    new, removed, why = teardown.plan(
        "minikube",
        "lab1",
        deployment(),
        answers(teardown.SILENT, "etcd did not answer the API server"),
        lambda: (False, "minikube profile lab1 is listed"),
    )
    assert new is not None and removed == [NS, REL]
    assert "does not answer (minikube profile lab1 is listed; etcd did not answer the API server)" in why


def test_plan_never_deletes_in_another_cluster_and_names_both() -> None:
    detail = (
        "recorded https://127.0.0.1:32766 (..., kube-system uid A), now https://127.0.0.1:32766 (..., uid B)"
    )
    with pytest.raises(teardown.TeardownError) as e:
        teardown.plan(
            "sim",
            "gpu-lab",
            deployment(),
            answers(teardown.ANOTHER, detail),
            lambda: (False, ""),
            stack="sim",
        )
    msg = str(e.value)
    assert "another cluster" in msg and "uid A" in msg and "uid B" in msg
    assert "`GPULAB_STACK=sim make destroy FORGET=1`" in msg
    new, removed, _ = teardown.plan(
        "sim", "gpu-lab", deployment(), answers(teardown.ANOTHER, detail), lambda: (False, ""), forget=True
    )
    assert new is not None and removed == [NS, REL]


def test_plan_with_nothing_of_kubernetes_in_the_state_does_nothing() -> None:
    empty = {"resources": [deployment()["resources"][0]]}
    new, removed, why = teardown.plan("sim", "p", empty, answers(teardown.SILENT), lambda: (True, ""))
    assert new is None and removed == [] and "no Kubernetes resources" in why
