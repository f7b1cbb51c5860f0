"""Containers that fail to run: crash loops and start errors (``device-plugin-crashloop``,
``dcgm-exporter-failing``, ``pod-crashloop``) and image pulls (``image-pull-failed``)."""

from __future__ import annotations

from collections.abc import Sequence

from gpulab import fixes
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
from gpulab.diagnose.patterns import _DCGM_PROFILING_RE, _NVML_RE
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _ROLE_RANK


def _crash_diagnosis(
    ctx: _Ctx, pod: Json, role: str, cs: Json, reason: str, events: Sequence[Json]
) -> tuple[Diagnosis, int]:
    cname = str(cs.get("name") or "?")
    ns, name = _ns(pod), _name(pod)
    log = ctx.log(pod, cname)
    texts = [log, *_status_texts(cs), *(str(e.get("message") or "") for e in events)]
    restarts = int(cs.get("restartCount") or 0)
    last_term = _get(cs, "lastState", "terminated") or _get(cs, "state", "terminated") or {}
    exit_code = last_term.get("exitCode")
    line = _last_line(log) or _last_line(str(last_term.get("message") or "")) or ""
    evidence = f"last log line: {line}" if line else "no log line given"
    summary = f"{reason}, {restarts} restart(s)" + (
        f", last exit code {exit_code}" if exit_code is not None else ""
    )
    prev_logs = f"kubectl -n {ns} logs {name} -c {cname} --previous"
    rank = _ROLE_RANK.get(role, _ROLE_RANK["workload"])

    if role == "device-plugin":
        nvml = next((m for t in texts if (m := _NVML_RE.search(t))), None)
        if nvml is not None:
            nvml_line = next((t for t in log.splitlines() if _NVML_RE.search(t)), "")
            return (
                Diagnosis(
                    row="device-plugin-crashloop",
                    object=_pod_obj(pod, cname),
                    reason=f"device plugin cannot load NVML ({summary}): the container runtime "
                    "does not inject the driver libraries into the plugin's container",
                    detail=_one_line(nvml_line or evidence),
                    fix=f"on the host: {fixes.docker_gpus()}; then restart the node "
                    f"(minikube -p {ctx.profile} stop && pulumi up) and check "
                    f"{fixes.device_plugin_logs(ns)}",
                    variant="nvml-not-injected",
                ),
                rank,
            )
        return (
            Diagnosis(
                row="device-plugin-crashloop",
                object=_pod_obj(pod, cname),
                reason=f"device plugin keeps restarting ({summary})",
                detail=_one_line(evidence),
                fix=f"{prev_logs}; check the node sees the GPU: {fixes.node_nvidia_smi(ctx.profile)}",
                variant="other",
            ),
            rank,
        )
    if role == "dcgm-exporter":
        prof = any(_DCGM_PROFILING_RE.search(t) for t in texts)
        return (
            Diagnosis(
                row="dcgm-exporter-failing",
                object=_pod_obj(pod, cname),
                reason=f"DCGM exporter failing ({summary})"
                + (": profiling metrics not supported on this GPU" if prof else "")
                + "; the lab does not need it (metrics only), so it is reported, not blocking",
                detail=_one_line(evidence),
                fix=f"{prev_logs}; "
                + (
                    "drop the DCGM_FI_PROF_* (profiling) metrics from the exporter's metrics CSV, or "
                    if prof
                    else ""
                )
                + "switch the exporter off: pulumi config set dcgmExporter false && pulumi up",
                blocking=False,
                variant="profiling-unsupported" if prof else "other",
            ),
            _ROLE_RANK["operand"] + _NON_BLOCKING_RANK,
        )
    return (
        Diagnosis(
            row="pod-crashloop",
            object=_pod_obj(pod, cname),
            reason=f"container {cname} is failing ({summary})",
            detail=_one_line(evidence),
            fix=f"{prev_logs}; kubectl -n {ns} describe pod {name}",
            variant=reason,
        ),
        rank,
    )


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
