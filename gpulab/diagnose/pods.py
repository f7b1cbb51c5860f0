"""One pod's diagnoses: Pending (``operator-pending``, ``pod-unschedulable``; GPU shortages are
handed to :mod:`gpulab.diagnose.nodes`), then its init containers and containers in order,
then ``pod-not-ready`` and ``pod-failed``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

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


@dataclass(frozen=True)
class _PodView:
    """One pod as every pod rule reads it: its role (:func:`gpulab.diagnose.roles._role`), its
    events in time order, its rank, and whether it blocks the lab (the DCGM exporter does not)."""

    ctx: _Ctx
    pod: Json
    role: str
    events: list[Json]
    rank: int

    @property
    def ns(self) -> str:
        return _ns(self.pod)

    @property
    def name(self) -> str:
        return _name(self.pod)

    @property
    def blocking(self) -> bool:
        return self.role != "dcgm-exporter"

    @property
    def own_rank(self) -> int:
        """The rank of a finding about the pod itself (non-blocking ones sort last)."""
        return self.rank + (0 if self.blocking else _NON_BLOCKING_RANK)

    def texts(self, cs: Json) -> list[str]:
        """Where a container's known messages are searched: its log, status, the pod's events."""
        cname = str(cs.get("name") or "?")
        return [
            self.ctx.log(self.pod, cname),
            *_status_texts(cs),
            *(str(e.get("message") or "") for e in self.events),
        ]


_Pair = tuple[Diagnosis, int]


def _pending(v: _PodView, unsched: Json, gpu_pending: list[tuple[Json, str]]) -> list[_Pair]:
    """A Pending, unbound pod: short of GPUs (handed to :mod:`gpulab.diagnose.nodes` through
    ``gpu_pending``), of cpu or memory (``operator-pending``; a workload's ``pod-unschedulable``),
    or unplaced for another reason (``pod-unschedulable``)."""
    msg = str(unsched.get("message") or "")
    short = set(_INSUFFICIENT_RE.findall(msg))
    if short & set(WHOLE_GPU_RESOURCES):
        gpu_pending.append((v.pod, msg))
        return []
    if short & {"cpu", "memory"}:
        which = sorted(short & {"cpu", "memory"})
        return [
            (
                Diagnosis(
                    row="operator-pending" if v.role != "workload" else "pod-unschedulable",
                    object=_pod_obj(v.pod),
                    reason="Pending: the node has too little "
                    + " and ".join(which)
                    + f" for it (the GPU Operator's pods need {fixes.minimum()} in all)",
                    detail=_one_line(msg),
                    fix=fixes.node_resources(v.ctx.profile),
                    blocking=v.blocking,
                    variant="insufficient-" + "-".join(which),
                ),
                v.own_rank,
            )
        ]
    return [
        (
            Diagnosis(
                row="pod-unschedulable",
                object=_pod_obj(v.pod),
                reason="Pending: the scheduler finds no node for it",
                detail=_one_line(msg),
                fix=f"scripts/kubectl -n {v.ns} describe pod {v.name}; compare its nodeSelector, "
                "affinity and tolerations with scripts/kubectl get nodes --show-labels and "
                "scripts/kubectl describe node | grep -i taint",
                blocking=v.blocking,
            ),
            v.own_rank,
        )
    ]


# --- the container rules: the first that applies is the container's finding ------------------


def _waiting(cs: Json) -> str | None:
    return _get(cs, "state", "waiting", "reason")


def _exit_code(cs: Json) -> object:
    """The exit code of a terminated container, None while it is not terminated."""
    term = _get(cs, "state", "terminated")
    return None if term is None else term.get("exitCode")


def _cuda_too_new(v: _PodView, cs: Json) -> _Pair | None:
    return _cuda_diagnosis(v.ctx, v.pod, str(cs.get("name") or "?"), v.texts(cs), v.rank)


def _pull_failed(v: _PodView, cs: Json) -> _Pair | None:
    return _pull_diagnosis(v.ctx, v.pod, v.role, cs, v.rank) if _waiting(cs) in _PULL_REASONS else None


def _crash_looping(v: _PodView, cs: Json) -> _Pair | None:
    reason = _waiting(cs)
    if reason not in _CRASH_REASONS:
        return None
    return _crash_diagnosis(v.ctx, v.pod, v.role, cs, str(reason), v.events)


def _exited_with_error(v: _PodView, cs: Json) -> _Pair | None:
    if _exit_code(cs) in (0, None):
        return None
    return _crash_diagnosis(v.ctx, v.pod, v.role, cs, "Terminated", v.events)


def _creating(v: _PodView, cs: Json) -> _Pair | None:
    if _waiting(cs) not in _CREATING_REASONS:
        return None
    return _creating_diagnosis(v.ctx, v.pod, v.role, str(cs.get("name") or "?"), v.events, v.rank)


def _not_ready(v: _PodView, cs: Json) -> _Pair | None:
    """``pod-not-ready``: a lab Pod running but not Ready (a workload's readiness is its own)."""
    running = _get(cs, "state", "running") is not None
    if not running or cs.get("ready") is not False or v.role == "workload":
        return None
    cname = str(cs.get("name") or "?")
    line = _last_line(v.ctx.log(v.pod, cname)) or "(no log line given)"
    return (
        Diagnosis(
            row="pod-not-ready",
            object=_pod_obj(v.pod, cname),
            reason="Running but not Ready (its readiness probe fails)",
            detail=f"last log line: {line}",
            fix=f"scripts/kubectl -n {v.ns} describe pod {v.name}; "
            f"scripts/kubectl -n {v.ns} logs {v.name} -c {cname}",
            blocking=v.blocking,
        ),
        v.own_rank,
    )


def _plugin_idle(v: _PodView, cs: Json) -> _Pair | None:
    if v.role != "device-plugin" or _get(cs, "state", "running") is None:
        return None
    return _idle_plugin(v.ctx, v.pod, str(cs.get("name") or "?"), v.rank)


def _init_crashed(v: _PodView, cs: Json) -> _Pair | None:
    reason = _waiting(cs)
    if reason not in _CRASH_REASONS and not _exit_code(cs):
        return None
    return _crash_diagnosis(v.ctx, v.pod, v.role, cs, reason or "Error", v.events, init=True)


def _init_waits(v: _PodView, cs: Json) -> _Pair | None:
    return _init_blocked(v.ctx, v.pod, v.role, cs)


_ContainerRule = Callable[[_PodView, Json], _Pair | None]

#: An init container's rules, in order; the last always applies.
_INIT_RULES: Final[tuple[_ContainerRule, ...]] = (_cuda_too_new, _init_crashed, _pull_failed, _init_waits)

#: A container's rules, in order; a container none applies to is fine.
_CONTAINER_RULES: Final[tuple[_ContainerRule, ...]] = (
    _cuda_too_new,
    _pull_failed,
    _crash_looping,
    _exited_with_error,
    _creating,
    _not_ready,
    _plugin_idle,
)


def _first(rules: tuple[_ContainerRule, ...], v: _PodView, cs: Json) -> _Pair | None:
    return next((hit for rule in rules if (hit := rule(v, cs)) is not None), None)


def _containers(v: _PodView) -> list[_Pair]:
    """Init containers run in order: the first one not terminated with exit 0 is where the
    pod is (the ones after it have not started), and its finding is the pod's; else each
    container's finding."""
    for cs in _get(v.pod, "status", "initContainerStatuses") or []:
        if _exit_code(cs) != 0:
            hit = _first(_INIT_RULES, v, cs)
            return [hit] if hit is not None else []
    found = (_first(_CONTAINER_RULES, v, cs) for cs in _get(v.pod, "status", "containerStatuses") or [])
    return [hit for hit in found if hit is not None]


def _failed(v: _PodView) -> _Pair:
    """``pod-failed``: with the cause where the message tells it (the GPU refused at admission,
    more than one shared GPU asked for, a validator's known message)."""
    reason = _get(v.pod, "status", "reason") or "Failed"
    message = str(_get(v.pod, "status", "message") or "")
    gpu_admission = v.ctx.gpu_resource in message or reason == "UnexpectedAdmissionError"
    # failRequestsGreaterThanOne: "maximum request size for shared resources is 1".
    too_many_shared = "maximum request size for shared resources" in message
    # The validator's workload Pods fail this way when another Pod holds the GPU.
    known = _known(v.ctx, v.pod, "", [message]) if v.role == "validator" else None
    return (
        Diagnosis(
            row="pod-failed",
            object=_pod_obj(v.pod),
            reason=f"phase Failed ({reason})",
            detail=_one_line(message or "no status message"),
            fix=(f"{known[2]}; " if known else "")
            + (
                "the device plugin refuses a container more than one shared GPU "
                "(timeSlicingFailRequestsGreaterThanOne): ask for 1 per container; "
                if too_many_shared
                else "the kubelet refused the GPU at admission (devices unhealthy or gone): "
                f"{fixes.device_plugin_logs(v.ns)}; "
                f"{fixes.node_nvidia_smi(v.ctx.profile, v.ctx.node_command)}; "
                if gpu_admission
                else ""
            )
            + f"scripts/kubectl -n {v.ns} describe pod {v.name}; delete it and re-run: make verify",
            blocking=v.blocking,
            variant=str(reason),
        ),
        v.own_rank,
    )


def _pod_diagnoses(ctx: _Ctx, pod: Json, gpu_pending: list[tuple[Json, str]]) -> list[_Pair]:
    """Diagnoses for one pod as ``(Diagnosis, rank)`` pairs: nothing for a Succeeded or deleted
    pod; a Pending, unbound one's :func:`_pending`; else its containers' findings; else, bound
    without a container status, sandbox or volume trouble (``smoke-container-creating``, from its
    events); else, Failed, ``pod-failed``."""
    phase = _get(pod, "status", "phase")
    if phase == "Succeeded" or _get(pod, "metadata", "deletionTimestamp"):
        return []
    role = _role(pod)
    v = _PodView(ctx, pod, role, ctx.pod_events(pod), _ROLE_RANK.get(role, _ROLE_RANK["workload"]))
    unsched = _unschedulable(pod, v.events)
    if unsched is not None:
        return _pending(v, unsched, gpu_pending)
    found = _containers(v)
    if found:
        return found
    if not _get(pod, "status", "containerStatuses") and phase == "Pending" and _get(pod, "spec", "nodeName"):
        return [_creating_diagnosis(ctx, pod, role, None, v.events, v.rank)]
    return [_failed(v)] if phase == "Failed" else []
