"""The operand DaemonSets: placed on no node (``daemonset-no-nodes``) or short of ready pods
with no pod-level cause found (``daemonset-not-ready``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from gpulab.diagnose import messages
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import _ds_ready, _event_time, _get, _name, _ns, _one_line
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _ROLE_RANK, _role_of_name

#: Operand DaemonSets that legitimately schedule on no node when their feature is off.
_OPTIONAL_DAEMONSETS: Final = (
    "nvidia-mig-manager",
    "nvidia-sandbox",
    "nvidia-vfio-manager",
    "nvidia-kata",
    "nvidia-cc-manager",
    "nvidia-vgpu",
    "nvidia-driver-daemonset",
    "nvidia-fs",
    "nvidia-gds",
)


def _no_nodes(ctx: _Ctx, ds: Json) -> Diagnosis:
    """``daemonset-no-nodes``: which labels each node lacks, and the label that would place it."""
    name, ns = _name(ds), _ns(ds)
    selector = _get(ds, "spec", "template", "spec", "nodeSelector") or {}
    affinity = _get(ds, "spec", "template", "spec", "affinity", "nodeAffinity")
    wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
    missing: list[str] = []
    for node in ctx.nodes:
        labels = _get(node, "metadata", "labels") or {}
        lacks = [f"{k}={v}" for k, v in sorted(selector.items()) if labels.get(k) != v]
        if lacks:
            missing.append(f"node {_name(node)} lacks {', '.join(lacks)}")
    reason = (
        f"no node matches its nodeSelector {wanted}"
        if wanted
        else "no node matches its node affinity"
        if affinity
        else "it schedules on no node"
    )
    label_fix = "; ".join(
        f"scripts/kubectl label node {_name(n)} {k}={v}"
        for n in ctx.nodes[:1]
        for k, v in sorted(selector.items())
    )
    return Diagnosis(
        row="daemonset-no-nodes",
        object=f"daemonset {ns}/{name}",
        reason=f"desiredNumberScheduled is 0: {reason}",
        detail="; ".join(missing) or (str(affinity) if affinity else "no nodes given"),
        fix="scripts/kubectl get nodes --show-labels; GPU labels come from NFD and the "
        f"operator: scripts/kubectl -n {ns} get pods -l "
        "app.kubernetes.io/name=node-feature-discovery"
        + (f"; to test by hand: {label_fix}" if label_fix else ""),
        blocking=_role_of_name(name) != "dcgm-exporter",
        variant=name,
    )


def _not_ready(ctx: _Ctx, ds: Json, ready: int, desired: int) -> Diagnosis:
    """``daemonset-not-ready``: the DaemonSet's last event as the evidence; its controller's
    FailedCreate events carry admission refusals, e.g. a RuntimeClass the cluster lacks, whose
    known message (gpulab.diagnose.messages) names the cause and the first fix."""
    name, ns = _name(ds), _ns(ds)
    ds_events = sorted(
        (
            e
            for e in ctx.events
            if _get(e, "involvedObject", "kind") == "DaemonSet" and _get(e, "involvedObject", "name") == name
        ),
        key=_event_time,
    )
    evidence = (
        f"{ds_events[-1].get('reason')}: {ds_events[-1].get('message')}"
        if ds_events
        else "no pod or event of it given"
    )
    hit = messages.find([str(e.get("message") or "") for e in ds_events])
    fix = (
        f"scripts/kubectl -n {ns} describe ds {name}; scripts/kubectl -n {ns} get pods -o wide | grep {name}"
    )
    if hit is not None:
        args = messages.FixArgs(ns, name, "", "?", ns, ctx.profile, ctx.host_max_cuda)
        fix = f"{hit[0].fix(args)}; {fix}"
    return Diagnosis(
        row="daemonset-not-ready",
        object=f"daemonset {ns}/{name}",
        reason=f"{ready}/{desired} pods ready" + (f": {hit[0].cause}" if hit else ""),
        detail=_one_line(evidence),
        fix=fix,
        blocking=_role_of_name(name) != "dcgm-exporter",
        variant=hit[0].id if hit else "",
    )


def _daemonset_diagnoses(ctx: _Ctx, found: Sequence[Diagnosis]) -> list[tuple[Diagnosis, int]]:
    """Per operand DaemonSet (the optional ones aside): placed on no node (:func:`_no_nodes`),
    or short of ready pods when none of its pods has a finding in ``found`` already
    (:func:`_not_ready`); the DCGM exporter's last, not blocking."""
    out: list[tuple[Diagnosis, int]] = []
    for ds in ctx.daemonsets:
        name, ns = _name(ds), _ns(ds)
        if name.startswith(_OPTIONAL_DAEMONSETS):
            continue
        desired, ready = _ds_ready(ds)
        role = _role_of_name(name)
        extra = _NON_BLOCKING_RANK if role == "dcgm-exporter" else 0
        if desired == 0:
            out.append((_no_nodes(ctx, ds), _ROLE_RANK["daemonset"] + extra))
        elif ready < desired and not any(d.object.startswith(f"pod {ns}/{name}-") for d in found):
            out.append(
                (_not_ready(ctx, ds, ready, desired), _ROLE_RANK.get(role, _ROLE_RANK["operand"]) + extra)
            )
    return out
