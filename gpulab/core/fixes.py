"""The first fixes, written once: the chapter's first reactions (表 2, 第一反应) as commands.

The host preflight, the checklist, the policies, the diagnosis and the variants all quote
these functions, so a reaction reads the same wherever a finding reports it. Each takes
what varies (the profile, a namespace, an image, the ask); the defaults are the lab's
(:mod:`gpulab.core.names`). :func:`cite` appends the troubleshooting row a fix answers.

Every command is printed so that it works as printed from the checkout: cluster commands
go through :data:`KUBECTL` (``scripts/kubectl``: kubectl against the lab's own cluster, the
sim and kind labs included), config through ``scripts/pulumi config set gpu-lab:<key>`` then
``make lab``, a fresh measurement through :data:`REMEASURE` (``make verify``); host commands
(``minikube``, ``docker``, ``nvidia-ctk``, ``sudo ...``) are run as they are. The fixes
for the GPU Operator stack's own failures (the known messages of the device plugin, toolkit,
validator and DCGM exporter, stuck namespaces, CRDs, leftovers) are in
:mod:`gpulab.core.fixes_operator`, written the same way.

Pure: no I/O.
"""

from __future__ import annotations

import contextlib
from typing import Final

from gpulab.core import cuda
from gpulab.core.names import (
    DEFAULT_PROBE_IMAGE,
    DEVICE_PLUGIN_DS,
    MIN_CPUS,
    MIN_MEMORY_MIB,
    OPERATOR_NAMESPACE,
    SMOKE_POD,
    TOOLKIT_DS,
)

__all__ = [
    "ALLOCATABLE_ZERO",
    "ANY_NODE",
    "CUDA_NEWER",
    "KUBECTL",
    "MINIKUBE_START",
    "OPERATOR_PENDING",
    "REMEASURE",
    "SMOKE_CREATING",
    "allocatable",
    "card",
    "cite",
    "config_set",
    "cuda_image",
    "device_plugin_logs",
    "docker_default_runtime",
    "docker_gpus",
    "docker_group",
    "docker_runtime",
    "docker_volume_mounts",
    "driver_mismatch",
    "install_toolkit",
    "measure_tflops",
    "minikube_node",
    "minimum",
    "node_nvidia_smi",
    "node_resources",
    "on_node",
    "pending",
    "prove_docker_gpus",
    "set_resources",
    "sim_allocatable",
    "start_docker",
    "toolkit",
    "toolkit_logs",
    "unhealthy_gpus",
]

# The chapter's troubleshooting rows (表 2, 单机 GPU 集群常见故障与第一反应), as cited.
ALLOCATABLE_ZERO: Final = "allocatable prints 0"
OPERATOR_PENDING: Final = "operator pods stay Pending"
SMOKE_CREATING: Final = "gpu-smoke stays ContainerCreating"
CUDA_NEWER: Final = "the Pod starts but reports insufficient / unsatisfied condition: cuda>=X.Y"
MINIKUBE_START: Final = "minikube start hangs or reports a GPU error"

#: kubectl against the lab's own cluster (the stack's kubeconfig), whichever variant it is.
KUBECTL: Final = "scripts/kubectl"
#: Measure the gate, the smoke test and the compute check again and rewrite the card.
REMEASURE: Final = "make verify"


def config_set(*pairs: tuple[str, object]) -> str:
    """Set stack config and apply it: ``scripts/pulumi config set gpu-lab:K V && ... && make lab``."""
    sets = " && ".join(f"scripts/pulumi config set gpu-lab:{k} {v}" for k, v in pairs)
    return f"{sets} && make lab"


def measure_tflops() -> str:
    """Measure this host's TFLOP/s and put them on the card (gpulab.tflops, then ``make card``)."""
    return ".venv/bin/python -m gpulab.tflops --json > .state/tflops.json, then make card"


def cite(fix: str, row: str) -> str:
    """``fix`` with the troubleshooting row it answers: ``"<fix> (表 2: <row>)"``."""
    return f"{fix} (表 2: {row})"


# --- the host's Docker and NVIDIA container toolkit --------------------------------------


def docker_runtime() -> str:
    """Give Docker the nvidia runtime and restart it (the chapter's first reaction to any
    GPU error at container start)."""
    return "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"


def install_toolkit() -> str:
    """Install the NVIDIA container toolkit, then :func:`docker_runtime`."""
    return "install nvidia-container-toolkit, then " + docker_runtime()


def prove_docker_gpus(image: str = DEFAULT_PROBE_IMAGE) -> str:
    """The proof that Docker hands GPUs to containers: ``nvidia-smi`` in ``image``."""
    return f"docker run --rm --gpus all {image} nvidia-smi"


