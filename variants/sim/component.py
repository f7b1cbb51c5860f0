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
from gpulab.config import mig
from gpulab.core import names


@dataclass(frozen=True)
class SimArgs:
    """Inputs: ``name`` (validated safe cluster name), ``gpus`` on the kwok node (0: it
    advertises no ``nvidia.com/gpu``), ``workdir`` (relative to the project directory),
    ``timeout_seconds``; ``replicas`` (time-slicing: the node advertises GPUs x replicas),
    ``mig_devices`` (``(("1g.18gb", 7),)``: the GPUs' MIG devices) under ``mig_strategy``,
    ``capture`` (the nvidia-smi capture served as the smoke Pod's log; None: by ``gpus``),
    ``rename`` (time-slicing's rename: the node advertises ``nvidia.com/gpu.shared``),
    ``smoke_gpus`` (GPUs the smoke Pod is given, listed in its simulated log; None: all),
    ``fleet`` (``simNodes``: ``NAME=GPUS[/ADVERTISED]`` per node, variants.sim.ctl.fleet;
    empty: one node of ``gpus``), ``preinstalled`` (the GPU stack found installed), ``dra``
    (``gpuStack: dra``: no GPU resource; each node's ResourceSlice, variants.sim.ctl.dra)."""

    name: str
    gpus: int
    workdir: str
    timeout_seconds: int = 600
    replicas: int = 1
    mig_devices: tuple[tuple[str, int], ...] = ()
    mig_strategy: str = "none"
    capture: str | None = None
    rename: bool = False
    log_namespace: str = names.WORKLOAD_NAMESPACE
    log_pod: str = names.SMOKE_POD
    smoke_gpus: int | None = None
    fleet: tuple[str, ...] = ()
    preinstalled: bool = False
    dra: bool = False


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
            up=[
                "--gpus",
                str(args.gpus),
                "--log-namespace",
                args.log_namespace,
                "--log-pod",
                args.log_pod,
                *(["--replicas", str(args.replicas)] if args.replicas != 1 else []),
                *(["--mig", mig.format_devices(dict(args.mig_devices))] if args.mig_devices else []),
                *(["--mig-strategy", args.mig_strategy] if args.mig_devices else []),
                *(["--capture", args.capture] if args.capture else []),
                *(["--rename"] if args.rename else []),
                *(["--smoke-gpus", str(args.smoke_gpus)] if args.smoke_gpus is not None else []),
                *(a for spec in args.fleet for a in ("--node-spec", spec)),
                *(["--preinstalled"] if args.preinstalled else []),
                *(["--dra"] if args.dra else []),
            ],
            # Another name, directory or node (GPUs, MIG) is another cluster (same name: delete first).
            triggers=[
                args.name,
                args.workdir,
                args.gpus,
                *(
                    [args.replicas, mig.format_devices(dict(args.mig_devices)), args.mig_strategy]
                    if args.replicas != 1 or args.mig_devices
                    else []
                ),
                *(["rename"] if args.rename else []),
                # Another fleet or a found stack is another cluster (left out when unset, so
                # the triggers of a lab without them stay as they were).
                *([",".join(args.fleet)] if args.fleet else []),
                *(["preinstalled"] if args.preinstalled else []),
                *(["dra"] if args.dra else []),
            ],
            timeout=args.timeout_seconds,
            opts=opts,
        )
        self.node = self.fact("node")
        self.gpus = pulumi.Output.from_input(args.gpus)
        self.simulated = pulumi.Output.from_input(True)
        self.finish({"node": self.node, "gpus": self.gpus, "simulated": self.simulated})
