"""Init containers that have not completed: the operator validator (``validator-stuck``) and
any other operand waiting on an earlier component (``pod-init-waiting``)."""

from __future__ import annotations

from gpulab import fixes
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import _get, _last_line, _name, _ns, _pod_obj
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _ROLE_RANK


def _validator_fix(ns: str, pod: str, container: str, profile: str) -> str:
    logs = f"kubectl -n {ns} logs {pod} -c {container}"
    hints = {
        "driver-validation": (
            "driver.enabled=false, so it validates the host driver: check the node sees it "
            f"({fixes.node_nvidia_smi(profile)}); if the log mentions symlinks or "
            "/dev/char, set validator.driver.env DISABLE_DEV_CHAR_SYMLINK_CREATION=true"
        ),
        "toolkit-validation": f"waits for the toolkit: {fixes.toolkit_logs(ns)}",
        "cuda-validation": (f"check the CUDA workload pod: kubectl -n {ns} get pods | grep cuda-validator"),
        "plugin-validation": f"check the device plugin: {fixes.device_plugin_logs(ns)}",
    }
    hint = hints.get(container)
    return f"{logs}; {hint}" if hint else logs


def _init_blocked(ctx: _Ctx, pod: Json, role: str, cs: Json) -> tuple[Diagnosis, int]:
    """An init container that has not completed (running, or waiting to start)."""
    cname = str(cs.get("name") or "?")
    ns, name = _ns(pod), _name(pod)
    state = cs.get("state") or {}
    if "running" in state:
        since = _get(state, "running", "startedAt")
        how = f"running since {since}" if since else "running"
    else:
        how = f"waiting ({_get(state, 'waiting', 'reason') or 'not started'})"
    line = _last_line(ctx.log(pod, cname)) or "(no log line given)"
    fix = _validator_fix(ns, name, cname, ctx.profile)
    if role == "validator":
        rank = {
            "driver-validation": _ROLE_RANK["validator-driver"],
            "toolkit-validation": _ROLE_RANK["validator-toolkit"],
        }.get(cname, _ROLE_RANK["validator"])
        return (
            Diagnosis(
                row="validator-stuck",
                object=_pod_obj(pod, cname),
                reason=f"validator init container {cname} has not completed: {how}",
                detail=f"last log line: {line}",
                fix=fix,
                variant=cname,
            ),
            rank,
        )
    blocking = role != "dcgm-exporter"
    return (
        Diagnosis(
            row="pod-init-waiting",
            object=_pod_obj(pod, cname),
            reason=f"init container {cname} has not completed: {how} (it usually waits for "
            "an earlier component; fix that one first)",
            detail=f"last log line: {line}",
            fix=fix,
            blocking=blocking,
            variant=cname,
        ),
        _ROLE_RANK.get(role, _ROLE_RANK["operand"]) + (0 if blocking else _NON_BLOCKING_RANK),
    )
