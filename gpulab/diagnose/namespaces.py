"""A namespace stuck Terminating (``namespace-terminating``): what holds it and the fix.

The namespace controller reports why a deletion does not finish in the namespace's status
conditions (k8s.io/api core/v1 ``NamespaceConditionType``): ``NamespaceContentRemaining``
("Some resources are remaining: configmaps. has 1 resource instances, ..."),
``NamespaceFinalizersRemaining`` ("Some content in the namespace has finalizers remaining:
<finalizer> in N resource instances"), ``NamespaceDeletionDiscoveryFailure`` (an aggregated
API that does not answer) and ``NamespaceDeletionContentFailure``. A namespace whose
``spec.finalizers`` still lists ``kubernetes`` has not been emptied yet.

Variants: ``finalizers`` (objects wait for finalizers whose controller is gone, the usual
case after the operator was uninstalled first), ``discovery`` (an API group cannot be
listed), ``content`` (objects remain), ``waiting`` (nothing reported yet).
"""

from __future__ import annotations

import re
from typing import Final

from gpulab.core import fixes_operator
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import _condition, _duration, _get, _name, _one_line, _parse_time
from gpulab.diagnose.record import Diagnosis, Json

# "Some resources are remaining: configmaps. has 1 resource instances, daemonsets.apps has 1 ..."
_RESOURCE_RE: Final = re.compile(r"([a-z0-9.-]+) has \d+ resource instances")
# "Some content in the namespace has finalizers remaining: a/b in 1 resource instances, c in 2 ..."
_FINALIZERS_RE: Final = re.compile(r"([^\s,]+) in \d+ resource instances")
_TERMINATING_RANK = 1  # before the operator: nothing can be created in it until it is gone


def _finalizer_names(message: str) -> list[str]:
    """The finalizers a ``NamespaceFinalizersRemaining`` message names (with or without the
    ``in N resource instances`` counts newer API servers add)."""
    names = _FINALIZERS_RE.findall(message)
    if not names and "remaining:" in message:
        names = [n.strip() for n in message.split("remaining:", 1)[1].split(",") if n.strip()]
    return names


def _true(ns: Json, kind: str) -> str:
    cond = _condition(ns, kind) or {}
    return str(cond.get("message") or cond.get("reason") or "") if cond.get("status") == "True" else ""


def diagnose_namespace(ns: Json, now_seconds: float | None = None) -> Diagnosis | None:
    """The diagnosis of one namespace (a ``kubectl get ns -o json`` item), or None when it is
    not ``Terminating``. ``now_seconds``: the time as a POSIX timestamp (seconds), to say how
    long it has been terminating (from ``metadata.deletionTimestamp``); None leaves it out."""
    if _get(ns, "status", "phase") != "Terminating":
        return None
    name = _name(ns)
    finalizers = _true(ns, "NamespaceFinalizersRemaining")
    remaining = _true(ns, "NamespaceContentRemaining")
    discovery = _true(ns, "NamespaceDeletionDiscoveryFailure")
    failure = _true(ns, "NamespaceDeletionContentFailure")
    spec_finalizers = [str(f) for f in _get(ns, "spec", "finalizers") or []]
    deleted = _parse_time(_get(ns, "metadata", "deletionTimestamp"))
    since = (
        f" for {_duration(now_seconds - deleted.timestamp())}"
        if deleted is not None and now_seconds is not None
        else ""
    )
    if finalizers:
        variant, why = "finalizers", "objects in it wait for finalizers"
    elif discovery:
        variant, why = "discovery", "an API group cannot be listed, so its content cannot be deleted"
    elif remaining or failure:
        variant, why = "content", "objects remain in it"
    else:
        variant, why = "waiting", "the namespace controller has not emptied it yet"
    evidence = [m for m in (finalizers, remaining, discovery, failure) if m]
    if spec_finalizers:
        evidence.append(f"spec.finalizers: {', '.join(spec_finalizers)}")
    fix = fixes_operator.namespace_held(
        name,
        resources=[m.rstrip(".") for m in _RESOURCE_RE.findall(remaining)],
        finalizers=_finalizer_names(finalizers),
    )
    if discovery:
        fix = f"{discovery}: scripts/kubectl get apiservice | grep False, delete the stale one; {fix}"
    return Diagnosis(
        row="namespace-terminating",
        object=f"namespace {name}",
        reason=f"stuck Terminating{since}: {why}",
        detail=_one_line("; ".join(evidence) or "no condition reported"),
        fix=fix,
        variant=variant,
    )


def _namespace_diagnoses(ctx: _Ctx) -> list[tuple[Diagnosis, int]]:
    now = ctx.now.timestamp()
    found = (diagnose_namespace(ns, now) for ns in ctx.namespaces)
    return [(d, _TERMINATING_RANK) for d in found if d is not None]
