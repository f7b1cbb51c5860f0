"""gpulab.ops.teardown: a cluster deleted by hand is confirmed gone before its state is dropped."""

from __future__ import annotations

import pytest

from gpulab.ops import teardown

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


def test_plan_does_nothing_when_the_api_server_answers() -> None:
    new, removed, why = teardown.plan("sim", "gpu-lab", deployment(), lambda: True, lambda: (True, "x"))
    assert new is None and removed == [] and "answers" in why


def test_plan_never_prunes_an_existing_cluster() -> None:
    new, _, why = teardown.plan("existing", "c", deployment(), lambda: False, lambda: (True, "x"))
    assert new is None and "never pruned" in why and "existing" in why


def test_plan_prunes_a_cluster_confirmed_gone() -> None:
    new, removed, why = teardown.plan(
        "minikube",
        "gpu-lab",
        deployment(),
        lambda: False,
        lambda: (True, "minikube profile gpu-lab is absent"),
    )
    assert new is not None and removed == [NS, REL]
    assert "gone (minikube profile gpu-lab is absent)" in why


def test_plan_keeps_the_state_of_a_stopped_cluster_and_says_how_to_start_it() -> None:
    with pytest.raises(teardown.TeardownError) as e:
        teardown.plan(
            "minikube",
            "lab1",
            deployment(),
            lambda: False,
            lambda: (False, "minikube profile lab1 is listed"),
        )
    msg = str(e.value)
    assert (
        "nothing was removed" in msg and "minikube start -p lab1" in msg and "minikube delete -p lab1" in msg
    )


def test_plan_keeps_the_state_when_it_cannot_tell() -> None:
    with pytest.raises(teardown.TeardownError, match="cannot be told"):
        teardown.plan("kind", "k", deployment(), lambda: False, lambda: (None, "kind is not on PATH"))
