"""The smoke Pod's rows: ``cuda-image-newer-than-driver`` (the image needs a newer CUDA than
the host driver supports) and ``smoke-container-creating`` (stuck in ContainerCreating; an
operand stuck the same way reads ``pod-container-creating``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from gpulab.core import cuda, fixes, fixes_operator
from gpulab.core.names import COMPUTE_POD, OPERATOR_NAMESPACE, SMOKE_POD, TOOLKIT_DS
from gpulab.diagnose import messages
from gpulab.diagnose.containers import _known
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

#: The config key of a lab Pod's image, named in the fix (other workloads: the smoke image's).
_IMAGE_KEYS: Final = {SMOKE_POD: "smokeImage", COMPUTE_POD: "computeImage"}


#: Messages that say the image's CUDA is newer than the driver without naming the version.
_CUDA_TOO_NEW: Final = ("cuda-driver-insufficient", "forward-compat-unsupported")


def _cuda_diagnosis(
    ctx: _Ctx, pod: Json, container: str, texts: Sequence[str], rank: int
) -> tuple[Diagnosis, int] | None:
    """``cuda-image-newer-than-driver`` when ``texts`` (status and event messages, the log)
    say the image needs a newer CUDA than the host driver supports: the runtime's
    ``unsatisfied condition: cuda>=X.Y`` (variant ``cuda-X.Y``), or the CUDA runtime's
    ``CUDA driver version is insufficient`` / ``forward compatibility was attempted on non
    supported HW`` (variant: that message's id, the version from the image tag)."""
    match = None
    evidence = ""
    for text in texts:
        match = _CUDA_COND_RE.search(text)
        if match:
            evidence = text
            break
    image = _container_image(pod, container) or "?"
    variant = ""
    if match is not None:
        need: str | None = match.group(1)
        variant = f"cuda-{need}"
    else:
        hit = messages.find(texts, kinds=("host-driver",))
        if hit is None or hit[0].id not in _CUDA_TOO_NEW:
            return None
        variant, evidence, need = hit[0].id, hit[1], cuda.image_cuda_version(image)
    image_cuda = cuda.image_cuda_version(image) or need
    max_match = _DRIVER_MAX_RE.search(evidence)
    host_max = max_match.group(1) if max_match else ctx.host_max_cuda
    disagree = _facts_disagree(ctx, pod, container, need, evidence, variant, rank)
    if disagree is not None:
        return disagree
    parts = [f"image {image} needs CUDA >= {need}" if need else f"the CUDA in image {image} is too new"]
    if image_cuda != need:
        parts.append(f"(its tag says CUDA {image_cuda})")
    if host_max:
        parts.append(f"but the host driver supports CUDA <= {host_max}")
    else:
        parts.append("but the host driver supports an older CUDA (max unknown here)")
    if _role(pod) == "validator":
        fix = fixes_operator.operand_cuda(image, need, host_max)
    else:
        fix = fixes.cuda_image(image, need, host_max, key=_IMAGE_KEYS.get(_name(pod), "smokeImage"))
    diag = Diagnosis(
        row="cuda-image-newer-than-driver",
        object=_pod_obj(pod, container),
        reason=" ".join(parts),
        detail=_one_line(evidence),
        fix=fix,
        variant=variant,
    )
    return diag, rank


def _facts_disagree(
    ctx: _Ctx, pod: Json, container: str, need: str | None, evidence: str, variant: str, rank: int
) -> tuple[Diagnosis, int] | None:
    """Check before blaming: the message says the image's CUDA is newer than the driver, but
    the host probe says the host's driver supports it (``ctx.host_max_cuda`` >= ``need``).
    Then "upgrade the driver" or "an older image" would be wrong: the driver the container saw
    is not the host's (a node image or VM with its own driver, a Pod on another node, a
    compat library in the image). None when the facts agree or are unknown."""
    if not need or not ctx.host_max_cuda:
        return None
    try:
        fits = cuda.parse_version(ctx.host_max_cuda) >= cuda.parse_version(need)
    except ValueError:
        return None
    if not fits:
        return None
    node = str(_get(pod, "spec", "nodeName") or "?")
    return (
        Diagnosis(
            row="cuda-image-newer-than-driver",
            object=_pod_obj(pod, container),
            reason=(
                f"the runtime says the image needs CUDA >= {need}, but the host's driver supports CUDA "
                f"{ctx.host_max_cuda} (host probe): the driver the container saw on node {node} is not "
                "the host's, so neither an older image nor a driver upgrade is the fix"
            ),
            detail=_one_line(evidence),
            fix=f"{fixes.driver_mismatch(ctx.profile, ctx.node_command)}; then re-create the Pod: "
            f"{fixes.KUBECTL} -n {_ns(pod)} delete pod {_name(pod)} && make lab",
            variant="facts-disagree",
        ),
        rank,
    )


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
                        tk_ns, f"re-create the pod (scripts/kubectl -n {ns} delete pod {name}; make verify)"
                    ),
                    blocking=not non_blocking,
                    variant="toolkit-not-ready",
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
    known = _known(ctx, pod, container or "", [str(e.get("message") or "") for e in warnings])
    if known is not None:
        message, quoted, fix = known
        return (
            Diagnosis(
                row=row,
                object=_pod_obj(pod, container),
                reason=f"stuck in ContainerCreating: {message.cause}",
                detail=_one_line(quoted),
                fix=f"{fix}; scripts/kubectl -n {ns} describe pod {name} (Events)",
                blocking=not non_blocking,
                variant=message.id,
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
            fix=f"scripts/kubectl -n {ns} describe pod {name} (Events); check the node's runtime: "
            f"minikube -p {ctx.profile} ssh -- docker info | grep -i runtime; "
            f"{fixes.toolkit_logs(OPERATOR_NAMESPACE)}",
            blocking=not non_blocking,
            variant="runtime",
        ),
        rank + (_NON_BLOCKING_RANK if non_blocking else 0),
    )