def docker_gpus(image: str = DEFAULT_PROBE_IMAGE) -> str:
    """Redo the host's Docker GPU set-up and prove it (:func:`docker_runtime`, then
    :func:`prove_docker_gpus`)."""
    return f"{docker_runtime()}; prove it: {prove_docker_gpus(image)}"


def docker_default_runtime() -> str:
    """Make ``nvidia`` Docker's default runtime (kind starts its nodes without ``--gpus``)."""
    return (
        "sudo nvidia-ctk runtime configure --runtime=docker --set-as-default && sudo systemctl restart docker"
    )


def docker_volume_mounts() -> str:
    """Let the toolkit read device requests made as volume mounts (nvkind's ``/dev/null`` mount)."""
    return (
        "sudo nvidia-ctk config --set accept-nvidia-visible-devices-as-volume-mounts=true --in-place "
        "&& sudo systemctl restart docker"
    )


def start_docker() -> str:
    """Start the Docker daemon."""
    return "start the Docker daemon: sudo systemctl start docker"


def docker_group() -> str:
    """Let this user talk to the Docker daemon."""
    return "add your user to the docker group (sudo usermod -aG docker $USER), then log in again"


# --- node resources ----------------------------------------------------------------------


def minimum(cpus: int = MIN_CPUS, memory_mib: int = MIN_MEMORY_MIB) -> str:
    """``">= 4 CPUs / 8 GiB"``: the ask, memory in GiB when whole, else in MiB."""
    memory = f"{memory_mib // 1024} GiB" if memory_mib % 1024 == 0 else f"{memory_mib} MiB"
    return f">= {cpus} CPUs / {memory}"


def set_resources(cpus: int = MIN_CPUS, memory_mib: int = MIN_MEMORY_MIB) -> str:
    """The stack config that asks for ``cpus`` CPUs and ``memory_mib`` MiB, applied (``make lab``)."""
    return config_set(("cpus", cpus), ("memoryMiB", memory_mib))


def node_resources(profile: str) -> str:
    """Operator pods Pending for CPU or memory: give the node the lab's minimum (表 2)."""
    return (
        f"give the node {minimum()} (minikube start --cpus {MIN_CPUS} --memory "
        f"{MIN_MEMORY_MIB // 1024}g): {set_resources()} (minikube cannot resize a profile, so the "
        f"cluster is re-created); see who holds the node: {KUBECTL} describe node; "
        f"minikube -p {profile} ssh -- nproc"
    )


def pending(pod: str = SMOKE_POD) -> str:
    """A Pod that is not scheduled: check the node's size, then what blocks the Pod."""
    return f"confirm the node has {minimum()}; {KUBECTL} describe pod {pod} shows who blocks it"


# --- allocatable and the device plugin ---------------------------------------------------


#: How a fix runs ``{cmd}`` where the lab does not know how to reach the GPU node (an existing
#: cluster's nodes, outputs from before ``nodeCommand``).
ANY_NODE: Final = "{cmd} on the GPU node"


def minikube_node(profile: str) -> str:
    """How a fix runs ``{cmd}`` on the minikube node of ``profile`` (the chapter's lab): the
    template where the variant's own (``VariantSpec.node_command``) is not given."""
    return f"minikube -p {profile} ssh -- {{cmd}}"


def on_node(cmd: str, node: str) -> str:
    """``cmd`` run on the cluster's GPU node: ``node`` is a template with ``{cmd}``
    (``"docker exec gpu-lab-worker {cmd}"``, ``"{cmd}"`` where this host is the node)."""
    return node.replace("{cmd}", cmd)


def node_nvidia_smi(profile: str, node: str | None = None) -> str:
    """Does the node see the GPU: ``nvidia-smi`` on the node (``node``: the variant's template,
    :func:`on_node`; None: inside the minikube node of ``profile``)."""
    return on_node("nvidia-smi", node or minikube_node(profile))


def device_plugin_logs(
    namespace: str = OPERATOR_NAMESPACE, *, addon: bool = False, selector: str | None = None
) -> str:
    """The device plugin's log: the operator's DaemonSet, minikube's addon (``addon``), or the
    DaemonSet whose pods ``selector`` selects (``app.kubernetes.io/name=x``: one the gate was
    told about, e.g. an existing cluster's own plugin)."""
    if addon:
        return f"{KUBECTL} -n kube-system logs ds/{DEVICE_PLUGIN_DS}"
    return f"{KUBECTL} -n {namespace} logs -l {selector or f'app={DEVICE_PLUGIN_DS}'} --tail=50"


