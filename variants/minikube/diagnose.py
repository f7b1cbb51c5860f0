"""A failed ``minikube start`` (the troubleshooting row ``minikube-start-failed``).

The minikube variant's own diagnosis; the cluster-wide rows are gpulab.diagnose's.
"""

from __future__ import annotations

import re
from typing import Final

from gpulab.core import fixes
from gpulab.diagnose.fields import _one_line
from gpulab.diagnose.record import DEFAULT_PROBE_IMAGE, DEFAULT_PROFILE, Diagnosis

_MINIKUBE_GPU_RE: Final = re.compile(
    r'could not select device driver ".*" with capabilities: \[\[gpu\]\]|'
    r"unknown or invalid runtime name: nvidia|nvidia-container-cli|nvidia-container-runtime|"
    r"Error response from daemon:.*nvidia",
    re.IGNORECASE,
)
_MINIKUBE_DOCKER_DOWN_RE: Final = re.compile(
    r"Cannot connect to the Docker daemon|PROVIDER_DOCKER_NOT_RUNNING|docker daemon.*not running",
    re.IGNORECASE,
)
_MINIKUBE_RESOURCES_RE: Final = re.compile(
    r"RSRC_INSUFFICIENT|Requested (?:cpu count|memory allocation).*(?:greater|more) than",
    re.IGNORECASE,
)


def diagnose_minikube_start(
    stderr: str, *, profile: str = DEFAULT_PROFILE, image: str = DEFAULT_PROBE_IMAGE
) -> Diagnosis:
    """Diagnose a failed ``minikube start`` from its stderr (row ``minikube-start-failed``).

    Variants: ``docker-gpu-runtime`` (Docker cannot give containers a GPU: ``could not
    select device driver "" with capabilities: [[gpu]]``, ``unknown or invalid runtime name:
    nvidia``, ``docker: Error response from daemon: ... nvidia``), ``docker-not-running``,
    ``insufficient-resources`` and ``unknown``. The chapter's first reaction for GPU errors
    (and for anything unrecognised) is to redo the Docker nvidia runtime configuration and
    prove it with ``docker run --rm --gpus all <image> nvidia-smi``. Always returns a
    diagnosis; ``detail`` quotes the matching line (or the last non-empty one).
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]

    def line_for(pattern: re.Pattern[str]) -> str | None:
        return next((line for line in lines if pattern.search(line)), None)

    obj = f"minikube profile {profile}"
    redo = f"{fixes.docker_gpus(image)}; then minikube delete -p {profile} && make lab"
    causes = (
        (
            _MINIKUBE_GPU_RE,
            "docker-gpu-runtime",
            "Docker cannot hand a GPU to a container: its nvidia runtime is not configured, or "
            "Docker was not restarted after configuring it",
            redo,
        ),
        (
            _MINIKUBE_DOCKER_DOWN_RE,
            "docker-not-running",
            "the Docker daemon is not running or not reachable by this user",
            f"{fixes.start_docker()}; docker info; {fixes.docker_group()}; then "
            f"{fixes.prove_docker_gpus(image)}",
        ),
        (
            _MINIKUBE_RESOURCES_RE,
            "insufficient-resources",
            "the machine (or Docker's limits) has fewer CPUs or less memory than asked",
            f"the lab needs {fixes.minimum()}: {fixes.set_resources()}, on a machine that has them "
            "(nproc; free -g)",
        ),
    )
    for pattern, variant, reason, fix in causes:
        hit = line_for(pattern)
        if hit is not None:
            return Diagnosis(
                row="minikube-start-failed",
                object=obj,
                reason=reason,
                detail=_one_line(hit),
                fix=fix,
                variant=variant,
            )
    return Diagnosis(
        row="minikube-start-failed",
        object=obj,
        reason="minikube start failed or hung; the usual cause is Docker's nvidia runtime",
        detail=_one_line(lines[-1]) if lines else "no stderr",
        fix=f"{redo}; minikube -p {profile} logs | tail -50 for more",
        variant="unknown",
    )
