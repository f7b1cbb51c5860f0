"""The first fixes the policies quote from the chapter's troubleshooting table (表 2), kept
together as one table."""

from __future__ import annotations

from typing import Final

# The chapter's troubleshooting table (表 2, 第一反应), as commands, where it has a row.
FIX_MINIKUBE_GPU: Final = (
    "redo the host's Docker GPU setup: sudo nvidia-ctk runtime configure --runtime=docker && "
    "sudo systemctl restart docker, prove it with docker run --rm --gpus all "
    "nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi (表 2: minikube start hangs or reports a GPU "
    "error)"
)
FIX_RESOURCES: Final = (
    "give the node >= {cpus} CPUs / {mib} MiB: pulumi config set cpus {cpus} && pulumi config set "
    "memoryMiB {mib}; kubectl describe pod shows who is blocked (表 2: operator pods stay Pending)"
)
FIX_TOOLKIT: Final = (
    "kubectl -n gpu-operator logs -l app=nvidia-container-toolkit-daemonset; wait for the "
    "toolkit DaemonSet to be ready, then retry (表 2: gpu-smoke stays ContainerCreating)"
)
FIX_CUDA: Final = (
    "compare the image's CUDA with the baseline card's CUDA ceiling and change the image tag "
    "(表 2: the Pod starts but reports insufficient / unsatisfied condition: cuda>=X.Y)"
)
FIX_ALLOCATABLE: Final = (
    "check the node sees the GPU: minikube ssh -- nvidia-smi; then the device plugin's log "
    "(表 2: allocatable prints 0)"
)
