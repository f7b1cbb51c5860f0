"""``smoke-pod-dra-claim``: in DRA mode (``gpuStack: dra``) the smoke Pod gets its GPUs through a
ResourceClaimTemplate of NVIDIA's DeviceClass, never through ``nvidia.com/gpu``.

Two resources are read: the smoke Pod (``spec.resourceClaims`` entries made from a template,
each container's ``resources.claims`` naming one of them, no ``nvidia.com/gpu``-family limit) and
its ResourceClaimTemplate (one request for ``exactly`` a positive ``count`` of ``deviceClass``,
default ``gpu.nvidia.com``: sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0 templates/deviceclass-gpu.yaml).
A Pod without ``spec.resourceClaims`` is the device-plugin path: not this policy's
(``smoke-pod-gpu-limit`` governs it)."""

from __future__ import annotations

from typing import Any, Final

from gpulab.config.dra import DEVICE_CLASS
from gpulab.config.mig import RESOURCE
from gpulab.core.names import SMOKE_POD
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, require_known, show
from policy.validators.smoke.pod import _smoke_containers
from policy.validators.spec import _STR, MANDATORY, Settings, Spec
from policy.validators.tokens import T_POD

#: The ResourceClaimTemplate's type token (pulumi_kubernetes' CustomResource of resource.k8s.io/v1).
T_CLAIM_TEMPLATE: Final = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
#: Its name (components/smoke.py CLAIM_TEMPLATE).
TEMPLATE: Final = f"{SMOKE_POD}-gpus"
_FIX: Final = (
    "in DRA mode the smoke Pod claims its GPUs: spec.resourceClaims[].resourceClaimTemplateName "
    f"{TEMPLATE}, the container's resources.claims naming that entry, no nvidia.com/gpu limit "
    "(components/smoke.py builds it so with gpuStack=dra)"
)


def _pod(containers: list[dict[str, Any]], props: dict[str, Any]) -> list[Finding]:
    claims = dig(props, "spec", "resourceClaims") or []
    if not claims:
        return []  # the device-plugin path
    templated = {
        str(c.get("name")) for c in claims if isinstance(c, dict) and c.get("resourceClaimTemplateName")
    }
    used = [
        {str(u.get("name")) for u in dig(c, "resources", "claims") or [] if isinstance(u, dict)}
        for c in containers
    ]
    counted = [k for c in containers for k in dig(c, "resources", "limits") or {} if RESOURCE.match(str(k))]
    ok = bool(templated) and any(u and u <= templated for u in used) and not counted
    observed = (
        f"resourceClaims from templates {sorted(templated)}, containers use {[sorted(u) for u in used]}"
    )
    observed += f", counted GPU limits {counted}" if counted else ""
    return [
        _finding(
            "smoke-pod-dra-claim",
            ok,
            observed,
            "a container using a claim made from a ResourceClaimTemplate, and no nvidia.com/gpu limit",
            _FIX,
        )
    ]


def _template(props: dict[str, Any], device_class: str) -> list[Finding]:
    if require_known(dig(props, "metadata", "name"), "metadata.name") != TEMPLATE:
        return []
    requests = (
        require_known(dig(props, "spec", "spec", "devices", "requests"), "spec.spec.devices.requests") or []
    )
    exact = [dig(r, "exactly") or {} for r in requests]
    ok = (
        len(exact) == 1
        and exact[0].get("deviceClassName") == device_class
        and int(exact[0].get("count") or 0) >= 1
    )
    return [
        _finding(
            "smoke-pod-dra-claim",
            ok,
            f"requests {show(requests)}",
            f"one request for exactly a count >= 1 of DeviceClass {device_class}",
            _FIX,
        )
    ]


def check_smoke_dra_claim(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    """The smoke Pod's claims, or its ResourceClaimTemplate's request (module docstring)."""
    if rtype == T_CLAIM_TEMPLATE:
        return _template(props, str(cfg.get("deviceClass") or DEVICE_CLASS))
    containers = _smoke_containers(rtype, props, cfg) if rtype == T_POD else None
    return _pod(containers, props) if containers is not None else []


SPEC: Final = Spec(
    "smoke-pod-dra-claim",
    "In DRA mode, claim the smoke Pod's GPUs through a ResourceClaimTemplate of NVIDIA's DeviceClass.",
    MANDATORY,
    "resource",
    check_smoke_dra_claim,
    {"podName": {**_STR, "default": SMOKE_POD}, "deviceClass": {**_STR, "default": DEVICE_CLASS}},
)
