"""``minikube start`` failures (:mod:`variants.minikube.diagnose`)."""

from __future__ import annotations

import pytest

from variants.minikube import diagnose

# --- minikube start ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stderr",
    [
        "X Exiting due to PROVIDER_DOCKER_ERROR: docker run ...: exit status 125\n"
        'stderr:\ndocker: Error response from daemon: could not select device driver "" '
        "with capabilities: [[gpu]].\n",
        "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n",
        "docker: Error response from daemon: failed to create task for container: "
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1\n",
    ],
)
def test_minikube_start_gpu_failure(stderr: str) -> None:
    d = diagnose.diagnose_minikube_start(stderr)
    assert d.row == "minikube-start-failed"
    assert d.variant == "docker-gpu-runtime"
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in d.fix
    assert "docker run --rm --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi" in d.fix
    assert d.detail


def test_minikube_start_unknown_failure_still_gives_the_chapter_reaction() -> None:
    d = diagnose.diagnose_minikube_start("E1129 something odd\n! StartHost failed\n")
    assert d.variant == "unknown"
    assert "docker run --rm --gpus all" in d.fix
    assert d.detail == "! StartHost failed"


def test_minikube_start_docker_not_running() -> None:
    d = diagnose.diagnose_minikube_start(
        'X Exiting due to PROVIDER_DOCKER_NOT_RUNNING: "docker version" exit status 1: '
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\n"
    )
    assert d.variant == "docker-not-running"