def unhealthy_gpus(plugin_logs: str | None = None) -> str:
    """The plugin registered the GPUs and reports them unhealthy (capacity > 0, allocatable
    0): the host's XID and memory-error records, then the plugin's log (:func:`device_plugin_logs`
    unless ``plugin_logs`` is given)."""
    return (
        "look for XID errors on the host: sudo dmesg | grep -i xid; "
        f"nvidia-smi -q | grep -i -A2 -E 'xid|retired|remapp'; {plugin_logs or device_plugin_logs()} "
        "(it logs 'unhealthy'); a GPU that keeps failing needs a host reset or reboot"
    )


def allocatable(profile: str, plugin_logs: str | None = None, node: str | None = None) -> str:
    """Allocatable ``nvidia.com/gpu`` is 0 or missing: the node's GPU (:func:`node_nvidia_smi`),
    then the device plugin's log (:func:`device_plugin_logs` unless ``plugin_logs`` is given) (表 2)."""
    logs = plugin_logs or device_plugin_logs()
    return (
        f"check the node sees the GPU: {node_nvidia_smi(profile, node)}; then the device plugin's log: {logs}"
    )


def sim_allocatable() -> str:
    """The simulated lab's allocatable comes from the kwok node and a stand-in plugin."""
    return (
        "the kwok node advertises simGpus GPUs (scripts/pulumi config get gpu-lab:simGpus; 0 makes a "
        "node without nvidia.com/gpu, simMigDevices its MIG devices: "
        f"{config_set(('simGpus', 1))}) and the device plugin is a stand-in: "
        f"{KUBECTL} -n {OPERATOR_NAMESPACE} get ds {DEVICE_PLUGIN_DS}"
    )


def driver_mismatch(profile: str, node: str | None = None) -> str:
    """The smoke Pod's driver differs from the host's baseline (``node``: :func:`node_nvidia_smi`)."""
    return (
        f"compare the node's and the host's driver: {node_nvidia_smi(profile, node)} and nvidia-smi on "
        f"the host; after a driver upgrade reboot the host, then {REMEASURE} to refresh the baseline"
    )


def card() -> str:
    """The baseline card misses a fact: read the facts again, then write the card."""
    return (
        f"measure the host, the gate, the smoke test and the compute check again, then the card: {REMEASURE}"
    )


# --- the container toolkit ---------------------------------------------------------------


def toolkit_logs(namespace: str = OPERATOR_NAMESPACE) -> str:
    """The operator's container toolkit log."""
    return f"{KUBECTL} -n {namespace} logs -l app={TOOLKIT_DS} --all-containers --tail=50"


def toolkit(namespace: str = OPERATOR_NAMESPACE, then: str = f"re-create the smoke Pod: {REMEASURE}") -> str:
    """A Pod stuck in ContainerCreating: the toolkit's log, wait for it, then ``then`` (表 2)."""
    return (
        f"{toolkit_logs(namespace)}; wait for the toolkit: {KUBECTL} -n {namespace} rollout status "
        f"ds/{TOOLKIT_DS} --timeout=10m; then {then}"
    )


# --- the smoke image's CUDA --------------------------------------------------------------


def cuda_image(image: str, needed: str | None, max_cuda: str | None, key: str = "smokeImage") -> str:
    """The image needs a newer CUDA than the driver supports (表 2).

    ``needed`` is the CUDA X.Y the image needs (``unsatisfied condition: cuda>=X.Y``, or its
    tag), ``max_cuda`` the newest the host driver supports (the nvidia-smi header, the
    baseline card); either may be unknown (None). Names the newest fitting tag
    (:func:`gpulab.core.cuda.newest_fitting_tag`) when it can, set through config ``key``
    (``smokeImage``, ``computeImage``), then the driver that would run the image
    (:func:`gpulab.core.cuda.min_driver_for`).
    """
    tag = None
    if max_cuda:
        with contextlib.suppress(ValueError):
            tag = cuda.newest_fitting_tag(image, max_cuda)
    if tag:
        fixes = [f"use {tag} ({config_set((key, tag))})"]
    elif max_cuda:
        fixes = [f"use an image built for CUDA <= {max_cuda} (check the baseline card's max CUDA)"]
    else:
        fixes = [
            "use an image whose CUDA X.Y is at most the CUDA Version in the host's nvidia-smi "
            "header (the baseline card's max CUDA)"
        ]
    if needed:
        try:
            fixes.append(f"or upgrade the driver to >= {cuda.min_driver_for(needed)}")
        except (cuda.UnknownCudaVersionError, ValueError):  # newer than the table knows
            fixes.append(f"or upgrade to a driver that supports CUDA {needed}")
    return "; ".join(fixes)
