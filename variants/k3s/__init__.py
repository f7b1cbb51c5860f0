"""The k3s variant: k3s installed on this host by the lab, uninstalled on destroy.

Folder: ``settings.py`` (its own config key, ``k3sVersion``: K3sSettings), ``component.py``
(K3sCluster), ``ctl.py`` (the helper: the official installer with a pinned version,
check-then-act, root and init-system checks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.config.lab import CHART_VERSION, NAMESPACE
from gpulab.core.names import DEVICE_LIST_ENVVAR
from variants.base import (
    Capabilities,
    ConfigRules,
    Getter,
    HostNeeds,
    Lifecycle,
    OperatorNeeds,
    Runner,
    Variant,
    refuse_cdi,
    run_quietly,
)
from variants.k3s import settings
from variants.k3s.settings import K3sSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig, OperatorConfig
    from gpulab.core.findings import Finding

#: Oldest chart whose ClusterPolicy takes ``cdi.nriPluginEnabled`` as the way to inject GPUs
#: (RKE2's GPU Operator docs recommend it from v26.3.x; it needs containerd >= 2.1).
MIN_NRI_CHART = (26, 3, 0)
#: Why k3s's nvidia runtime handler takes no CDI annotation (without the NRI plugin).
_NO_CDI = (
    "k3s renders its containerd config from its own template on every start (docs.k3s.io, "
    "'Configuring containerd'), and the nvidia runtime handler it renders has only runtime_type and "
    "BinaryName, no container_annotations (k3s-io/k3s pkg/agent/templates, ExtraRuntimes), so the "
    "chart's cdi-annotations never reach that runtime; with cdi.enabled the operator's toolkit puts it "
    "in cdi mode (NVIDIA/gpu-operator v26.7.0 transformToolkitCtrForCDI: NVIDIA_CONTAINER_RUNTIME_MODE=cdi), "
    "where the image's NVIDIA_VISIBLE_DEVICES=all asks for every GPU"
)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.lstrip("v").split("."))


class _Config(ConfigRules):
    """k3s's config: its own key, the CDI its nvidia handler refuses, the NRI plugin's needs."""

    def check_keys(self, get: Getter, problems: list[str]) -> None:
        settings.check(get, problems)

    def resolve(
        self, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> K3sSettings:
        if not get("k3sNriPlugin"):
            refuse_cdi(
                self.name,
                values,
                problems,
                _NO_CDI + " (set k3sNriPlugin=true to inject GPUs by CDI through NRI)",
            )
            return settings.parse(get)
        chart_version = str(get("chartVersion"))
        if CHART_VERSION.match(chart_version) and _version_tuple(chart_version) < MIN_NRI_CHART:
            problems.append(
                f"{NAMESPACE}:k3sNriPlugin=true needs chartVersion >= v{'.'.join(map(str, MIN_NRI_CHART))} "
                f"(got {chart_version!r})"
            )
        for key in ("cdi", "toolkit"):
            if not bool(get(key)):
                problems.append(
                    f"{NAMESPACE}:k3sNriPlugin=true needs {key}=true "
                    "(the chart refuses the NRI plugin without it)"
                )
        return settings.parse(get)


class _Operator(OperatorNeeds):
    """k3s's own containerd, with the nvidia handler k3s renders (or the operator's NRI plugin)."""

    def containerd_paths(self) -> tuple[str, str] | None:
        """k3s's own containerd (variants/k3s/ctl.py), where :meth:`helm_values` points the toolkit."""
        from variants.k3s import ctl

        return ctl.CONTAINERD_DIR, ctl.CONTAINERD_SOCKET

    def operator_cdi(self, requested: bool | None, get: Getter) -> bool:
        # The NRI plugin needs CDI (the chart refuses it otherwise); without it, CDI stays off.
        nri = bool(get("k3sNriPlugin"))
        return nri if requested is None else requested

    def device_list_strategy(self, op: OperatorConfig) -> str | None:
        return None if op.nri_plugin else DEVICE_LIST_ENVVAR

    def runtime_class(self, cfg: LabConfig) -> str | None:
        # k3s's containerd adds the nvidia handler and keeps runc the default; the NRI plugin
        # injects into any runtime class.
        from variants.k3s import ctl

        return None if cfg.operator.nri_plugin else ctl.RUNTIME_CLASS

    def helm_values(self, values: dict[str, Any], op: OperatorConfig) -> None:
        from variants.k3s import ctl

        if op.toolkit:
            # k3s runs its own containerd: the chart's defaults (/etc/containerd/config.toml,
            # /run/containerd/containerd.sock) name a containerd that is not k3s's. config.toml,
            # not the .tmpl: k3s re-renders config.toml on start and re-adds the nvidia handler
            # itself once it finds the runtime the toolkit installs under /usr/local/nvidia/toolkit.
            values["toolkit"]["env"] = [
                {"name": "CONTAINERD_CONFIG", "value": ctl.CONTAINERD_CONFIG},
                {"name": "CONTAINERD_SOCKET", "value": ctl.CONTAINERD_SOCKET},
                {"name": "CONTAINERD_RUNTIME_CLASS", "value": ctl.RUNTIME_CLASS},
            ]
        if op.nri_plugin:
            # GPUs injected by the operator's NRI plugin (containerd >= 2.1), no runtime class.
            values["cdi"]["nriPluginEnabled"] = True


