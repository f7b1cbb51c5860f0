"""The smoke Pod's rows: ``cuda-image-newer-than-driver`` (the image needs a newer CUDA than
the host driver supports) and ``smoke-container-creating`` (stuck in ContainerCreating; an
operand stuck the same way reads ``pod-container-creating``)."""

from __future__ import annotations

from collections.abc import Sequence

from gpulab import cuda, fixes
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import (
    _container_image,
    _ds_ready,
    _get,
    _last_line,
    _name,
    _ns,
    _one_line,
    _pod_obj,
)
from gpulab.diagnose.patterns import _CUDA_COND_RE, _DRIVER_MAX_RE
from gpulab.diagnose.record import Diagnosis, Json
from gpulab.diagnose.roles import _NON_BLOCKING_RANK, _role
from gpulab.names import OPERATOR_NAMESPACE, TOOLKIT_DS


def _cuda_diagnosis(
    ctx: _Ctx, pod: Json, container: str, texts: Sequence[str], rank: int
) -> tuple[Diagnosis, int] | None:
    match = None
    evidence = ""
    for text in texts:
        match = _CUDA_COND_RE.search(text)
        if match:
            evidence = text
            break
    if match is None:
        return None
    need = match.group(1)
    image = _container_image(pod, container) or "?"
    image_cuda = cuda.image_cuda_version(image) or need
    max_match = _DRIVER_MAX_RE.search(evidence)
    host_max = max_match.group(1) if max_match else ctx.host_max_cuda
    parts = [f"image {image} needs CUDA >= {need}"]
    if image_cuda != need:
        parts.append(f"(its tag says CUDA {image_cuda})")
    if host_max:
        parts.append(f"but the host driver supports CUDA <= {host_max}")
    else:
        parts.append("but the host driver supports an older CUDA (max unknown here)")
    diag = Diagnosis(
        row="cuda-image-newer-than-driver",
        object=_pod_obj(pod, container),
        reason=" ".join(parts),
        detail=_one_line(evidence),
        fix=fixes.cuda_image(image, need, host_max),
        variant=f"cuda-{need}",
    )
    return diag, rank


def _creating_diagnosis(
    ctx: _Ctx,
    pod: Json,
    role: str,
    container: str | None,
    events: Sequence[Json],
    rank: int,
) -> tuple[Diagnosis, int]:
    ns, name = _ns(pod), _name(pod)
    warnings = [e for e in events if e.get("type") == "Warning"]
    evidence = (
        _one_line(f"{warnings[-1].get('reason')}: {warnings[-1].get('message')}")
        if warnings
        else "no warning event"
    )
    toolkit = ctx.daemonset(TOOLKIT_DS)
    non_blocking = role == "dcgm-exporter"
    row = "smoke-container-creating" if role == "workload" else "pod-container-creating"
    if toolkit is not None:
        desired, ready = _ds_ready(toolkit)
        tk_ns = _ns(toolkit)
        if desired == 0 or ready < desired:
            tk_pods = [p for p in ctx.pods if _role(p) == "toolkit"]
            tk_line = ""
            for p in tk_pods:
                for cs in (_get(p, "status", "containerStatuses") or []) + (
                    _get(p, "status", "initContainerStatuses") or []
                ):
                    tk_line = tk_line or _last_line(ctx.log(p, str(cs.get("name"))))
            detail = (
                f"DaemonSet {tk_ns}/{TOOLKIT_DS} ready {ready}/{desired}"
                + (f"; toolkit last log line: {tk_line}" if tk_line else "")
                + f"; pod event: {evidence}"
            )
            return (
                Diagnosis(
                    row=row,
                    object=_pod_obj(pod, container),
                    reason="stuck in ContainerCreating: the container toolkit is not ready, so "
                    "the runtime cannot inject the GPU yet",
                    detail=detail,
                    fix=fixes.toolkit(
                        tk_ns, f"re-create the pod (kubectl -n {ns} delete pod {name}; pulumi up)"
                    ),
                    blocking=not non_blocking,
                    variant="toolkit-not-ready",
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
    return (
        Diagnosis(
            row=row,
            object=_pod_obj(pod, container),
            reason="stuck in ContainerCreating"
            + (" with the toolkit ready: the runtime configuration conflicts" if toolkit is not None else ""),
            detail=evidence,
            fix=f"kubectl -n {ns} describe pod {name} (Events); check the node's runtime: "
            f"minikube -p {ctx.profile} ssh -- docker info | grep -i runtime; "
            f"{fixes.toolkit_logs(OPERATOR_NAMESPACE)}",
            blocking=not non_blocking,
            variant="runtime",
        ),
        rank + (_NON_BLOCKING_RANK if non_blocking else 0),
    )
