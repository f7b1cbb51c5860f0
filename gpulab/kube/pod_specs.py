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
    image: str, gpus: int, runtime_class: str | None = None, resource: str = names.GPU_RESOURCE
) -> dict[str, Any]:
    """The smoke Pod's spec, as in the chapter (plus an explicit container name, and
    ``runtimeClassName`` when given): one container ``cuda`` running ``nvidia-smi``, then
    ``nvidia-smi -L`` (the GPUs it got: :data:`gpulab.kube.smoke_gpus.SMOKE_SCRIPT`), its
    limit ``gpus`` of ``resource``, run once (``restartPolicy: Never``)."""
    container = {
        "name": SMOKE_CONTAINER,
        "image": image,
        "command": ["sh", "-c", SMOKE_SCRIPT],
        "resources": {"limits": {resource: str(gpus)}},
    }
    return _spec([container], runtime_class)


def compute(
    image: str, gpus: int = 1, runtime_class: str | None = None, resource: str = names.GPU_RESOURCE
) -> dict[str, Any]:
    """The compute Pod's spec: ``gpus`` containers (:func:`compute_container_names`), each with
    one ``resource``, listing the GPUs it sees and then running vectorAdd
    (:data:`gpulab.kube.compute.COMPUTE_SCRIPT`), run once.

    Raises:
        ValueError: ``gpus`` < 1.
    """
    containers = [
        {
            "name": name,
            "image": image,
            "command": ["sh", "-c", COMPUTE_SCRIPT],
            "resources": {"limits": {resource: "1"}},
        }
        for name in compute_container_names(gpus)
    ]
    return _spec(containers, runtime_class)
