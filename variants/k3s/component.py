"""K3sCluster component: k3s installed on this host, uninstalled on destroy.

One local command, ``{name}-cluster``: ``variants.k3s.ctl up --version V`` (as the user;
its root steps through ``sudo -n``: check, then the official installer with
``INSTALL_K3S_VERSION=V`` unless that version is installed; wait for the node) and ``down``
(``k3s-uninstall.sh``, only for a k3s the lab installed; success when gone). A new version
replaces it delete-first: uninstall, then install (k3s holds one installation per host). The
kubeconfig is ``/etc/rancher/k3s/k3s.yaml``, read as root into memory.

k3s adds an ``nvidia`` containerd handler when it finds the NVIDIA runtime and ships a
``nvidia`` RuntimeClass; the operator's toolkit is pointed at k3s's containerd config and
socket, and the smoke Pod asks for ``runtimeClassName: nvidia`` (variants/k3s/ctl.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.cluster import CommandCluster


@dataclass(frozen=True)
class K3sArgs:
    """Inputs: ``version`` (validated ``v1.x.y+k3sN``), ``timeout_seconds`` for install and
    readiness."""

    version: str
    timeout_seconds: int = 600


class K3sCluster(CommandCluster):
    """k3s on this host (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``version`` (the k3s
    release), ``installed`` (bool: this stack installed it, so destroy uninstalls it).
    """

    kind = "k3s"

    def __init__(self, name: str, args: K3sArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(
            "gpulab:k3s:K3sCluster",
            name,
            ctl="variants.k3s.ctl",
            up=["--version", args.version, "--timeout", str(args.timeout_seconds)],
            # k3s holds one installation per host: a new version uninstalls first.
            triggers=[args.version],
            timeout=args.timeout_seconds * 2 + 60,  # the install, then the wait for the node
            opts=opts,
        )
        self.version = pulumi.Output.from_input(args.version)
        self.installed = self.fact("installed")
        self.finish({"version": self.version, "installed": self.installed})
