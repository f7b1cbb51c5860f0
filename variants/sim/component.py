"""SimCluster component: a real control plane with a kwok node that advertises GPUs.

For machines without a GPU (CI, laptops). ``python3 -m variants.sim.ctl up`` starts
etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on loopback
(kwokctl, binary runtime, binaries built by ``make toolchain``) and creates one kwok node
whose capacity and allocatable include ``nvidia.com/gpu: gpus``; ``down`` stops every
process and removes the cluster's directory. What is simulated, and what is real, is
listed in README.md ("The simulated lab").
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.cluster import CommandCluster
from gpulab import names


@dataclass(frozen=True)
class SimArgs:
    """Inputs: ``name`` (validated safe cluster name), ``gpus`` on the kwok node,
    ``workdir`` (relative to the project directory), ``timeout_seconds``."""

    name: str
    gpus: int
    workdir: str
    timeout_seconds: int = 600
    log_namespace: str = names.WORKLOAD_NAMESPACE
    log_pod: str = names.SMOKE_POD


class SimCluster(CommandCluster):
    """The simulated cluster (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``node`` (str),
    ``gpus`` (int, simulated), ``simulated`` (always True).
    """

    kind = "sim"

    def __init__(self, name: str, args: SimArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(
            "gpulab:sim:SimCluster",
            name,
            ctl="variants.sim.ctl",
            where=["--name", args.name, "--workdir", args.workdir],
            up=["--gpus", str(args.gpus), "--log-namespace", args.log_namespace, "--log-pod", args.log_pod],
            # Another name, directory or GPU count is another cluster (same name: delete first).
            triggers=[args.name, args.workdir, args.gpus],
            timeout=args.timeout_seconds,
            opts=opts,
        )
        self.node = self.fact("node")
        self.gpus = pulumi.Output.from_input(args.gpus)
        self.simulated = pulumi.Output.from_input(True)
        self.finish({"node": self.node, "gpus": self.gpus, "simulated": self.simulated})
