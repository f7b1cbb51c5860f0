"""MinikubeCluster component: the chapter's single-node GPU cluster.

Two local commands, both scoped to the named profile:

* ``{name}-cluster``: ``variants.minikube.ctl up`` (check, then ``minikube start -p P
  --driver=docker --container-runtime=docker --gpus=all --cpus --memory
  --kubernetes-version``), ``down`` on destroy. A change of cpus, memory, Kubernetes
  version or profile replaces it *delete-first*: the new cluster has the same profile
  name, so create-then-delete would delete the cluster just made.
* ``{name}-device-plugin-addon``: sets minikube's own ``nvidia-device-plugin`` addon
  (which ``--gpus=all`` enables) to match the configured device-plugin owner, so exactly
  one plugin registers ``nvidia.com/gpu``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.cluster import CommandCluster
from components.command import PYTHON, lab_command


@dataclass(frozen=True)
class MinikubeArgs:
    """Inputs: ``profile`` (validated safe name), ``cpus``, ``memory_mib`` (MiB),
    ``kubernetes_version`` (``v1.x.y``), ``addon_device_plugin`` (True when minikube's
    addon owns the device plugin), ``timeout_seconds`` for start."""

    profile: str
    cpus: int
    memory_mib: int
    kubernetes_version: str
    addon_device_plugin: bool
    timeout_seconds: int = 600


class MinikubeCluster(CommandCluster):
    """A minikube profile with GPUs passed through (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``profile`` (str),
    ``addon_state`` (``"enabled"``/``"disabled"``).
    """

    kind = "minikube"

    def __init__(self, name: str, args: MinikubeArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(
            "gpulab:minikube:MinikubeCluster",
            name,
            ctl="variants.minikube.ctl",
            up=[
                "--profile",
                args.profile,
                "--cpus",
                str(args.cpus),
                "--memory-mib",
                str(args.memory_mib),
                "--kubernetes-version",
                args.kubernetes_version,
                "--gpus",
                "all",
            ],
            down=["--profile", args.profile],
            # A new size, version or name rebuilds the profile (same name: delete first).
            triggers=[args.profile, args.cpus, args.memory_mib, args.kubernetes_version],
            timeout=args.timeout_seconds,
            opts=opts,
        )
        state = "enabled" if args.addon_device_plugin else "disabled"
        self.addon = lab_command(
            f"{name}-device-plugin-addon",
            [PYTHON, "-m", "variants.minikube.ctl", "addon", "--profile", args.profile, "--state", state],
            triggers=[self.cluster.id, state],
            timeout=120,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.cluster]),
        )
        self.profile = pulumi.Output.from_input(args.profile)
        self.addon_state = pulumi.Output.from_input(state)
        self.ready = self.addon
        self.finish({"profile": self.profile, "addonState": self.addon_state})
