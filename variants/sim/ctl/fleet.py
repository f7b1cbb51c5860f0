"""The simulated fleet: several kwok GPU nodes of different sizes, and the GPU stack found installed.

``--node-spec NAME=GPUS[/ADVERTISED]`` (repeatable) makes one node per spec: GPU Feature
Discovery's labels say ``GPUS`` (``nvidia.com/gpu.count``), and the node advertises
``ADVERTISED`` (default ``GPUS``) ``nvidia.com/gpu``: a node that advertises fewer than its
labels say is the device plugin having marked GPUs unhealthy, the fault the fleet check must
name. Each node's smoke and compute Pods (:func:`gpulab.kube.fleet.pod_name`) get logs of their
own listing that node's GPUs, whose UUIDs are made up here (:func:`gpu_uuids`: deterministic,
distinct per cluster, node and index); every log starts with the simulated banner, and the
nodes carry the simulated annotation, so nothing reads them as measured.

``--preinstalled`` plays "somebody else installed the GPU stack": namespace ``gpu-operator``
and the device-plugin DaemonSet under the GPU Operator's name and labels
(``app: nvidia-device-plugin-daemonset``, nodeSelector ``nvidia.com/gpu.deploy.device-plugin:
"true"``), annotated simulated; the cluster's DaemonSet controller schedules its Pods on the
GPU nodes and kwok reports them Ready. No operator, no ClusterPolicy, no Helm release.

Pure: no I/O.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gpulab.core import names
from gpulab.kube.fleet import COMPUTE_PREFIX, SMOKE_PREFIX, pod_name

#: Most nodes of a simulated fleet (the bench's largest fleet is 100).
MAX_FLEET_NODES: Final = 128
#: Most GPUs of one simulated node (an 8-GPU server).
MAX_NODE_GPUS: Final = 8
_SPEC: Final = re.compile(r"^(?P<name>[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)=(?P<gpus>\d+)(/(?P<adv>\d+))?$")
#: The product of every simulated GPU (the captures' H200), as GFD writes it.
PRODUCT_NAME: Final = "NVIDIA H200"


@dataclass(frozen=True)
class FleetNode:
    """One simulated node: ``name``, ``gpus`` (what GFD's labels say), ``advertised``
    (allocatable ``nvidia.com/gpu``)."""

    name: str
    gpus: int
    advertised: int


def parse_node_spec(text: str) -> FleetNode:
    """``NAME=GPUS[/ADVERTISED]`` -> :class:`FleetNode`.

    Raises:
        ValueError: not that form, a name that is not a DNS label, GPUS outside
            1..:data:`MAX_NODE_GPUS`, or ADVERTISED above GPUS.
    """
    m = _SPEC.match(text.strip())
    if not m:
        raise ValueError(f"node spec {text!r} is not NAME=GPUS[/ADVERTISED] (e.g. gpu-a=8 or gpu-c=8/7)")
    gpus = int(m.group("gpus"))
    adv = int(m.group("adv")) if m.group("adv") is not None else gpus
    if not 1 <= gpus <= MAX_NODE_GPUS:
        raise ValueError(f"node spec {text!r}: GPUS must be 1..{MAX_NODE_GPUS}")
    if adv > gpus:
        raise ValueError(
            f"node spec {text!r}: a node cannot advertise more GPUs ({adv}) than it has ({gpus})"
        )
    return FleetNode(m.group("name"), gpus, adv)


def parse_node_specs(items: Sequence[str]) -> tuple[FleetNode, ...]:
    """Every spec (:func:`parse_node_spec`), in order.

    Raises:
        ValueError: a bad spec, a name given twice, or more than :data:`MAX_FLEET_NODES`.
    """
    nodes = tuple(parse_node_spec(i) for i in items)
    seen = [n.name for n in nodes]
    dup = sorted({n for n in seen if seen.count(n) > 1})
    if dup:
        raise ValueError(f"node spec names given twice: {', '.join(dup)}")
    if len(nodes) > MAX_FLEET_NODES:
        raise ValueError(f"at most {MAX_FLEET_NODES} simulated nodes, got {len(nodes)}")
    return nodes


def gpu_uuids(cluster: str, node: str, count: int) -> list[str]:
    """Made-up GPU UUIDs of a simulated node, ``GPU-<uuid5>``: the same on every ``up``, never
    the same on two nodes (they are simulated: the logs that list them say so)."""
    return [
        f"GPU-{uuid.uuid5(uuid.NAMESPACE_URL, f'https://gpu-lab.invalid/sim/{cluster}/{node}/{i}')}"
        for i in range(count)
    ]


def listing(uuids: Sequence[str]) -> str:
    """``nvidia-smi -L`` lines for ``uuids``: ``GPU 0: NVIDIA H200 (UUID: GPU-...)``."""
    return "".join(f"GPU {i}: {PRODUCT_NAME} (UUID: {u})\n" for i, u in enumerate(uuids))


def smoke_log(capture: str, uuids: Sequence[str]) -> str:
    """A node's smoke Pod log: the capture's table (its header: driver, CUDA), then the
    listing of the GPUs the Pod holds (every one the node advertises)."""
    return capture.rstrip("\n") + "\n" + listing(uuids)


def compute_log(uuid_: str, vectoradd: str) -> str:
    """Container ``vectoradd-<i>``'s log: the one GPU it was given, then vectorAdd's output."""
    return listing([uuid_]) + vectoradd


def log_dir(workdir: Path) -> Path:
    """Where the fleet's per-node logs live, inside the cluster's work dir."""
    return workdir / "logs" / "fleet"


def smoke_log_file(workdir: Path, node: str) -> Path:
    """The node's smoke log file."""
    return log_dir(workdir) / f"{node}-smoke.log"


def compute_log_file(workdir: Path, node: str, index: int) -> Path:
    """The log file of container ``vectoradd-<index>`` of the node's compute Pod."""
    return log_dir(workdir) / f"{node}-compute-{index}.log"


def cluster_logs(
    workdir: Path, nodes: Sequence[FleetNode], namespaces: Sequence[str]
) -> list[dict[str, Any]]:
    """kwok ``ClusterLogs``, two per node: its smoke Pod's log, and its compute Pod's, one
    file per container (kwok picks the entry naming the container: sigs.k8s.io/kwok
    pkg/kwok/server/debugging_logs.go findLogInLogs)."""
    docs: list[dict[str, Any]] = []
    for n in nodes:
        smoke = str(smoke_log_file(workdir, n.name))
        docs.append(
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "ClusterLogs",
                "metadata": {"name": f"fleet-smoke-{n.name}"[:63].rstrip("-")},
                "spec": {
                    "selector": {
                        "matchNamespaces": list(namespaces),
                        "matchNames": [pod_name(SMOKE_PREFIX, n.name)],
                    },
                    "logs": [{"logsFile": smoke, "previousLogsFile": smoke, "follow": False}],
                },
            }
        )
        docs.append(
            {
                "apiVersion": "kwok.x-k8s.io/v1alpha1",
                "kind": "ClusterLogs",
                "metadata": {"name": f"fleet-compute-{n.name}"[:63].rstrip("-")},
                "spec": {
                    "selector": {
                        "matchNamespaces": list(namespaces),
                        "matchNames": [pod_name(COMPUTE_PREFIX, n.name)],
                    },
                    "logs": [
                        {
                            "containers": [f"{names.COMPUTE_CONTAINER_PREFIX}{i}"],
                            "logsFile": str(compute_log_file(workdir, n.name, i)),
                            "previousLogsFile": str(compute_log_file(workdir, n.name, i)),
                            "follow": False,
                        }
                        for i in range(n.gpus)
                    ],
                },
            }
        )
    return docs


#: The device plugin image the found stack's DaemonSet names (never pulled: kwok runs no
#: container): the one GPU Operator chart v26.7.0 deploys (devicePlugin.version).
PLUGIN_IMAGE: Final = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def preinstalled_manifests(image: str = PLUGIN_IMAGE) -> list[dict[str, Any]]:
    """The GPU stack "somebody else installed" (module docstring): its namespace and the
    device-plugin DaemonSet, under the GPU Operator's names, annotated simulated."""
    labels = {"app": names.DEVICE_PLUGIN_DS}
    note = {names.SIMULATED_ANNOTATION: "true", "gpulab.dev/simulates": "a GPU stack installed by others"}
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": names.OPERATOR_NAMESPACE, "annotations": note},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {
                "name": names.DEVICE_PLUGIN_DS,
                "namespace": names.OPERATOR_NAMESPACE,
                "labels": labels,
                "annotations": note,
            },
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels, "annotations": note},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"},
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [{"name": "nvidia-device-plugin", "image": image}],
                    },
                },
            },
        },
    ]
