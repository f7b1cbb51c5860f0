"""One pod's diagnoses: Pending (``operator-pending``, ``pod-unschedulable``; GPU shortages are
handed to :mod:`gpulab.diagnose.nodes`), then its init containers and containers in order,
then ``pod-not-ready`` and ``pod-failed``."""

from __future__ import annotations

from collections.abc import Sequence

from gpulab.core import fixes
from gpulab.core.names import WHOLE_GPU_RESOURCES
from gpulab.diagnose.containers import _crash_diagnosis, _known, _pull_diagnosis
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import _get, _last_line, _name, _ns, _one_line, _pod_obj, _status_texts
from gpulab.diagnose.init_containers import _init_blocked
from gpulab.diagnose.patterns import _CRASH_REASONS, _CREATING_REASONS, _INSUFFICIENT_RE, _PULL_REASONS
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _ROLE_RANK, _role
from gpulab.diagnose.smoke import _creating_diagnosis, _cuda_diagnosis


def _unschedulable(pod: Json, events: Sequence[Json]) -> Json | None:
    """The scheduling failure message of a Pending, unbound pod, or None."""
    if _get(pod, "status", "phase") != "Pending" or _get(pod, "spec", "nodeName"):
        return None
    failed = [e for e in events if e.get("reason") == "FailedScheduling"]
    if failed:
        return failed[-1]
    for cond in _get(pod, "status", "conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return {"message": cond.get("message") or cond.get("reason") or "Unschedulable"}
    return None


def _idle_plugin(ctx: _Ctx, pod: Json, container: str, rank: int) -> tuple[Diagnosis, int] | None:
    """``device-plugin-idle``: a device plugin that runs but whose log says it found no usable
    GPU (``No devices found. Waiting indefinitely.``, MIG, NVML): it registers nothing, so
    allocatable stays 0 or absent. None when its log says nothing known."""
    known = _known(ctx, pod, container, [ctx.log(pod, container)])
    if known is None or known[0].kind not in ("device-plugin", "not-injected", "host-driver"):
        return None
    message, line, fix = known
    return (
        Diagnosis(
            row="device-plugin-idle",
            object=_pod_obj(pod, container),
            reason=f"device plugin runs but registers no GPU: {message.cause}",
            detail=_one_line(f"log: {line}"),
            fix=fix,
            variant=message.id,
        ),
        rank,
    )


def _pod_diagnoses(ctx: _Ctx, pod: Json, gpu_pending: list[tuple[Json, str]]) -> list[tuple[Diagnosis, int]]:
    """Diagnoses for one pod as ``(Diagnosis, rank)`` pairs."""
    phase = _get(pod, "status", "phase")
    if phase == "Succeeded" or _get(pod, "metadata", "deletionTimestamp"):
        return []
    role = _role(pod)
    ns, name = _ns(pod), _name(pod)
    events = ctx.pod_events(pod)
    rank = _ROLE_RANK.get(role, _ROLE_RANK["workload"])
    non_blocking = role == "dcgm-exporter"

    unsched = _unschedulable(pod, events)
    if unsched is not None:
        msg = str(unsched.get("message") or "")
        short = set(_INSUFFICIENT_RE.findall(msg))
        if short & set(WHOLE_GPU_RESOURCES):
            gpu_pending.append((pod, msg))
            return []
        if short & {"cpu", "memory"}:
            row = "operator-pending" if role != "workload" else "pod-unschedulable"
            return [
                (
                    Diagnosis(
                        row=row,
                        object=_pod_obj(pod),
                        reason="Pending: the node has too little "
                        + " and ".join(sorted(short & {"cpu", "memory"}))
                        + f" for it (the GPU Operator's pods need {fixes.minimum()} in all)",
                        detail=_one_line(msg),
                        fix=fixes.node_resources(ctx.profile),
                        blocking=not non_blocking,
                        variant="insufficient-" + "-".join(sorted(short & {"cpu", "memory"})),
                    ),
                    rank + (_NON_BLOCKING_RANK if non_blocking else 0),
                )
            ]
        return [
            (
                Diagnosis(
                    row="pod-unschedulable",
                    object=_pod_obj(pod),
                    reason="Pending: the scheduler finds no node for it",
                    detail=_one_line(msg),
                    fix=f"scripts/kubectl -n {ns} describe pod {name}; compare its nodeSelector, "
                    "affinity and tolerations with scripts/kubectl get nodes --show-labels and "
                    "scripts/kubectl describe node | grep -i taint",
                    blocking=not non_blocking,
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
        ]

    out: list[tuple[Diagnosis, int]] = []
    event_texts = [str(e.get("message") or "") for e in events]

    # Init containers run in order: the first one not terminated with exit 0 is where the
    # pod is; the ones after it have not started yet.
    for cs in _get(pod, "status", "initContainerStatuses") or []:
        term = _get(cs, "state", "terminated")
        if term is not None and term.get("exitCode") == 0:
            continue
        waiting_reason = _get(cs, "state", "waiting", "reason")
        cname = str(cs.get("name") or "?")
        texts = [ctx.log(pod, cname), *_status_texts(cs), *event_texts]
        cuda_hit = _cuda_diagnosis(ctx, pod, cname, texts, rank)
        if cuda_hit is not None:
            out.append(cuda_hit)
        elif waiting_reason in _CRASH_REASONS or (term is not None and term.get("exitCode")):
            out.append(_crash_diagnosis(ctx, pod, role, cs, waiting_reason or "Error", events, init=True))
        elif waiting_reason in _PULL_REASONS:
            out.append(_pull_diagnosis(ctx, pod, role, cs, rank))
        else:
            out.append(_init_blocked(ctx, pod, role, cs))
        return out

    for cs in _get(pod, "status", "containerStatuses") or []:
        cname = str(cs.get("name") or "?")
        waiting = _get(cs, "state", "waiting") or {}
        wreason = waiting.get("reason")
        term = _get(cs, "state", "terminated")
        cuda_hit = _cuda_diagnosis(
            ctx, pod, cname, [ctx.log(pod, cname), *_status_texts(cs), *event_texts], rank
        )
        if cuda_hit is not None:
            out.append(cuda_hit)
            continue
        if wreason in _PULL_REASONS:
            out.append(_pull_diagnosis(ctx, pod, role, cs, rank))
        elif wreason in _CRASH_REASONS:
            out.append(_crash_diagnosis(ctx, pod, role, cs, str(wreason), events))
        elif term is not None and term.get("exitCode") not in (0, None):
            out.append(_crash_diagnosis(ctx, pod, role, cs, "Terminated", events))
        elif wreason in _CREATING_REASONS:
            out.append(_creating_diagnosis(ctx, pod, role, cname, events, rank))
        elif _get(cs, "state", "running") is not None and cs.get("ready") is False and role != "workload":
            line = _last_line(ctx.log(pod, cname)) or "(no log line given)"
            out.append(
                (
                    Diagnosis(
                        row="pod-not-ready",
                        object=_pod_obj(pod, cname),
                        reason="Running but not Ready (its readiness probe fails)",
                        detail=f"last log line: {line}",
                        fix=f"scripts/kubectl -n {ns} describe pod {name}; "
                        f"scripts/kubectl -n {ns} logs {name} -c {cname}",
                        blocking=not non_blocking,
                    ),
                    rank + (_NON_BLOCKING_RANK if non_blocking else 0),
                )
            )
        elif role == "device-plugin" and _get(cs, "state", "running") is not None:
            idle = _idle_plugin(ctx, pod, cname, rank)
            if idle is not None:
                out.append(idle)
    if out:
        return out

    # Bound but no container status yet: sandbox creation or volume problems show as events.
    statuses = _get(pod, "status", "containerStatuses") or []
    if not statuses and phase == "Pending" and _get(pod, "spec", "nodeName"):
        return [_creating_diagnosis(ctx, pod, role, None, events, rank)]
    if phase == "Failed":
        reason = _get(pod, "status", "reason") or "Failed"
        message = _get(pod, "status", "message") or ""
        gpu_admission = ctx.gpu_resource in str(message) or reason == "UnexpectedAdmissionError"
        # failRequestsGreaterThanOne: "maximum request size for shared resources is 1".
        too_many_shared = "maximum request size for shared resources" in str(message)
        # The validator's workload Pods fail this way when another Pod holds the GPU.
        known = _known(ctx, pod, "", [str(message)]) if role == "validator" else None
        return [
            (
                Diagnosis(
                    row="pod-failed",
                    object=_pod_obj(pod),
                    reason=f"phase Failed ({reason})",
                    detail=_one_line(str(message) or "no status message"),
                    fix=(f"{known[2]}; " if known else "")
                    + (
                        "the device plugin refuses a container more than one shared GPU "
                        "(timeSlicingFailRequestsGreaterThanOne): ask for 1 per container; "
                        if too_many_shared
                        else "the kubelet refused the GPU at admission (devices unhealthy or gone): "
                        f"{fixes.device_plugin_logs(ns)}; {fixes.node_nvidia_smi(ctx.profile)}; "
                        if gpu_admission
                        else ""
                    )
                    + f"scripts/kubectl -n {ns} describe pod {name}; delete it and re-run: make verify",
                    blocking=not non_blocking,
                    variant=str(reason),
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
        ]
    return out
