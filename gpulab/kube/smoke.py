"""The smoke check: the chapter's smoke Pod succeeded, and what its log and events say.

Waits for the smoke Pod's phase ``Succeeded`` (a Pod has no ``complete`` condition, which is
why the chapter's ``kubectl wait --for=condition=complete`` never returns), then reads its log
(driver and CUDA versions parsed from the nvidia-smi header, the GPU UUIDs from its
``nvidia-smi -L`` lines: :mod:`gpulab.kube.smoke_gpus`) and its events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gpulab.core.rawapi import pod_log
from gpulab.diagnose.live import Context
from gpulab.host import nvsmi
from gpulab.kube import smoke_gpus
from gpulab.kube.client import GateError, pod_times, sanitize, wait_succeeded
from gpulab.kube.results import SmokeResult


def smoke(
    api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None = None, inputs: str | None = None
) -> SmokeResult:
    """Wait for the smoke Pod to reach ``Succeeded``; return phase, log facts and events.

    ``measuredAt`` is when the Pod's container finished (``smokeStartedAt`` when it started:
    :func:`gpulab.kube.client.pod_times`), not when this command read it; ``inputs``: the
    check-inputs digest the Pod must carry (:func:`gpulab.kube.client.foreign_pod`).

    Raises:
        GateError: the Pod failed or timed out (with the diagnosis), or its log has no
            nvidia-smi header the parser knows (quoting the line).
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    phase = wait_succeeded(api, "smoke", namespace, pod, timeout, ctx, inputs=inputs)
    p = sanitize(core.read_namespaced_pod(pod, namespace), api)
    log = pod_log(core, pod, namespace)
    try:
        header = nvsmi.parse_header(log)
    except nvsmi.NvidiaSmiParseError as exc:
        raise GateError(f"smoke Pod {namespace}/{pod} log: {exc}") from exc
    # This Pod's events only: after a replacement (make verify) the old Pod of the same name
    # left its own (e.g. its kill), which must not read as the new Pod's.
    uid = (p.get("metadata") or {}).get("uid")
    selector = f"involvedObject.name={pod},involvedObject.kind=Pod"
    events = [
        sanitize(e, api)
        for e in core.list_namespaced_event(
            namespace, field_selector=selector + (f",involvedObject.uid={uid}" if uid else "")
        ).items
    ]
    reasons: list[str] = []
    started, finished = pod_times(p)

    def order(e: dict[str, Any]) -> tuple[str, int]:
        # Timestamps have one-second resolution; the resourceVersion breaks ties in write order.
        rv = str((e.get("metadata") or {}).get("resourceVersion") or "0")
        return str(e.get("firstTimestamp") or e.get("eventTime") or ""), int(rv) if rv.isdigit() else 0

    for e in sorted(events, key=order):
        if e.get("reason") and e["reason"] not in reasons:
            reasons.append(e["reason"])
    return SmokeResult(
        smoke_phase=phase,
        smoke_driver_version=header.driver_version,
        smoke_cuda_version=header.cuda_version,
        smoke_events=reasons,
        smoke_node=(p.get("spec") or {}).get("nodeName"),
        smoke_gpu_uuids=smoke_gpus.gpu_uuids(log),
        smoke_log_simulated="gpu-lab simulated" in log.splitlines()[0] if log else False,
        smoke_started_at=started,
        measured_at=finished or datetime.now(UTC).isoformat(timespec="seconds"),
    )
