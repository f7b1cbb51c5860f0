"""The lab's names and fixed figures, each defined once.

Pure: no import beyond the standard library, so config parsing, the checks, the diagnosis,
the fixes, the components and the policy pack can all import it.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "COMPUTE_CONTAINER_PREFIX",
    "COMPUTE_POD",
    "DCGM_EXPORTER_PORT",
    "DCGM_EXPORTER_SERVICE",
    "DEFAULT_COMPUTE_IMAGE",
    "DEFAULT_PROBE_IMAGE",
    "DEFAULT_PROFILE",
    "DEVICE_LIST_ENVVAR",
    "DEVICE_LIST_STRATEGY_ENV",
    "DEVICE_PLUGIN_DS",
    "GPU_RESOURCE",
    "LAB_LABELS",
    "MIN_CPUS",
    "MIN_MEMORY_MIB",
    "OPERATOR_CHART",
    "OPERATOR_NAMESPACE",
    "OPERATOR_RELEASE",
    "PROJECT",
    "RELEASE_DESCRIPTION",
    "SHARED_GPU_RESOURCE",
    "SIMULATED_ANNOTATION",
    "SMOKE_POD",
    "TOOLKIT_DS",
    "VECTORADD_BINARY",
    "VECTORADD_PASSED",
    "WHOLE_GPU_RESOURCES",
    "WORKLOAD_NAMESPACE",
]

#: The project: the stack config namespace (``gpu-lab:<key>``) and the ``part-of`` label.
PROJECT: Final = "gpu-lab"
#: The default cluster name (minikube profile, kind cluster, sim cluster): the project's.
DEFAULT_PROFILE: Final = PROJECT
#: The lab's marker on the objects it creates: either label with the value :data:`PROJECT`
#: (the namespaces carry ``managed-by``, the lab's Pods ``part-of``). An object of a name the lab
#: would create that carries neither is someone else's (gpulab.kube.takeover).
LAB_LABELS: Final = ("app.kubernetes.io/managed-by", "app.kubernetes.io/part-of")
#: The description of every Helm release the lab installs (Helm stores it in the release record):
#: the lab's marker on a release, which carries no labels of the lab's.
RELEASE_DESCRIPTION: Final = "installed by gpu-lab"

#: The extended resource the NVIDIA device plugin registers (allocatable, capacity, limits).
GPU_RESOURCE: Final = "nvidia.com/gpu"
#: What the device plugin registers instead under time-slicing with ``renameByDefault: true``
#: (NVIDIA/k8s-device-plugin README, "With CUDA Time-Slicing": ``<resource-name>.shared``).
SHARED_GPU_RESOURCE: Final = GPU_RESOURCE + ".shared"
#: The names a whole GPU is advertised under: one of them, never both by one plugin config.
WHOLE_GPU_RESOURCES: Final = (GPU_RESOURCE, SHARED_GPU_RESOURCE)

#: The GPU Operator's namespace, Helm release and chart name.
OPERATOR_NAMESPACE: Final = "gpu-operator"
OPERATOR_RELEASE: Final = "gpu-operator"
OPERATOR_CHART: Final = "gpu-operator"
#: DaemonSets the operator creates (names from the chart's ClusterPolicy, v26.7.0).
DEVICE_PLUGIN_DS: Final = "nvidia-device-plugin-daemonset"
#: The device plugin's environment variable naming how allocated GPUs are passed to the
#: container runtime, and its value ``envvar``: ``NVIDIA_VISIBLE_DEVICES=<the allocated UUIDs>``
#: in the container's environment (NVIDIA/k8s-device-plugin v0.20.0
#: cmd/nvidia-device-plugin/main.go ``device-list-strategy``, api/config/v1/consts.go).
DEVICE_LIST_STRATEGY_ENV: Final = "DEVICE_LIST_STRATEGY"
DEVICE_LIST_ENVVAR: Final = "envvar"
#: The DCGM exporter's DaemonSet and Service (also its Pods' ``app`` label) and the Service's
#: port (``gpu-metrics``): NVIDIA/gpu-operator ``assets/state-dcgm-exporter/0600_service.yaml``.
DCGM_EXPORTER_SERVICE: Final = "nvidia-dcgm-exporter"
DCGM_EXPORTER_PORT: Final = 9400
TOOLKIT_DS: Final = "nvidia-container-toolkit-daemonset"

#: Annotation (value ``"true"``) on every object the lab fakes where no operator process runs.
SIMULATED_ANNOTATION: Final = "gpulab.dev/simulated"

#: The smoke Pod (the chapter's first GPU Pod).
SMOKE_POD: Final = "gpu-smoke"
#: Where the lab's own Pods run (the smoke Pod, the benchmark Pod).
WORKLOAD_NAMESPACE: Final = "default"
#: The chapter's CUDA base image: the default smoke image and the Docker GPU self-test's.
DEFAULT_PROBE_IMAGE: Final = "nvidia/cuda:12.4.1-base-ubuntu22.04"

#: The compute check's Pod: a CUDA kernel on the GPU, after the smoke Pod (components/compute.py).
COMPUTE_POD: Final = "gpu-compute"
#: Container ``i`` of the compute Pod is ``vectoradd-<i>`` (one GPU each).
COMPUTE_CONTAINER_PREFIX: Final = "vectoradd-"
#: NVIDIA's CUDA vectorAdd sample, the image the GPU Operator's docs ("Verification: Running
#: Sample GPU Applications") run; CUDA 12.5 (driver >= 555.42.02, gpulab.core.cuda). Pinned by tag.
DEFAULT_COMPUTE_IMAGE: Final = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
#: Where that image keeps the sample, beside a ``/bin/sh``. The image's Dockerfile lives at
#: gitlab.com/nvidia/container-images/samples, which the lab's source tools cannot reach; the
#: path is the one Red Hat's NVIDIA CI runs it by (rh-ecosystem-edge/nvidia-ci
#: internal/testworkloads, ``cuda-sample:vectoradd-cuda12.5.0-ubi8`` with ``/bin/sh -c
#: /cuda-samples/vectorAdd``), as do users' Pods of the ``-ubuntu22.04`` tag.
VECTORADD_BINARY: Final = "/cuda-samples/vectorAdd"
#: The line the vectorAdd sample prints when the GPU computed the right sum (NVIDIA's docs).
VECTORADD_PASSED: Final = "Test PASSED"

#: What the lab's node needs at least: with fewer, the operator, NFD and DCGM pods sit
#: Pending (minikube's own default is 2 CPUs). Memory in MiB (8 GiB).
MIN_CPUS: Final = 4
MIN_MEMORY_MIB: Final = 8192
