"""Is an existing kind cluster one this lab can reuse? Checked before ``up`` sets it up.

``kind create cluster`` is skipped when the cluster exists, so a cluster made without the
lab's config (no ``/dev/null`` mount at ``/var/run/nvidia-container-devices/all`` in its
workers: NVIDIA/nvkind's way of asking the host's runtime for every GPU) would get the
toolkit installed and then show no GPU. Each worker's mounts are read with ``docker
container inspect <worker> --format '{{json .Mounts}}'`` (the Docker Engine API's
``MountPoint``: ``Type``, ``Source``, ``Destination``, ``Mode``, ``RW``, ``Propagation``);
kind turns an ``extraMounts`` entry into a bind mount (``Type: bind``).

Pure: the caller runs the commands.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from gpulab.host import preflight


def mounts_argv(node: str) -> list[str]:
    """``docker container inspect`` of a kind node container, its mounts as JSON."""
    return ["docker", "container", "inspect", node, "--format", "{{json .Mounts}}"]


def worker_findings(name: str, worker: str, mounts_json: str | None, devices_all: str) -> preflight.Finding:
    """``reused-worker-gpus``: the worker ``worker`` of cluster ``name`` has a bind mount at
    ``devices_all``; ``mounts_json`` is :func:`mounts_argv`'s output (None: not inspectable)."""
    try:
        mounts = json.loads(mounts_json) if mounts_json is not None else None
    except ValueError:
        mounts = None
    fix = f"kind delete cluster --name {name} && make lab (the lab's kind config mounts it)"
    if not isinstance(mounts, list):
        return preflight.Finding(
            "reused-worker-gpus",
            False,
            f"kind cluster {name} exists but its worker {worker} cannot be inspected",
            fix,
        )
    hit = [m for m in mounts if isinstance(m, Mapping) and m.get("Destination") == devices_all]
    if hit:
        return preflight.Finding(
            "reused-worker-gpus", True, f"{worker} mounts {hit[0].get('Source')} at {devices_all}"
        )
    return preflight.Finding(
        "reused-worker-gpus",
        False,
        f"kind cluster {name} exists, but its worker {worker} has no mount at {devices_all}: it was not "
        "made with the lab's kind config, so the host's NVIDIA runtime hands it no GPU",
        fix,
    )
