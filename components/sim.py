"""SimCluster component: a real control plane with a kwok node that advertises GPUs.

For machines without a GPU (CI, laptops). ``python3 -m gpulab.simcluster up`` starts
etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback
(kwokctl, binary runtime, binaries built by ``make toolchain``) and creates one kwok node
whose capacity and allocatable include ``nvidia.com/gpu: gpus``; ``down`` stops every
process and removes the cluster's directory. What is simulated, and what is real, is
listed in README.md ("The simulated lab").
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.cluster import ClusterOutputs
from components.command import PYTHON, lab_command, parse_json_stdout


@dataclass(frozen=True)
class SimArgs:
    """Inputs: ``name`` (validated safe cluster name), ``gpus`` on the kwok node,
    ``workdir`` (relative to the project directory), ``timeout_seconds``."""

    name: str
    gpus: int
    workdir: str
    timeout_seconds: int = 600
    log_namespace: str = "default"
    log_pod: str = "gpu-smoke"


class SimCluster(pulumi.ComponentResource, ClusterOutputs):
    """The simulated cluster (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``node`` (str),
    ``gpus`` (int, simulated), ``simulated`` (always True).
    """

    kind = "sim"

    def __init__(self, name: str, args: SimArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpulab:sim:SimCluster", name, None, opts)
        ctl = [PYTHON, "-m", "gpulab.simcluster"]
        where = ["--name", args.name, "--workdir", args.workdir]
        self.cluster = lab_command(
            f"{name}-cluster",
            [
                *ctl,
                "up",
                *where,
                "--gpus",
                str(args.gpus),
                "--log-namespace",
                args.log_namespace,
                "--log-pod",
                args.log_pod,
            ],
            delete=[*ctl, "down", *where],
            # Another name, directory or GPU count is another cluster (same name: delete first).
            triggers=[args.name, args.workdir, args.gpus],
            timeout=args.timeout_seconds,
            delete_before_replace=True,
            secret_stdout=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        info = parse_json_stdout(self.cluster.stdout, "simcluster up")
        self.kubeconfig = pulumi.Output.secret(info.apply(lambda i: i["kubeconfig"]))
        self.kubernetes_version = pulumi.Output.unsecret(info.apply(lambda i: i["kubernetesVersion"]))
        self.node = pulumi.Output.unsecret(info.apply(lambda i: i["node"]))
        self.gpus = pulumi.Output.from_input(args.gpus)
        self.simulated = pulumi.Output.from_input(True)
        self.ready = self.cluster
        self.register_outputs(
            {
                "kubeconfig": self.kubeconfig,
                "kubernetesVersion": self.kubernetes_version,
                "node": self.node,
                "gpus": self.gpus,
                "simulated": self.simulated,
            }
        )
