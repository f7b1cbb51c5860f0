"""``smoke-pod-gpu-limit``: the smoke Pod requests a GPU in its limits: ``nvidia.com/gpu``,
``nvidia.com/gpu.shared`` under time-slicing's rename (gpulab.config.time_slicing), or under MIG
``mixed`` a ``nvidia.com/mig-<profile>`` (gpulab.config.mig). A Pod with ``spec.resourceClaims``
(``gpuStack: dra``) is ``smoke-pod-dra-claim``'s."""

from __future__ import annotations

from typing import Any, Final

from gpulab.config.mig import RESOURCE
from gpulab.core.names import SHARED_GPU_RESOURCE, SMOKE_POD
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, show
from policy.validators.smoke.pod import _smoke_containers
from policy.validators.spec import _STR, MANDATORY, Settings, Spec
from policy.validators.tokens import (
    GPU_RESOURCE,
)


def check_smoke_gpu_limit(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    containers = _smoke_containers(rtype, props, cfg)
    if containers is None or dig(props, "spec", "resourceClaims"):
        return []  # no Pod of ours, or DRA's: its GPUs come through a claim (smoke-pod-dra-claim)
    names = [_gpu_key(c) for c in containers]
    limits = [dig(c, "resources", "limits", n) for c, n in zip(containers, names, strict=True)]
    observed = ", ".join(
        f"{dig(c, 'name')}: limits[{n}]={show(v)}" for c, n, v in zip(containers, names, limits, strict=True)
    )

    def positive(v: Any) -> bool:
        try:
            return int(str(v)) >= 1
        except ValueError:
            return False

    return [
        _finding(
            "smoke-pod-gpu-limit",
            any(positive(v) for v in limits),
            observed or "no containers",
            f"a container with resources.limits[{GPU_RESOURCE}] (or {SHARED_GPU_RESOURCE}, "
            "nvidia.com/mig-<profile>) >= 1",
            "request the GPU as the chapter's step 5 does: resources.limits nvidia.com/gpu: 1 "
            "(scripts/pulumi config set gpu-lab:smokeGpus 1); without it the Pod is scheduled anywhere "
            "and gets no GPU",
        )
    ]


def _gpu_key(container: Any) -> str:
    """The GPU resource a container's limits name: a MIG or shared one when there is one,
    else ``nvidia.com/gpu``."""
    limits = dig(container, "resources", "limits") or {}
    other = [k for k in limits if isinstance(k, str) and RESOURCE.match(k) and k != GPU_RESOURCE]
    return other[0] if other else GPU_RESOURCE


SPEC: Final = Spec(
    "smoke-pod-gpu-limit",
    "Request nvidia.com/gpu in the smoke Pod's limits.",
    MANDATORY,
    "resource",
    check_smoke_gpu_limit,
    {"podName": {**_STR, "default": SMOKE_POD}},
)
