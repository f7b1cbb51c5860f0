"""The lab's GPU Pod specs, once: the smoke Pod (the chapter's) and the compute Pod.

Built here as plain dicts (the Kubernetes Pod ``spec``), so the program's components
(``components/smoke.py``, ``components/compute.py``: a ``pulumi_kubernetes`` Pod) and the
per-node fleet check (``gpulab.kube.fleet``: the same Pods pinned to each node, made through
the API) run exactly the same containers, limits and restart policy.
"""

from __future__ import annotations

from typing import Any

from gpulab.core import names
from gpulab.kube.compute import COMPUTE_SCRIPT
from gpulab.kube.smoke_gpus import SMOKE_SCRIPT

#: The smoke Pod's one container (the chapter's ``cuda``).
SMOKE_CONTAINER = "cuda"
#: ``gpuStack: dra``: the smoke Pod's ``spec.resourceClaims`` entry, and the request in its
#: ResourceClaimTemplate (:func:`claim_template`).
CLAIM = "gpus"
#: ``gpuStack: dra``: the smoke Pod's scheduling gate. The check removes it once it watches the
#: claims (gpulab.kube.dra.observe_claim): a claim made for a Pod is deallocated and deleted when
#: the Pod is done, so it must be seen while the Pod holds it.
CLAIM_GATE = "gpulab.dev/claim-observed"


def compute_container_names(gpus: int) -> list[str]:
    """The compute Pod's container names: ``["vectoradd-0", ..., "vectoradd-<gpus-1>"]``.

    Raises:
        ValueError: ``gpus`` < 1.
    """
    if gpus < 1:
        raise ValueError(f"the compute Pod needs at least one container (one GPU each), got gpus={gpus}")
    return [f"{names.COMPUTE_CONTAINER_PREFIX}{i}" for i in range(gpus)]


def _spec(containers: list[dict[str, Any]], runtime_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": containers}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return spec


def smoke(
    image: str,
    gpus: int,
    runtime_class: str | None = None,
    resource: str = names.GPU_RESOURCE,
    claim_template: str | None = None,
) -> dict[str, Any]:
    """The smoke Pod's spec, as in the chapter (plus an explicit container name, and
    ``runtimeClassName`` when given): one container ``cuda`` running ``nvidia-smi``, then
    ``nvidia-smi -L`` (the GPUs it got: :data:`gpulab.kube.smoke_gpus.SMOKE_SCRIPT`), its
    limit ``gpus`` of ``resource``, run once (``restartPolicy: Never``).

    ``claim_template`` (``gpuStack: dra``): no ``resource`` limit at all; the Pod's
    ``spec.resourceClaims`` entry :data:`CLAIM` is made from that ResourceClaimTemplate
    (:func:`claim_template`, which asks for the ``gpus``) and the container uses it
    (``resources.claims``), as Kubernetes v1.36.3 core/v1 PodResourceClaim and ResourceClaim
    name the fields; it is made with the scheduling gate :data:`CLAIM_GATE`, which its check
    removes once it watches the claim."""
    container: dict[str, Any] = {
        "name": SMOKE_CONTAINER,
        "image": image,
        "command": ["sh", "-c", SMOKE_SCRIPT],
        "resources": {"limits": {resource: str(gpus)}},
    }
    if claim_template is None:
        return _spec([container], runtime_class)
    container["resources"] = {"claims": [{"name": CLAIM}]}
    spec = _spec([container], runtime_class)
    spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": claim_template}]
    spec["schedulingGates"] = [{"name": CLAIM_GATE}]
    return spec


def claim_template(device_class: str, gpus: int) -> dict[str, Any]:
    """The ``spec`` of the smoke Pod's ResourceClaimTemplate (``resource.k8s.io/v1``
    ResourceClaimTemplateSpec: the claims' own ``spec`` under ``spec``): one
    request :data:`CLAIM` for exactly ``gpus`` devices of ``device_class`` (``exactly``:
    ``deviceClassName``, ``allocationMode: ExactCount``, ``count``; Kubernetes v1.36.3
    resource/v1 DeviceRequest and ExactDeviceRequest).

    Raises:
        ValueError: ``gpus`` < 1.
    """
    if gpus < 1:
        raise ValueError(f"a claim asks for at least one GPU, got gpus={gpus}")
    exactly = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": gpus}
    return {"spec": {"devices": {"requests": [{"name": CLAIM, "exactly": exactly}]}}}


def compute(
    image: str,
    gpus: int = 1,
    runtime_class: str | None = None,
    resource: str = names.GPU_RESOURCE,
    claim_template: str | None = None,
) -> dict[str, Any]:
    """The compute Pod's spec: ``gpus`` containers (:func:`compute_container_names`), each with
    one ``resource``, listing the GPUs it sees and then running vectorAdd
    (:data:`gpulab.kube.compute.COMPUTE_SCRIPT`), run once.

    ``claim_template`` (``gpuStack: dra``): no ``resource`` limit; the Pod's claim :data:`CLAIM`
    comes from that template (:func:`compute_claim_template`: one request of one GPU per
    container) and container ``i`` uses request ``gpu-<i>`` of it (core/v1 ResourceClaim
    ``request``, Kubernetes v1.36.3), so each holds its own GPU.

    Raises:
        ValueError: ``gpus`` < 1.
    """
    containers: list[dict[str, Any]] = [
        {
            "name": name,
            "image": image,
            "command": ["sh", "-c", COMPUTE_SCRIPT],
            "resources": {"limits": {resource: "1"}},
        }
        for name in compute_container_names(gpus)
    ]
    if claim_template is None:
        return _spec(containers, runtime_class)
    for i, c in enumerate(containers):
        c["resources"] = {"claims": [{"name": CLAIM, "request": f"gpu-{i}"}]}
    spec = _spec(containers, runtime_class)
    spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": claim_template}]
    return spec


def compute_claim_template(device_class: str, gpus: int) -> dict[str, Any]:
    """The ``spec`` of the compute Pod's ResourceClaimTemplate: ``gpus`` requests ``gpu-<i>``,
    each for exactly one device of ``device_class`` (one per vectorAdd container: :func:`compute`).

    Raises:
        ValueError: ``gpus`` < 1.
    """
    if gpus < 1:
        raise ValueError(f"a claim asks for at least one GPU, got gpus={gpus}")
    one = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1}
    return {
        "spec": {"devices": {"requests": [{"name": f"gpu-{i}", "exactly": dict(one)} for i in range(gpus)]}}
    }
