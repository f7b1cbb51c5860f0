"""Containers that fail to run: crash loops, start errors and containers that terminated
with an error (``device-plugin-crashloop``, ``dcgm-exporter-failing``, ``validator-stuck``,
``pod-crashloop``) and image pulls (``image-pull-failed``).

The container's log, its status messages and its Pod's events are searched for the known
messages of :mod:`gpulab.diagnose.messages`; a match names the cause and its fix, and its id
becomes the diagnosis' ``variant``. Without a match the row says the container fails and
quotes the last log line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from gpulab.core import fixes, fixes_operator
from gpulab.core.names import OPERATOR_NAMESPACE, TOOLKIT_DS
from gpulab.diagnose import messages
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import (
    _container_image,
    _get,
    _last_line,
    _name,
    _ns,
    _one_line,
    _pod_obj,
    _status_texts,
)
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _ROLE_RANK, _init_rank

#: The row a known message gets, by the failing pod's role (else ``pod-crashloop``).
_ROW_BY_ROLE = {"device-plugin": "device-plugin-crashloop", "validator": "validator-stuck"}


def _fix_args(ctx: _Ctx, pod: Json, container: str) -> messages.FixArgs:
    toolkit = ctx.daemonset(TOOLKIT_DS)
    return messages.FixArgs(
        namespace=_ns(pod),
        pod=_name(pod),
        container=container,
        image=_container_image(pod, container) or "?",
        operator_namespace=_ns(toolkit) if toolkit is not None else OPERATOR_NAMESPACE,
        profile=ctx.profile,
        host_max_cuda=ctx.host_max_cuda,
    )


def _known(
    ctx: _Ctx, pod: Json, container: str, texts: Sequence[str]
) -> tuple[messages.KnownMessage, str, str] | None:
    """The known message in ``texts``, the line quoting it and its fix, or None."""
    hit = messages.find(texts)
    if hit is None:
        return None
    message, line = hit
    return message, line, message.fix(_fix_args(ctx, pod, container))


@dataclass(frozen=True)
class _Crash:
    """A failing container as the crash rules read it: ``summary`` (``"CrashLoopBackOff, 3
    restart(s), last exit code 1"``), ``line`` (its log's or termination message's last line),
    ``prev_logs`` (the command for its log), ``known`` (:func:`_known` over its log, status and
    its Pod's events), ``what`` (``"container x"`` / ``"init container x"``), its ``rank``."""

    ctx: _Ctx
    pod: Json
    role: str
    cname: str
    reason: str
    summary: str
    line: str
    prev_logs: str
    known: tuple[messages.KnownMessage, str, str] | None
    what: str
    rank: int

    @property
    def obj(self) -> str:
        return _pod_obj(self.pod, self.cname)


def _dcgm_failing(c: _Crash) -> Diagnosis | None:
    """``dcgm-exporter-failing``: reported, never blocking (the lab needs no metrics)."""
    if c.role != "dcgm-exporter":
        return None
    known = c.known
    return Diagnosis(
        row="dcgm-exporter-failing",
        object=c.obj,
        reason=f"DCGM exporter failing ({c.summary}){f': {known[0].cause}' if known else ''}; the lab does "
        "not need it (metrics only), so it is reported, not blocking",
        detail=_one_line(f"log: {known[1]}" if known else _evidence(c.line)),
        fix=f"{c.prev_logs}; "
        + (
            known[2]
            if known
            else "switch the exporter off: scripts/pulumi config set gpu-lab:dcgmExporter false"
        ),
        blocking=False,
        variant=known[0].id if known else "other",
    )


def _known_cause(c: _Crash) -> Diagnosis | None:
    """A known message: its cause and fix, under the row of the pod's role."""
    if c.known is None:
        return None
    message, quoted, fix = c.known
    return Diagnosis(
        row=_ROW_BY_ROLE.get(c.role, "pod-crashloop"),
        object=c.obj,
        reason=f"{c.what} fails ({c.summary}): {message.cause}",
        detail=_one_line(f"log: {quoted}"),
        fix=f"{fix}; {c.prev_logs}",
        variant=message.id,
    )


def _plugin_restarts(c: _Crash) -> Diagnosis | None:
    if c.role != "device-plugin":
        return None
    return Diagnosis(
        row="device-plugin-crashloop",
        object=c.obj,
        reason=f"device plugin keeps restarting ({c.summary})",
        detail=_one_line(_evidence(c.line)),
        fix=f"{c.prev_logs}; check the node sees the GPU: "
        f"{fixes.node_nvidia_smi(c.ctx.profile, c.ctx.node_command)}",
        variant="other",
    )


def _validator_fails(c: _Crash) -> Diagnosis | None:
    if c.role != "validator":
        return None
    return Diagnosis(
        row="validator-stuck",
        object=c.obj,
        reason=f"validator {c.what} fails ({c.summary})",
        detail=_one_line(_evidence(c.line)),
        fix=fixes_operator.validator_init(c.cname, _ns(c.pod), _name(c.pod), c.ctx.profile),
        variant=c.cname,
    )


def _any_crash(c: _Crash) -> Diagnosis | None:
    return Diagnosis(
        row="pod-crashloop",
        object=c.obj,
        reason=f"{c.what} is failing ({c.summary})",
        detail=_one_line(_evidence(c.line)),
        fix=f"{c.prev_logs}; scripts/kubectl -n {_ns(c.pod)} describe pod {_name(c.pod)}",
        variant=c.reason,
    )


#: In order; the last always applies.
_CRASH_RULES: Final[tuple[Callable[[_Crash], Diagnosis | None], ...]] = (
    _dcgm_failing,
    _known_cause,
    _plugin_restarts,
    _validator_fails,
    _any_crash,
)


def _crash_diagnosis(
    ctx: _Ctx,
    pod: Json,
    role: str,
    cs: Json,
    reason: str,
    events: Sequence[Json],
    *,
    init: bool = False,
) -> tuple[Diagnosis, int]:
    """A container that crash-loops, cannot start, or terminated with an error (``init``: one
    of the pod's init containers), as ``(Diagnosis, rank)``: the first of :data:`_CRASH_RULES`
    that applies."""
    cname = str(cs.get("name") or "?")
    log = ctx.log(pod, cname)
    restarts = int(cs.get("restartCount") or 0)
    last_term = _get(cs, "lastState", "terminated") or _get(cs, "state", "terminated") or {}
    exit_code = last_term.get("exitCode")
    c = _Crash(
        ctx=ctx,
        pod=pod,
        role=role,
        cname=cname,
        reason=reason,
        summary=f"{reason}, {restarts} restart(s)"
        + (f", last exit code {exit_code}" if exit_code is not None else ""),
        line=_last_line(log) or _last_line(str(last_term.get("message") or "")) or "",
        prev_logs=f"scripts/kubectl -n {_ns(pod)} logs {_name(pod)} -c {cname}"
        + (" --previous" if restarts else ""),
        known=_known(
            ctx, pod, cname, [log, *_status_texts(cs), *(str(e.get("message") or "") for e in events)]
        ),
        what=f"{'init ' if init else ''}container {cname}",
        rank=_init_rank(role, cname) if init else _ROLE_RANK.get(role, _ROLE_RANK["workload"]),
    )
    found = next(d for rule in _CRASH_RULES if (d := rule(c)) is not None)
    return found, (_ROLE_RANK["operand"] + _NON_BLOCKING_RANK if role == "dcgm-exporter" else c.rank)


def _evidence(line: str) -> str:
    return f"last log line: {line}" if line else "no log line given"


def _pull_diagnosis(ctx: _Ctx, pod: Json, role: str, cs: Json, rank: int) -> tuple[Diagnosis, int]:
    cname = str(cs.get("name") or "?")
    image = cs.get("image") or _container_image(pod, cname) or "?"
    message = _get(cs, "state", "waiting", "message") or ""
    non_blocking = role == "dcgm-exporter"
    return (
        Diagnosis(
            row="image-pull-failed",
            object=_pod_obj(pod, cname),
            reason=f"image {image} cannot be pulled ({_get(cs, 'state', 'waiting', 'reason')})",
            detail=_one_line(str(message) or "no message"),
            fix=f"check the tag exists and the registry is reachable from the node "
            f"(minikube -p {ctx.profile} ssh -- docker pull {image}); offline: load it into the node "
            f"with minikube image load {image} -p {ctx.profile}",
            blocking=not non_blocking,
        ),
        rank + (_NON_BLOCKING_RANK if non_blocking else 0),
    )
