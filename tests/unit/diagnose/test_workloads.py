"""Workload and ClusterPolicy conditions (gpulab.diagnose.workloads), quoted from real reports."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import diagnose
from gpulab.diagnose import workloads
from tests.unit.diagnose.builders import healthy_operator, node


def _obj(kind: str, name: str, *conditions: dict[str, str], ns: str = "gpu-operator") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} if kind == "ClusterPolicy" else {"name": name, "namespace": ns}
    return {"kind": kind, "metadata": meta, "status": {"conditions": list(conditions)}}


def _rows(*objs: dict[str, Any]) -> list[diagnose.Diagnosis]:
    pods, dsets = healthy_operator()
    found = diagnose.diagnose_cluster(pods=pods, events=[], daemonsets=dsets, nodes=[node()], workloads=objs)
    return [d for d in found if d.row.startswith(("workload-", "clusterpolicy-"))]


def test_a_deployment_past_its_progress_deadline() -> None:
    """argoproj/argo-rollouts#1470: 'ProgressDeadlineExceeded: ReplicaSet "mgr-poller-rollout-65985786b7"
    has timed out progressing.'"""
    dep = _obj(
        "Deployment",
        "gpu-operator",
        {
            "type": "Progressing",
            "status": "False",
            "reason": "ProgressDeadlineExceeded",
            "message": 'ReplicaSet "mgr-poller-rollout-65985786b7" has timed out progressing.',
        },
    )
    (d,) = _rows(dep)
    assert d.row == "workload-stalled" and d.object == "deployment gpu-operator/gpu-operator"
    assert d.variant == "ProgressDeadlineExceeded" and "has timed out progressing" in d.detail
    assert "rollout restart deployment/gpu-operator" in d.fix


def test_a_deployment_whose_pods_admission_refuses() -> None:
    """openshift/instaslice-operator#43: ReplicaFailure with 'pods
    "instaslice-operator-controller-manager-55d7c495d4-" is forbidden: unable to validate against
    any security context constraint'."""
    dep = _obj(
        "Deployment",
        "gpu-operator",
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": 'pods "instaslice-operator-controller-manager-55d7c495d4-" is forbidden: '
            "unable to validate against any security context constraint",
        },
    )
    (d,) = _rows(dep)
    assert d.row == "workload-cannot-create"
    assert d.fix.startswith("let the namespace admit its Pods (scripts/kubectl label ns gpu-operator")


def test_a_replicaset_that_cannot_create() -> None:
    """openshift-labs/learn-katacoda#1055: 'ReplicaFailure   True    FailedCreate'."""
    rs = _obj(
        "ReplicaSet",
        "customer-77cc64968b",
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate"},
    )
    (d,) = _rows(rs)
    assert d.row == "workload-cannot-create" and d.object == "replicaset gpu-operator/customer-77cc64968b"


def test_clusterpolicy_reconcile_failed_names_the_operator_log() -> None:
    """gpu-operator v26.7.0 controllers/clusterpolicy_controller.go: Error=True ReconcileFailed with
    "Failed to reconcile <state>: <error>"; the error as rancher/opni#186's operator log shows it:
    'no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"'."""
    policy = _obj(
        "ClusterPolicy",
        "cluster-policy",
        {
            "type": "Error",
            "status": "True",
            "reason": "ReconcileFailed",
            "message": "Failed to reconcile state-dcgm-exporter: "
            'no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"',
        },
    )
    (d,) = _rows(policy)
    assert d.row == "clusterpolicy-error" and d.object == "clusterpolicy cluster-policy"
    assert "logs deploy/gpu-operator" in d.fix


def test_clusterpolicy_not_ready_with_its_states() -> None:
    """NVIDIA/gpu-operator#1310: "ClusterPolicy is not ready, states not ready:
    [state-operator-validation state-device-plugin state-dcgm-exporter gpu-feature-discovery
    state-mig-manager]"."""
    message = (
        "ClusterPolicy is not ready, states not ready: [state-operator-validation state-device-plugin "
        "state-dcgm-exporter gpu-feature-discovery state-mig-manager]"
    )
    policy = _obj(
        "ClusterPolicy",
        "cluster-policy",
        {"type": "Ready", "status": "False", "reason": "OperandNotReady", "message": message},
    )
    (d,) = _rows(policy)
    assert d.row == "clusterpolicy-not-ready" and "state-device-plugin" in d.detail


def test_healthy_conditions_are_no_rows() -> None:
    dep = _obj(
        "Deployment",
        "gpu-operator",
        {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
    )
    policy = _obj(
        "ClusterPolicy", "cluster-policy", {"type": "Ready", "status": "True", "reason": "Reconciled"}
    )
    assert _rows(dep, policy) == []


@pytest.mark.parametrize("rule", workloads.RULES, ids=lambda r: f"{r.kind}-{r.type}")
def test_every_rule_cites_a_report_quoted_here(rule: workloads.ConditionRule) -> None:
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    assert rule.sources and all(s in text for s in rule.sources)