class _Host(HostNeeds):
    """No tool of its own (the installer brings every one); root, an init system, no foreign k3s."""

    def host_findings(self, cfg: LabConfig) -> Sequence[Finding]:
        from variants.k3s import ctl

        # Root, an init system, and no foreign k3s of another version (the installer
        # would change it); the kubeconfig /etc/rancher/k3s/k3s.yaml is root-only.
        return ctl.host_findings(cfg.settings(K3sSettings).version)


class _Lifecycle(Lifecycle):
    """k3s on this host: gone when its uninstall script is."""

    def gone(self, profile: str, root: Path, run: Runner = run_quietly) -> tuple[bool | None, str]:
        from variants.k3s import ctl

        present = ctl.UNINSTALL_SCRIPT.exists()
        return not present, f"{ctl.UNINSTALL_SCRIPT} {'exists' if present else 'is gone'}"

    def start_or_delete_hint(self, profile: str) -> str:
        return "start it (`sudo systemctl start k3s`) or uninstall it (`sudo k3s-uninstall.sh`)"

    def live_kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create: /etc/rancher/k3s/k3s.yaml, root's; through
        # `sudo -n`, which fails instead of asking (None then: this machine cannot tell).
        from variants.k3s import ctl

        p = run(ctl.as_root(["cat", str(ctl.KUBECONFIG)]))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


class K3s(Variant):
    """k3s on this host; its root steps run through ``sudo -n`` (variants/k3s/ctl.py). The
    installer brings every tool."""

    name = "k3s"
    capabilities = Capabilities(
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
    )
    config = _Config(name, exclusive_settings=(("k3sNriPlugin", True),))
    operator = _Operator(
        node_runtime="k3s",
        device_list_reason=(
            _NO_CDI + "; with cdi off the toolkit leaves the runtime in its default mode, and the envvar "
            "strategy's per-container NVIDIA_VISIBLE_DEVICES (the allocated UUIDs, over the image's all) is "
            "what it injects. With k3sNriPlugin the operator's NRI plugin injects the CDI devices and the "
            "chart's choice stands"
        ),
    )
    host = _Host(name, bundle_tools={"k3s": ("k3s", "--version")})
    local = _Lifecycle(
        name,
        endpoint_fix=(
            "k3s now writes {live} into /etc/rancher/k3s/k3s.yaml, not {recorded} where the stack read "
            "it at create (its --https-listen-port or --bind-address changed): put the recorded address "
            "back in k3s's configuration and restart it (`sudo systemctl restart k3s`), or make the lab "
            "anew with `GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab` (Pulumi "
            "would replace every object of the lab to use the new address)"
        ),
        steps={"up": "k3s-install"},
    )

    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.k3s.component import K3sArgs, K3sCluster

        return K3sCluster(
            "k3s",
            K3sArgs(version=cfg.settings(K3sSettings).version, timeout_seconds=cfg.cluster_timeout_seconds),
            opts,
        )


VARIANT = K3s()
