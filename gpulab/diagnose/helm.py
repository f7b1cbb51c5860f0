"""Helm errors of the GPU Operator release (the ``helm-*`` rows)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from gpulab.config.lab import DEFAULT_CHART_REPO
from gpulab.core import fixes_operator
from gpulab.core.names import OPERATOR_NAMESPACE, OPERATOR_RELEASE
from gpulab.diagnose.cluster import diagnose_cluster
from gpulab.diagnose.fields import _last_line, _one_line
from gpulab.diagnose.record import DEFAULT_PROFILE, Diagnosis, Json

_EXISTS_RE: Final = re.compile(r'(?P<kind>[A-Za-z]+) "(?P<name>[^"]+)" in namespace "(?P<ns>[^"]*)" exists')
# The API server's refusal while a namespace terminates (k8s.io/apiserver, NamespaceLifecycle
# admission), and the Kubernetes provider's when it re-creates the namespace too early.
_TERMINATING_RE: Final = re.compile(
    r"in namespace (?P<ns>[a-z0-9-]+) because it is being terminated|"
    r'object is being deleted: namespaces "(?P<ns2>[a-z0-9-]+)" already exists'
)
_KUBEVERSION_RE: Final = re.compile(
    r"chart requires kubeVersion: (?P<want>\S+) which is incompatible with Kubernetes "
    r"(?P<have>\S+)"
)


def diagnose_helm_error(
    message: str,
    namespace: str = OPERATOR_NAMESPACE,
    release: str = OPERATOR_RELEASE,
    *,
    pods: Sequence[Json] | None = None,
    events: Sequence[Json] | None = None,
    daemonsets: Sequence[Json] | None = None,
    nodes: Sequence[Json] | None = None,
    logs: Mapping[str, str] | None = None,
    host_max_cuda: str | None = None,
    profile: str = DEFAULT_PROFILE,
) -> Diagnosis | None:
    """Map a Helm error message (install/upgrade output) to a diagnosis, or None if unknown.

    Rows: ``helm-name-in-use`` (``cannot re-use a name that is still in use``: an earlier
    failed release; the fix is the exact ``helm uninstall`` command, then ``pulumi up``),
    ``helm-operation-in-progress``, ``helm-resource-exists`` (objects left by an earlier
    install, typically the CRDs, which ``helm uninstall`` keeps), ``helm-kube-version``,
    ``helm-cluster-unreachable``, ``helm-chart-unreachable``, ``helm-namespace-terminating``
    (the release's namespace is still being deleted) and ``helm-timeout``
    (``context deadline exceeded`` / ``timed out waiting for the condition``).

    For a timeout, pass the cluster state (same arguments as :func:`diagnose_cluster`): the
    diagnosis then names the first blocking object that was not ready and carries its fix,
    instead of only "timed out". ``profile`` is the cluster named in fix commands.
    """
    text = message.strip()
    first_line = _one_line(_last_line(text) if "Error:" not in text else text, 500)
    obj = f"helm release {namespace}/{release}"
    again = "then make lab again"
    if "cannot re-use a name that is still in use" in text:
        return Diagnosis(
            row="helm-name-in-use",
            object=obj,
            reason="a release of that name exists from an earlier, failed install",
            detail=first_line,
            fix=f"helm -n {namespace} status {release}; helm uninstall {release} -n {namespace}; {again}",
        )
    if "another operation (install/upgrade/rollback) is in progress" in text:
        return Diagnosis(
            row="helm-operation-in-progress",
            object=obj,
            reason="the release is stuck in a pending state from an interrupted run",
            detail=first_line,
            fix=f"helm -n {namespace} history {release}; helm -n {namespace} rollback {release} "
            f"(to the last deployed revision) or helm uninstall {release} -n {namespace}; {again}",
        )
    m = _TERMINATING_RE.search(text)
    if m:
        ns = m.group("ns") or m.group("ns2") or namespace
        return Diagnosis(
            row="helm-namespace-terminating",
            object=f"namespace {ns}",
            reason="the namespace is still being deleted (Terminating), so nothing can be created in it",
            detail=first_line,
            fix=f"scripts/kubectl get ns {ns} -o jsonpath='{{.status.conditions}}' (what holds it); "
            f"{fixes_operator.namespace_held(ns)}; {again}",
        )
    m = _EXISTS_RE.search(text)
    if m and "exists and cannot be imported" in text:
        kind, name, ns = m.group("kind"), m.group("name"), m.group("ns")
        where = f" -n {ns}" if ns else ""
        crd = kind == "CustomResourceDefinition"
        return Diagnosis(
            row="helm-resource-exists",
            object=f"{kind.lower()} {ns + '/' if ns else ''}{name}",
            reason="left over from an earlier install"
            + (" (helm uninstall keeps CRDs unless operator.cleanupCRD=true)" if crd else ""),
            detail=first_line,
            fix=f"scripts/kubectl delete {kind.lower()}{where} {name}"
            + (" (this also deletes every object of that kind)" if crd else "")
            + f"; {again}",
        )
    m = _KUBEVERSION_RE.search(text)
    if m:
        return Diagnosis(
            row="helm-kube-version",
            object=obj,
            reason=f"the chart requires Kubernetes {m.group('want')}, the cluster reports {m.group('have')}",
            detail=first_line,
            fix="pick a chart version that supports this Kubernetes (scripts/pulumi config set gpu-lab:"
            "chartVersion ...) or a Kubernetes the chart supports (scripts/pulumi config set gpu-lab:"
            "kubernetesVersion ...); a self-built control plane must stamp its version",
        )
    if "Kubernetes cluster unreachable" in text:
        return Diagnosis(
            row="helm-cluster-unreachable",
            object=obj,
            reason="Helm cannot reach the API server",
            detail=first_line,
            fix=f"minikube -p {profile} status; scripts/kubectl get nodes; make destroy && make lab "
            "if the cluster was deleted outside Pulumi",
        )
    if re.search(r"context deadline exceeded|timed out waiting for the condition", text):
        state = (pods, events, daemonsets, nodes)
        return _helm_timeout(text, namespace, release, state, logs, host_max_cuda, profile)
    if re.search(
        r"failed to (?:fetch|download)|no such host|could not find protocol|"
        r"repo .* not found|chart .* not found|x509:",
        text,
        re.IGNORECASE,
    ):
        return Diagnosis(
            row="helm-chart-unreachable",
            object=obj,
            reason="the chart cannot be downloaded from its repository",
            detail=first_line,
            fix=f"check the network to {DEFAULT_CHART_REPO}; offline, install "
            "from a local copy: scripts/pulumi config set gpu-lab:chartPath <dir of the gpu-operator chart> "
            f"(or export GPULAB_CHART_PATH); {again}",
        )
    return None


def _helm_timeout(
    text: str,
    namespace: str,
    release: str,
    state: tuple[Sequence[Json] | None, ...],
    logs: Mapping[str, str] | None,
    host_max_cuda: str | None,
    profile: str,
) -> Diagnosis:
    pods, events, daemonsets, nodes = state
    obj = f"helm release {namespace}/{release}"
    line = _one_line(text, 300)
    cleanup = (
        "then make lab again (if it then says 'cannot re-use a name': "
        f"helm uninstall {release} -n {namespace})"
    )
    if pods is None and events is None and daemonsets is None and nodes is None:
        return Diagnosis(
            row="helm-timeout",
            object=obj,
            reason="Helm's wait timed out before the release's pods were ready",
            detail=line,
            fix=f"find the pod that is not ready: scripts/kubectl -n {namespace} get pods; "
            f"scripts/kubectl -n {namespace} describe pod <it>; {cleanup}",
            variant="no-cluster-state",
        )
    found = diagnose_cluster(
        pods=pods or [],
        events=events or [],
        daemonsets=daemonsets or [],
        nodes=nodes or [],
        logs=logs,
        host_max_cuda=host_max_cuda,
        profile=profile,
    )
    blocking = [d for d in found if d.blocking]
    if not blocking:
        return Diagnosis(
            row="helm-timeout",
            object=obj,
            reason="Helm's wait timed out but no failing object was found: the pods were "
            "probably only slow (image pulls on a first install)",
            detail=line,
            fix="raise the wait: scripts/pulumi config set gpu-lab:operatorTimeoutSeconds 1200; " + cleanup,
            variant="slow",
        )
    first = blocking[0]
    return Diagnosis(
        row="helm-timeout",
        object=first.object,
        reason=f"Helm's wait timed out; first not-ready object: {first.reason}",
        detail=f"[{first.row}] {first.detail}; helm: {line}",
        fix=f"{first.fix}; {cleanup}",
        blocking=first.blocking,
        variant=first.row,
    )
