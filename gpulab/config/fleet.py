"""The config keys of a GPU stack found installed and of its per-node checks (:class:`FleetSettings`,
one field of :class:`gpulab.config.lab.LabConfig`).

``gpuStack: found`` (the ``existing`` and ``sim`` variants): the lab installs no GPU Operator;
it reads what is there and checks every GPU node (gpulab.kube.fleet) from its own namespace
``labNamespace``, ``fleetParallelism`` nodes at a time. The expected GPUs of a node without
GPU Feature Discovery's count label come from ``nodePoolGpus`` for the node's value of
``nodePoolLabel``. ``simNodes`` (sim only) makes the simulated fleet.

Their schema (:data:`SCHEMA`) is part of :data:`gpulab.config.lab.SCHEMA`; Pulumi.yaml
describes each key once, with its bounds. Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema

#: key -> (kind, default) of this module's keys, as Pulumi.yaml declares them
#: (gpulab.config.schema); part of :data:`gpulab.config.lab.SCHEMA`.
SCHEMA: Final[dict[str, tuple[str, object]]] = schema.section(
    "gpuStack", "labNamespace", "fleetParallelism", "nodePoolLabel", "nodePoolGpus", "simNodes"
)
#: ``gpuStack`` values: the lab installs the GPU Operator, installs NVIDIA's device plugin chart
#: alone (gpulab.config.device_plugin), installs NVIDIA's DRA driver (gpulab.config.dra: GPUs
#: through ResourceClaims), or finds the GPU stack installed.
GPU_STACKS: Final = ("install", "device-plugin", "dra", "found")
#: Bounds, (lowest, highest) inclusive (gpulab.config.lab.BOUNDS takes them in).
BOUNDS: Final[dict[str, tuple[int, int]]] = {
    "fleetParallelism": (1, 64),  # nodes checked at once: each holds a few API watches
}
#: Most GPUs a pool's node may be said to have, and most pools.
MAX_POOL_GPUS: Final = 64
MAX_POOLS: Final = 64
_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: A label key: an optional DNS-subdomain prefix and a name (Kubernetes' qualified name).
_LABEL_KEY: Final = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE: Final = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class FleetSettings:
    """A found GPU stack and its per-node checks.

    Attributes:
        found: ``gpuStack: found``: no Helm release; the gate reads what is there.
        device_plugin: ``gpuStack: device-plugin``: the lab installs NVIDIA's device plugin chart
            (gpulab.config.device_plugin), then gates every GPU node as ``found`` does.
        namespace: ``labNamespace``: the only namespace the lab writes to.
        parallelism: ``fleetParallelism``: nodes whose Pods run at once.
        pool_label: ``nodePoolLabel``: the node label naming a node's pool ("" none).
        pool_gpus: ``nodePoolGpus`` as ``(("pool-a", 8),)``: GPUs per node of each pool.
        sim_nodes: ``simNodes`` split: ``("gpu-a=8", "gpu-c=8/7")`` (checked by the sim variant).
    """

    found: bool = False
    namespace: str = "gpu-lab"
    device_plugin: bool = False
    parallelism: int = 4
    pool_label: str = ""
    pool_gpus: tuple[tuple[str, int], ...] = ()
    sim_nodes: tuple[str, ...] = ()
    #: ``gpuStack: dra``: NVIDIA's DRA driver (gpulab.config.dra); GPUs through ResourceClaims.
    dra: bool = False

    @property
    def per_node(self) -> bool:
        """The gate is the per-node fleet check (gpulab.kube.fleet): ``found`` or ``device-plugin``."""
        return self.found or self.device_plugin

    @property
    def stack(self) -> str:
        """The ``gpuStack`` value these settings came from."""
        if self.dra:
            return "dra"
        return "found" if self.found else "device-plugin" if self.device_plugin else "install"

    def pool_args(self) -> list[str]:
        """The fleet check's pool arguments (``--pool-label``, one ``--pool-gpus`` each)."""
        if not self.pool_label:
            return []
        return [
            "--pool-label",
            self.pool_label,
            *(a for p, n in self.pool_gpus for a in ("--pool-gpus", f"{p}={n}")),
        ]


def parse(get: Callable[[str], object], problems: list[str], ns: str = "gpu-lab") -> FleetSettings:
    """The :class:`FleetSettings` from the parsed values (``get(key)``: the value or its
    default); one line per bad key is appended to ``problems``.

    Problems: an unknown ``gpuStack``; ``labNamespace`` not a DNS label (or one of Kubernetes'
    own: ``kube-system``, ``kube-public``, ``kube-node-lease``); ``fleetParallelism`` < 1;
    ``nodePoolLabel`` not a label key; ``nodePoolGpus`` not ``POOL=GPUS,...`` (GPUS 1..64, at
    most 64 pools, each named once) or set without ``nodePoolLabel``.
    """
    stack = str(get("gpuStack"))
    if stack not in GPU_STACKS:
        problems.append(f"{ns}:gpuStack={stack!r} is unknown; allowed: {', '.join(GPU_STACKS)}")
    namespace = str(get("labNamespace"))
    if not _DNS_LABEL.match(namespace) or namespace.startswith("kube-"):
        problems.append(
            f"{ns}:labNamespace={namespace!r} must be a DNS label (lowercase letters, digits, '-', "
            "at most 63) and not one of Kubernetes' own kube-* namespaces"
        )
    parallelism = int(str(get("fleetParallelism")))
    if parallelism < 1:
        problems.append(f"{ns}:fleetParallelism={parallelism} must be >= 1")
    label = str(get("nodePoolLabel"))
    if label and not _LABEL_KEY.match(label):
        problems.append(
            f"{ns}:nodePoolLabel={label!r} is not a label key (e.g. cloud.google.com/gke-nodepool)"
        )
    pools: list[tuple[str, int]] = []
    raw = str(get("nodePoolGpus")).strip()
    for item in filter(None, (i.strip() for i in raw.split(","))):
        pool, _, count = item.partition("=")
        if not _LABEL_VALUE.match(pool) or not count.isdigit() or not 1 <= int(count) <= MAX_POOL_GPUS:
            problems.append(
                f"{ns}:nodePoolGpus item {item!r} is not POOL=GPUS (a label value, GPUS 1..{MAX_POOL_GPUS}); "
                "e.g. a100-pool=8,l4-pool=1"
            )
            continue
        if any(p == pool for p, _ in pools):
            problems.append(f"{ns}:nodePoolGpus names pool {pool!r} twice")
        pools.append((pool, int(count)))
    if len(pools) > MAX_POOLS:
        problems.append(f"{ns}:nodePoolGpus has {len(pools)} pools; at most {MAX_POOLS}")
    if pools and not label:
        problems.append(
            f"{ns}:nodePoolGpus is set without {ns}:nodePoolLabel (the label naming a node's pool)"
        )
    sim_nodes = tuple(filter(None, (i.strip() for i in str(get("simNodes")).split(","))))
    return FleetSettings(
        stack == "found",
        namespace,
        stack == "device-plugin",
        parallelism,
        label,
        tuple(pools),
        sim_nodes,
        dra=stack == "dra",
    )
