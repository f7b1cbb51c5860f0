"""GPU accounting over pods: what a pod asks for and which pods hold GPUs now."""

from __future__ import annotations

from collections.abc import Iterable

from gpulab.diagnose.fields import _get, _name, _ns, _quantity
from gpulab.diagnose.record import GPU_RESOURCE, Json


def gpu_request(pod: Json, resource: str = GPU_RESOURCE) -> int:
    """Number of ``resource`` (``nvidia.com/gpu``) a pod asks for (its effective request).

    Per container, limits win over requests (for extended resources a limit alone sets the
    request, and both must be equal when both are given). The pod's figure is the larger of
    the sum over ``spec.containers`` and the largest single ``spec.initContainers`` entry,
    as the scheduler computes it.
    """

    def per_container(c: Json) -> int:
        res = c.get("resources") or {}
        lim = (res.get("limits") or {}).get(resource)
        req = (res.get("requests") or {}).get(resource)
        return _quantity(lim if lim is not None else req) if (lim or req) is not None else 0

    spec = pod.get("spec") or {}
    main = sum(per_container(c) for c in spec.get("containers") or [])
    init = max((per_container(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def gpu_holders(
    pods: Iterable[Json], node: str | None = None, resource: str = GPU_RESOURCE
) -> list[tuple[str, int]]:
    """Pods that hold ``resource`` (``nvidia.com/gpu``) now: ``[("namespace/name", count), ...]``.

    A pod holds GPUs when it is bound to a node (``spec.nodeName`` set), has not terminated
    (phase not ``Succeeded``/``Failed``) and its :func:`gpu_request` is > 0; a Pending pod
    not yet bound holds nothing. ``node`` limits the answer to pods bound to that node.
    Order: as given.
    """
    out: list[tuple[str, int]] = []
    for p in pods:
        bound = _get(p, "spec", "nodeName")
        if not bound or (node is not None and bound != node):
            continue
        if _get(p, "status", "phase") in ("Succeeded", "Failed"):
            continue
        count = gpu_request(p, resource)
        if count > 0:
            out.append((f"{_ns(p)}/{_name(p)}", count))
    return out
