"""Workload and operator conditions: what Deployments, ReplicaSets and the ClusterPolicy say.

A table of :class:`ConditionRule`: each names the object kind, the condition (type, status,
reason) that means it is stuck, the row it becomes and its fix. The conditions, as upstream
writes them:

* Deployment ``Progressing`` ``False`` with reason ``ProgressDeadlineExceeded`` ("ReplicaSet
  "x" has timed out progressing."): the deployment controller gave up waiting
  (``spec.progressDeadlineSeconds``, 600 s by default); ``ReplicaFailure`` ``True`` (reason
  ``FailedCreate``): the ReplicaSet cannot create its Pods, e.g. admission refused them
  ("pods "x" is forbidden: ...") - kubernetes pkg/controller/deployment/util/deployment_util.go
  and pkg/controller/replicaset (the condition types in the apps/v1 API);
* ClusterPolicy ``Error`` ``True`` with reason ``ReconcileFailed`` ("Failed to reconcile
  <state>: <error>"), or ``Ready`` ``False`` with ``OperandNotReady`` / ``NFDLabelsMissing`` /
  ``NoGPUNodes``: gpu-operator v26.7.0 ``internal/conditions/consts.go`` and
  ``controllers/clusterpolicy_controller.go``.

Pure: ``kubectl get -o json`` items in, :class:`~gpulab.diagnose.record.Diagnosis` out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from gpulab.core import fixes
from gpulab.diagnose.fields import _get, _name, _ns, _one_line
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _ROLE_RANK


@dataclass(frozen=True)
class ConditionRule:
    """One row: ``kind`` (``Deployment``, ``ReplicaSet``, ``ClusterPolicy``), the condition
    ``type``/``status`` and the ``reasons`` it matches (empty: any), the diagnosis ``row``,
    ``cause`` (one sentence) and ``fix`` (object kind, namespace, name, message -> commands),
    ``sources`` (the reports its unit test quotes)."""

    kind: str
    type: str
    status: str
    reasons: frozenset[str]
    row: str
    cause: str
    fix: Callable[[str, str, str, str], str]
    sources: tuple[str, ...]


def _rollout_fix(kind: str, ns: str, name: str, message: str) -> str:
    return (
        f"{fixes.KUBECTL} -n {ns} describe {kind.lower()} {name} (its Pods' events say why), then "
        f"{fixes.KUBECTL} -n {ns} rollout restart {kind.lower()}/{name}"
    )


def _create_fix(kind: str, ns: str, name: str, message: str) -> str:
    if "forbidden" in message:
        return (
            f"let the namespace admit its Pods ({fixes.KUBECTL} label ns {ns} "
            f"pod-security.kubernetes.io/enforce=privileged --overwrite, or the policy named above), then "
            f"{fixes.KUBECTL} -n {ns} delete {kind.lower()} {name} (its owner re-creates it)"
        )
    return f"{fixes.KUBECTL} -n {ns} describe {kind.lower()} {name}; {fixes.KUBECTL} -n {ns} get events"


def _policy_fix(kind: str, ns: str, name: str, message: str) -> str:
    return (
        f"{fixes.KUBECTL} -n gpu-operator logs deploy/gpu-operator --tail=50 (the operator's own log), "
        f"{fixes.KUBECTL} get clusterpolicy {name} -o jsonpath='{{.status.conditions}}'"
    )


#: The table, in match order per object.
RULES: Final[tuple[ConditionRule, ...]] = (
    ConditionRule(
        "Deployment",
        "Progressing",
        "False",
        frozenset({"ProgressDeadlineExceeded"}),
        "workload-stalled",
        "the Deployment exceeded its progress deadline: its new Pods never became available",
        _rollout_fix,
        ("argoproj/argo-rollouts#1470",),
    ),
    ConditionRule(
        "Deployment",
        "ReplicaFailure",
        "True",
        frozenset(),
        "workload-cannot-create",
        "the Deployment's ReplicaSet cannot create its Pods",
        _create_fix,
        ("openshift/instaslice-operator#43",),
    ),
    ConditionRule(
        "ReplicaSet",
        "ReplicaFailure",
        "True",
        frozenset(),
        "workload-cannot-create",
        "the ReplicaSet cannot create its Pods",
        _create_fix,
        ("openshift-labs/learn-katacoda#1055",),
    ),
    ConditionRule(
        "ClusterPolicy",
        "Error",
        "True",
        frozenset({"ReconcileFailed"}),
        "clusterpolicy-error",
        "the GPU Operator failed to reconcile the ClusterPolicy",
        _policy_fix,
        ("rancher/opni#186",),
    ),
    ConditionRule(
        "ClusterPolicy",
        "Ready",
        "False",
        frozenset({"OperandNotReady", "NFDLabelsMissing", "NoGPUNodes", "DriverNotReady"}),
        "clusterpolicy-not-ready",
        "the GPU Operator reports the ClusterPolicy not ready",
        _policy_fix,
        ("NVIDIA/gpu-operator#1310",),
    ),
)


def _kind(obj: Json) -> str:
    kind = str(obj.get("kind") or "")
    if kind:
        return kind
    return "ReplicaSet" if _get(obj, "metadata", "ownerReferences") else "Deployment"


def condition_diagnoses(objects: Sequence[Json]) -> list[tuple[Diagnosis, int]]:
    """Every :data:`RULES` match over ``objects`` (Deployments, ReplicaSets, the ClusterPolicy;
    each with its ``kind``), ranked as the operator."""
    out: list[tuple[Diagnosis, int]] = []
    for obj in objects:
        kind = _kind(obj)
        for c in _get(obj, "status", "conditions") or []:
            for rule in RULES:
                if (rule.kind, rule.type, rule.status) != (kind, c.get("type"), c.get("status")):
                    continue
                if rule.reasons and c.get("reason") not in rule.reasons:
                    continue
                ns = _ns(obj) if kind != "ClusterPolicy" else ""
                name = _name(obj)
                message = str(c.get("message") or "")
                subject = f"{kind.lower()} {ns + '/' if ns else ''}{name}"
                out.append(
                    (
                        Diagnosis(
                            row=rule.row,
                            object=subject,
                            reason=f"{rule.cause} ({c.get('type')}={c.get('status')}, {c.get('reason')})",
                            detail=_one_line(message or "no message"),
                            fix=rule.fix(kind, ns, name, message),
                            variant=str(c.get("reason") or ""),
                        ),
                        _ROLE_RANK["operator"],
                    )
                )
                break
    return out
