"""A namespace stuck Terminating (:mod:`gpulab.diagnose.namespaces`).

The condition messages are the namespace controller's, as quoted in real reports:
bpfman/bpfman-operator#432 (content remaining) and opendatahub-io/opendatahub-operator#140
(finalizers remaining)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gpulab import diagnose

NOW = datetime(2026, 11, 29, 10, 20, tzinfo=UTC)


def _ns(conditions: list[dict[str, Any]], phase: str = "Terminating") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "gpu-operator", "deletionTimestamp": "2026-11-29T10:05:00Z"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": phase, "conditions": conditions},
    }


def _cond(kind: str, status: str, message: str) -> dict[str, Any]:
    return {"type": kind, "status": status, "message": message, "lastTransitionTime": "2026-11-29T10:05:00Z"}


def test_finalizers_remaining_name_the_finalizer_and_how_to_clear_it() -> None:
    ns = _ns(
        [
            _cond("NamespaceDeletionDiscoveryFailure", "False", "All resources successfully discovered"),
            _cond(
                "NamespaceContentRemaining",
                "True",
                "Some resources are remaining: configmaps. has 1 resource instances, daemonsets.apps has 1 "
                "resource instances",
            ),
            _cond(
                "NamespaceFinalizersRemaining",
                "True",
                "Some content in the namespace has finalizers remaining: "
                "kfdef-finalizer.kfdef.apps.kubeflow.org",
            ),
        ]
    )
    diags = diagnose.diagnose_cluster(pods=[], events=[], daemonsets=[], nodes=[], namespaces=[ns], now=NOW)
    assert [d.row for d in diags] == ["namespace-terminating"]
    d = diags[0]
    assert d.object == "namespace gpu-operator" and d.variant == "finalizers"
    assert "stuck Terminating for 15m 0s" in d.reason
    assert "kfdef-finalizer.kfdef.apps.kubeflow.org" in d.detail and "daemonsets.apps" in d.detail
    assert (
        "scripts/kubectl -n gpu-operator get configmaps,daemonsets.apps -o name | xargs scripts/kubectl "
        "-n gpu-operator "
        'patch --type=merge -p \'{"metadata":{"finalizers":null}}\'' in d.fix
    )
    assert "(kfdef-finalizer.kfdef.apps.kubeflow.org)" in d.fix
    assert "spec.finalizers: kubernetes" in d.detail


def test_content_remaining_discovery_failure_and_a_namespace_that_is_fine() -> None:
    content = diagnose.diagnose_namespace(
        _ns(
            [
                _cond(
                    "NamespaceContentRemaining",
                    "True",
                    "Some resources are remaining: pods. has 2 resource instances",
                )
            ]
        )
    )
    assert content is not None and content.variant == "content"
    assert (
        "scripts/kubectl -n gpu-operator get pods -o name | xargs scripts/kubectl -n gpu-operator delete"
        in content.fix
    )
    discovery = diagnose.diagnose_namespace(
        _ns(
            [
                _cond(
                    "NamespaceDeletionDiscoveryFailure",
                    "True",
                    "Discovery failed for some groups, 1 failing: unable to retrieve the complete "
                    "list of server "
                    "APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request",
                )
            ]
        )
    )
    assert discovery is not None and discovery.variant == "discovery"
    assert "kubectl get apiservice | grep False" in discovery.fix
    waiting = diagnose.diagnose_namespace(_ns([]))
    assert waiting is not None and waiting.variant == "waiting" and "for" not in waiting.reason.split(":")[0]
    assert diagnose.diagnose_namespace(_ns([], phase="Active")) is None
