"""The k3s variant: k3s installed on this host by the lab, uninstalled on destroy.

Folder: ``settings.py`` (its own config key, ``k3sVersion``: K3sSettings), ``component.py``
(K3sCluster), ``ctl.py`` (the helper: the official installer with a pinned version,
check-then-act, root and init-system checks).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core.names import DEVICE_LIST_ENVVAR
from variants.base import Getter, Runner, Status, Variant, VariantSpec, run_quietly
from variants.k3s import node
from variants.k3s.settings import NO_CDI, K3sSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.core.findings import Finding


class K3s(Variant):
    """k3s on this host; its root steps run through ``sudo -n`` (variants/k3s/ctl.py). The
    installer brings every tool."""

    spec = VariantSpec(
        name="k3s",
        dra_note=(
            "on this variant NVIDIA's runtime and toolkit come from the GPU Operator, which gpuStack dra "
            "does not install, and NVIDIA's DRA driver needs the driver and CDI on the node before it "
            "starts; with the toolkit on the host, use cluster=existing on k3s's kubeconfig"
        ),
        gpu_stack_note=(
            "k3s ships the nvidia RuntimeClass and adds the nvidia handler only where NVIDIA's runtime is "
            "on the host, which on this variant the GPU Operator's toolkit installs; with the toolkit "
            "installed on the host, use cluster=existing on k3s's kubeconfig with runtimeClass=nvidia"
        ),
        settings=K3sSettings,
        exclusive_settings=(("k3sNriPlugin", True),),
        node_runtime="k3s",
        # Without the NRI plugin CDI stays off (true is refused); the NRI plugin needs it.
        cdi=False,
        # With k3sNriPlugin the operator's NRI plugin injects the CDI devices, into any runtime
        # class, and the chart's choice stands (VariantSpec.device_list_strategy).
        device_list=DEVICE_LIST_ENVVAR,
        device_list_reason=(
            NO_CDI + "; with cdi off the toolkit leaves the runtime in its default mode, and the envvar "
            "strategy's per-container NVIDIA_VISIBLE_DEVICES (the allocated UUIDs, over the image's all) is "
            "what it injects. With k3sNriPlugin the operator's NRI plugin injects the CDI devices and the "
            "chart's choice stands"
        ),
        # k3s's containerd adds the nvidia handler and keeps runc the default.
        runtime_class=node.RUNTIME_CLASS,
        containerd=(node.CONTAINERD_DIR, node.CONTAINERD_SOCKET),
        # k3s runs its own containerd: the chart's defaults (/etc/containerd/config.toml,
        # /run/containerd/containerd.sock) name a containerd that is not k3s's. config.toml, not
        # the .tmpl: k3s re-renders config.toml on start and re-adds the nvidia handler itself
        # once it finds the runtime the toolkit installs under /usr/local/nvidia/toolkit.
        toolkit_env=(
            ("CONTAINERD_CONFIG", node.CONTAINERD_CONFIG),
            ("CONTAINERD_SOCKET", node.CONTAINERD_SOCKET),
            ("CONTAINERD_RUNTIME_CLASS", node.RUNTIME_CLASS),
        ),
        bundle_tools={"k3s": ("k3s", "--version")},
        endpoint_fix=(
            "k3s now writes {live} into /etc/rancher/k3s/k3s.yaml, not {recorded} where the stack read "
            "it at create (its --https-listen-port or --bind-address changed): put the recorded address "
            "back in k3s's configuration and restart it (`sudo systemctl restart k3s`), or make the lab "
            "anew with `GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab` (Pulumi "
            "would replace every object of the lab to use the new address)"
        ),
        start_or_delete_hint=(
            "start it (`sudo systemctl start k3s`) or uninstall it (`sudo k3s-uninstall.sh`)"
        ),
        node_command="{cmd}",  # k3s runs on this host: it is the GPU node
        steps={"up": "k3s-install"},
    )

    def preflight(self, cfg: LabConfig) -> Sequence[Finding]:
        """Root, an init system, and no foreign k3s of another version (the installer would change
        it); the kubeconfig /etc/rancher/k3s/k3s.yaml is root-only."""
        from variants.k3s import ctl

        return ctl.host_findings(cfg.settings(K3sSettings).version)

    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.k3s.component import K3sArgs, K3sCluster

        return K3sCluster(
            "k3s",
            K3sArgs(version=cfg.settings(K3sSettings).version, timeout_seconds=cfg.cluster_timeout_seconds),
            opts,
        )

    def status(self, profile: str, root: Path, run: Runner = run_quietly) -> Status:
        """k3s on this host: gone when its uninstall script is."""
        from variants.k3s import ctl

        present = ctl.UNINSTALL_SCRIPT.exists()
        return Status(not present, f"{ctl.UNINSTALL_SCRIPT} {'exists' if present else 'is gone'}")

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create: /etc/rancher/k3s/k3s.yaml, root's; through
        # `sudo -n`, which fails instead of asking (None then: this machine cannot tell).
        from variants.k3s import ctl

        p = run(ctl.as_root(["cat", str(ctl.KUBECONFIG)]))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


VARIANT = K3s()
