"""Helm errors (:mod:`gpulab.diagnose.helm`)."""

from __future__ import annotations

from gpulab import diagnose

from .builders import event, healthy_operator, node, pod

# --- Helm -------------------------------------------------------------------------------------


def test_helm_name_in_use_gives_the_exact_uninstall() -> None:
    d = diagnose.diagnose_helm_error("Error: INSTALLATION FAILED: cannot re-use a name that is still in use")
    assert d is not None
    assert d.row == "helm-name-in-use"
    assert "helm uninstall gpu-operator -n gpu-operator" in d.fix
    assert d.fix.endswith("; then make lab again")


def test_helm_timeout_without_cluster_state_says_how_to_look() -> None:
    d = diagnose.diagnose_helm_error("Error: INSTALLATION FAILED: context deadline exceeded")
    assert d is not None
    assert d.row == "helm-timeout"
    assert d.variant == "no-cluster-state"
    assert "kubectl -n gpu-operator get pods" in d.fix


def test_helm_timeout_names_the_pod_that_was_not_ready() -> None:
    operator = pod(
        "gpu-operator-6d8f9c7b5d-q7x2m",
        phase="Pending",
        node_name=None,
        labels={"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
    )
    ev = event(
        "gpu-operator-6d8f9c7b5d-q7x2m",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient cpu.",
    )
    d = diagnose.diagnose_helm_error(
        "Error: UPGRADE FAILED: timed out waiting for the condition",
        pods=[operator],
        events=[ev],
        daemonsets=[],
        nodes=[node(allocatable=None, capacity=None)],
    )
    assert d is not None
    assert d.row == "helm-timeout"
    assert d.variant == "operator-pending"
    assert d.object == "pod gpu-operator/gpu-operator-6d8f9c7b5d-q7x2m"
    assert "Insufficient cpu" in d.detail
    assert "minikube start --cpus 4 --memory 8g" in d.fix
    assert "timed out" in d.reason


def test_helm_timeout_with_healthy_cluster_suggests_a_longer_wait() -> None:
    pods, dsets = healthy_operator()
    d = diagnose.diagnose_helm_error(
        "Error: context deadline exceeded", pods=pods, events=[], daemonsets=dsets, nodes=[node()]
    )
    assert d is not None
    assert d.variant == "slow"
    assert "operatorTimeoutSeconds" in d.fix


def test_helm_leftover_crd() -> None:
    d = diagnose.diagnose_helm_error(
        "Error: INSTALLATION FAILED: rendered manifests contain a resource that already exists. "
        'Unable to continue with install: CustomResourceDefinition "clusterpolicies.nvidia.com" '
        'in namespace "" exists and cannot be imported into the current release: invalid '
        "ownership metadata"
    )
    assert d is not None
    assert d.row == "helm-resource-exists"
    assert "kubectl delete customresourcedefinition clusterpolicies.nvidia.com" in d.fix


def test_helm_unknown_error_is_none() -> None:
    assert diagnose.diagnose_helm_error("Error: something nobody has seen") is None


def test_release_into_a_namespace_that_is_still_terminating() -> None:
    msg = (
        'Error: INSTALLATION FAILED: create: failed to create: secrets "sh.helm.release.v1.gpu-operator.v1" '
        "is forbidden: unable to create new content in namespace gpu-operator because it is being terminated"
    )
    d = diagnose.diagnose_helm_error(msg)
    assert d is not None and d.row == "helm-namespace-terminating"
    assert d.object == "namespace gpu-operator"
    assert "kubectl get ns gpu-operator" in d.fix
    provider = diagnose.diagnose_helm_error(
        'object is being deleted: namespaces "gpu-operator" already exists'
    )
    assert provider is not None and provider.row == "helm-namespace-terminating"
