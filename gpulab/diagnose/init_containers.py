"""Init containers that have not completed: the operator validator (``validator-stuck``) and
any other operand waiting on an earlier component (``pod-init-waiting``).

Each says how long the container has been stuck: from its ``state.running.startedAt``, or,
while it waits to start, from the pod's ``Initialized`` condition (``lastTransitionTime``),
its ``status.startTime`` or its creation, to the time the state was read. A known message in
its log (:mod:`gpulab.diagnose.messages`, e.g. ``waiting for nvidia container stack to be
setup``) names the cause and the fix; otherwise the fix is that init container's own
(:func:`gpulab.core.fixes_operator.validator_init`: each validator step checks one thing).
"""

from __future__ import annotations

from datetime import datetime

from gpulab.core import fixes_operator
from gpulab.diagnose.containers import _known
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import (
    _condition,
    _creation,
    _duration,
    _get,
    _last_line,
    _name,
    _ns,
    _parse_time,
    _pod_obj,
)
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _init_rank


def _stuck_since(pod: Json, cs: Json) -> tuple[datetime | None, str]:
    """When the init container got stuck, and the field that says so."""
    started = _get(cs, "state", "running", "startedAt")
    if started:
        return _parse_time(started), f"running since {started}"
    cond = _condition(pod, "Initialized") or {}
    for value, what in (
        (cond.get("lastTransitionTime") if cond.get("status") != "True" else None, "not initialized since"),
        (_get(pod, "status", "startTime"), "pod started"),
        (_creation(pod), "pod created"),
    ):
        when = _parse_time(value)
        if when is not None:
            return when, f"{what} {value}"
    return None, ""


def _how_long(ctx: _Ctx, pod: Json, cs: Json) -> str:
    """``"running, stuck for 14m 5s (running since 2026-11-29T10:01:00Z)"``-like text."""
    state = cs.get("state") or {}
    how = (
        "running" if "running" in state else f"waiting ({_get(state, 'waiting', 'reason') or 'not started'})"
    )
    since, field = _stuck_since(pod, cs)
    if since is None:
        return how
    return f"{how}, stuck for {_duration((ctx.now - since).total_seconds())} ({field})"


def _init_blocked(ctx: _Ctx, pod: Json, role: str, cs: Json) -> tuple[Diagnosis, int]:
    """An init container that has not completed (running, or waiting to start)."""
    cname = str(cs.get("name") or "?")
    ns, name = _ns(pod), _name(pod)
    log = ctx.log(pod, cname)
    how = _how_long(ctx, pod, cs)
    known = _known(ctx, pod, cname, [log])
    line = known[1] if known else (_last_line(log) or "(no log line given)")
    own_fix = fixes_operator.validator_init(cname, ns, name, ctx.profile)
    fix = f"{known[2]}; {own_fix}" if known else own_fix
    cause = f": {known[0].cause}" if known else ""
    if role == "validator":
        return (
            Diagnosis(
                row="validator-stuck",
                object=_pod_obj(pod, cname),
                reason=f"validator init container {cname} has not completed: {how}{cause}",
                detail=f"last log line: {line}",
                fix=fix,
                variant=known[0].id if known else cname,
            ),
            _init_rank(role, cname),
        )
    blocking = role != "dcgm-exporter"
    return (
        Diagnosis(
            row="pod-init-waiting",
            object=_pod_obj(pod, cname),
            reason=f"init container {cname} has not completed: {how}"
            + (cause or " (it usually waits for an earlier component; fix that one first)"),
            detail=f"last log line: {line}",
            fix=fix,
            blocking=blocking,
            variant=known[0].id if known else cname,
        ),
        _init_rank(role, cname) + (0 if blocking else _NON_BLOCKING_RANK),
    )
