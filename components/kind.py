"""KindCluster component: a kind cluster whose GPU worker gets the host's GPUs (nvkind's way).

One local command, ``{name}-cluster``: ``gpulab.kind_ctl up`` (check the host's NVIDIA
runtime settings, then ``kind create cluster --name P --config F --image I`` unless the
cluster exists, then the in-node toolkit on the GPU worker; see gpulab/kind_ctl.py), and
``down`` (``kind delete cluster --name P``, success when gone) on destroy. A new node
image or name replaces it *delete-first*: the new cluster has the same name.

The GPU Operator goes in with ``toolkit.enabled=false`` (the host's toolkit injects the
GPUs into the node; components/gpu_operator.py) and the smoke Pod asks for
``runtimeClassName: nvidia``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.cluster import ClusterOutputs
from components.command import PYTHON, lab_command, parse_json_stdout


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


class KindCluster(pulumi.ComponentResource, ClusterOutputs):
    """A kind cluster with GPUs (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``name`` (str),
    ``gpu_nodes`` (list[str], the workers holding the GPUs).
    """

    kind = "kind"

    def __init__(self, name: str, args: KindArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpulab:kind:KindCluster", name, None, opts)
        ctl = [PYTHON, "-m", "gpulab.kind_ctl"]
        where = ["--name", args.name, "--workdir", args.workdir]
        self.cluster = lab_command(
            f"{name}-cluster",
            [
                *ctl,
                "up",
                *where,
                "--image",
                args.node_image,
                "--workers",
                str(args.workers),
                "--timeout",
                str(args.timeout_seconds),
            ],
            delete=[*ctl, "down", *where],
            # A new node image, name or worker count rebuilds the cluster (same name: delete first).
            triggers=[args.name, args.node_image, args.workers, args.workdir],
            timeout=args.timeout_seconds + 900,  # kind's wait, then the in-node apt install
            delete_before_replace=True,
            secret_stdout=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        info = parse_json_stdout(self.cluster.stdout, "kind_ctl up")
        self.kubeconfig = pulumi.Output.secret(info.apply(lambda i: i["kubeconfig"]))
        self.kubernetes_version = pulumi.Output.unsecret(info.apply(lambda i: i["kubernetesVersion"]))
        self.name = pulumi.Output.from_input(args.name)
        self.gpu_nodes = pulumi.Output.unsecret(info.apply(lambda i: i["nodes"]))
        self.ready = self.cluster
        self.register_outputs(
            {
                "kubeconfig": self.kubeconfig,
                "kubernetesVersion": self.kubernetes_version,
                "name": self.name,
                "gpuNodes": self.gpu_nodes,
            }
        )
