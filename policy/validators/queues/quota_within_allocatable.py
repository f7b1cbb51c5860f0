"""``cluster-queue-quota-within-allocatable``: the lab's ClusterQueue gives no GPU resource a
``nominalQuota`` above the allocatable the readiness gate measured.

The ClusterQueue (``kueue.x-k8s.io/v1beta2``, components/queues.py) is made from the gate's
output and carries it in the annotation :data:`gpulab.config.queues.MEASURED_ANNOTATION`; every
``nominalQuota`` of an NVIDIA GPU resource (``nvidia.com/gpu``, ``.shared``, ``mig-*``) in its
``resourceGroups`` must be an integer no greater than that. A quota above it would admit Jobs
whose Pods then wait Pending for GPUs no node has (Kueue counts quota, not nodes); a quota without
the annotation did not come from the measurement. Known only once the gate ran: at preview it
reads "not evaluated", never a pass. Checked before the ClusterQueue is created, so a violating
quota is refused, not repaired."""

from __future__ import annotations

from typing import Any, Final

from gpulab.config.mig import RESOURCE
from gpulab.config.queues import CLUSTER_QUEUE, GROUP, MEASURED_ANNOTATION, VERSION
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, require_known, show
from policy.validators.spec import MANDATORY, Settings, Spec

#: The ClusterQueue's type token (pulumi_kubernetes' CustomResource of kueue.x-k8s.io/v1beta2).
T_CLUSTER_QUEUE: Final = f"kubernetes:{GROUP}/{VERSION}:ClusterQueue"
ITEM: Final = "cluster-queue-quota-within-allocatable"
_FIX: Final = (
    "give the ClusterQueue the quota the gate measured (components/queues.py makes it from the gate's "
    "allocatableGpus output); never type a number in"
)


def quotas(spec: Any) -> dict[str, Any]:
    """``{resource: nominalQuota}`` of the NVIDIA GPU resources in a ClusterQueue spec's
    resourceGroups (every flavor)."""
    found: dict[str, Any] = {}
    for group in dig(spec, "resourceGroups") or []:
        for flavor in dig(group, "flavors") or []:
            for r in dig(flavor, "resources") or []:
                name = str(dig(r, "name"))
                if RESOURCE.match(name):
                    found[f"{dig(flavor, 'name')}/{name}"] = dig(r, "nominalQuota")
    return found


def _count(value: Any) -> int | None:
    """A whole count from a quota or the annotation: ``2``, ``"2"`` or the engine's ``2.0``
    (numbers reach a policy as floats); None for anything else (``"2.5"``, ``"lots"``, ``"2Gi"``)."""
    try:
        number = float(str(value))
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def check_quota(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
    if rtype != T_CLUSTER_QUEUE or dig(props, "metadata", "name") != CLUSTER_QUEUE:
        return []
    spec = require_known(dig(props, "spec"), "spec")
    measured = require_known(
        dig(props, "metadata", "annotations", MEASURED_ANNOTATION), "metadata.annotations"
    )
    found = quotas(spec)
    limit = _count(measured)
    values = {k: _count(v) for k, v in found.items()}
    ok = (
        bool(found)
        and limit is not None
        and limit >= 1
        and all(v is not None and v <= limit for v in values.values())
    )
    return [
        _finding(
            ITEM,
            ok,
            f"nominalQuota {show(found)}, measured allocatable {show(measured)}",
            "every GPU resource's nominalQuota an integer no greater than the measured allocatable "
            f"(annotation {MEASURED_ANNOTATION})",
            _FIX,
        )
    ]


SPEC: Final = Spec(
    ITEM,
    "Keep the ClusterQueue's GPU quota within the allocatable the readiness gate measured.",
    MANDATORY,
    "resource",
    check_quota,
)
