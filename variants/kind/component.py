"""KindCluster component: a kind cluster whose GPU worker gets the host's GPUs (nvkind's way).

One local command, ``{name}-cluster``: ``variants.kind.ctl up`` (check the host's NVIDIA
runtime settings, then ``kind create cluster --name P --config F --image I`` unless the
cluster exists, then the in-node toolkit on the GPU worker; see variants/kind/ctl.py), and
``down`` (``kind delete cluster --name P``, success when gone) on destroy. A new node
image or name replaces it *delete-first*: the new cluster has the same name.

The GPU Operator goes in with ``toolkit.enabled=false`` (the host's toolkit injects the
GPUs into the node; components/gpu_operator.py) and the smoke Pod asks for
``runtimeClassName: nvidia``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.cluster import CommandCluster


@dataclass(frozen=True)
class KindArgs:
    """Inputs: ``name`` (validated safe cluster name), ``node_image`` (pinned by digest),
    ``workdir`` for the kind config and kind's own kubeconfig (relative to the project
    directory), ``workers`` with GPUs (each gets every GPU), ``timeout_seconds``."""

    name: str
    node_image: str
    workdir: str
    workers: int = 1
    timeout_seconds: int = 600


class KindCluster(CommandCluster):
    """A kind cluster with GPUs (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``name`` (str),
    ``gpu_nodes`` (list[str], the workers holding the GPUs).
    """

    kind = "kind"

    def __init__(self, name: str, args: KindArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(
            "gpulab:kind:KindCluster",
            name,
            ctl="variants.kind.ctl",
            where=["--name", args.name, "--workdir", args.workdir],
            up=[
                "--image",
                args.node_image,
                "--workers",
                str(args.workers),
                "--timeout",
                str(args.timeout_seconds),
            ],
            # A new node image, name or worker count rebuilds the cluster (same name: delete first).
            triggers=[args.name, args.node_image, args.workers, args.workdir],
            timeout=args.timeout_seconds + 900,  # kind's wait, then the in-node apt install
            opts=opts,
        )
        self.name = pulumi.Output.from_input(args.name)
        self.gpu_nodes = self.fact("nodes")
        self.finish({"name": self.name, "gpuNodes": self.gpu_nodes})
