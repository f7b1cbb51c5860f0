"""The kind variant: GPUs injected into a kind worker the way NVIDIA's nvkind does it.

Folder: ``settings.py`` (its own config key, ``kindNodeImage``: KindSettings),
``component.py`` (KindCluster), ``ctl.py`` (the helper: kind config, create/delete, the
in-node toolkit, and the host's NVIDIA runtime checks).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab.core.names import DEVICE_LIST_ENVVAR
from variants.base import (
    Capabilities,
    ConfigRules,
    Getter,
    HostNeeds,
    Lifecycle,
    OperatorNeeds,
    Runner,
    Tool,
    Variant,
    refuse_cdi,
    run_quietly,
)
from variants.kind import settings
from variants.kind.settings import KindSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig, OperatorConfig
    from gpulab.core.findings import Finding

#: Why the kind node's nvidia runtime takes no CDI as the lab sets it up.
_NO_CDI = (
    "the kind worker's containerd runs runtime class nvidia with the nvidia-container-runtime that "
    "nvidia-ctk runtime configure registers without container_annotations (NVIDIA/nvidia-container-toolkit "
    "v1.20.0 cmd/nvidia-ctk/runtime/configure), so the chart's cdi-annotations never reach that runtime, "
    "and the runtime adds every GPU the image's NVIDIA_VISIBLE_DEVICES=all asks for on top of what "
    "containerd injected for cdi-cri"
)


class _Config(ConfigRules):
    """kind's config: its own key, and the CDI and toolkit settings its node refuses."""

    def check_keys(self, get: Getter, problems: list[str]) -> None:
        settings.check(get, problems)

    def resolve(
        self, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> KindSettings:
        refuse_cdi(self.name, values, problems, _NO_CDI)
        if values.get("toolkit") is True:
            problems.append(
                "gpu-lab:toolkit=true with cluster=kind: the host's NVIDIA container toolkit injects the "
                "GPUs into the kind node (nvkind's way), so the operator's toolkit stays off; "
                "set toolkit=false"
            )
        return settings.parse(get)


class _Operator(OperatorNeeds):
    """The kind worker's containerd, GPUs injected by the host's toolkit (nvkind's way)."""

    def operator_toolkit(self, requested: bool | None) -> bool:
        # The host's toolkit injects the GPUs into the node (nvkind); true is refused in resolve.
        return False

    def operator_cdi(self, requested: bool | None, get: Getter) -> bool:
        return False  # the node's nvidia runtime reads no CDI annotation (true is refused in resolve)

    def device_list_strategy(self, op: OperatorConfig) -> str | None:
        return DEVICE_LIST_ENVVAR

    def runtime_class(self, cfg: LabConfig) -> str | None:
        # kind_ctl gives the node's containerd an nvidia handler; runc stays the default.
        return "nvidia"

    def helm_values(self, values: dict[str, Any], op: OperatorConfig) -> None:
        # The host's NVIDIA container toolkit injects the GPUs into the kind node (nvkind), and
        # kind_ctl gives the node's containerd its nvidia handler: an operator toolkit would
        # install a second runtime into the node and rewrite that containerd config.
        values["toolkit"] = {"enabled": False}


class _Host(HostNeeds):
    """kind, Docker and the NVIDIA container toolkit on this host, and its runtime checks."""

    def host_findings(self, cfg: LabConfig) -> Sequence[Finding]:
        from variants.kind import ctl

        # Without docker or nvidia-ctk the runtime checks would only repeat that.
        return [] if self.missing_tools() else ctl.host_findings()


class _Lifecycle(Lifecycle):
    """kind clusters, listed by ``kind get clusters``; the helper's work dir is the record."""

    def gone(self, profile: str, root: Path, run: Runner = run_quietly) -> tuple[bool | None, str]:
        if shutil.which("kind") is None:
            return None, "kind is not on PATH"
        p = run(["kind", "get", "clusters"])
        if p.returncode != 0:
            return None, f"`kind get clusters` failed: {(p.stderr or p.stdout)[:200]}"
        present = profile in {ln.strip() for ln in p.stdout.splitlines()}
        return not present, f"kind cluster {profile} is {'listed' if present else 'absent'}"

    def leftover(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        # kind's work dir (its config and kubeconfig) is made before `kind create cluster`.
        if not (root / self.workdir(profile)).exists():
            return None
        argv = ["python", "-m", self.ctl, "down", "--name", profile, "--workdir", self.workdir(profile)]
        return argv, f"the kind cluster {profile!r}"

    def start_or_delete_hint(self, profile: str) -> str:
        return (
            f"start its node containers (`docker start {profile}-control-plane {profile}-worker`) "
            f"or delete it (`kind delete cluster --name {profile}`)"
        )

    def live_kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create (variants.kind.ctl.get_kubeconfig_argv): kind
        # writes the node's admin.conf with the host endpoint Docker publishes now.
        from variants.kind.ctl import get_kubeconfig_argv

        if shutil.which("kind") is None:
            return None
        p = run(get_kubeconfig_argv(profile))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


class Kind(Variant):
    """kind with one GPU worker holding every GPU (see module docstring)."""

    name = "kind"
    capabilities = Capabilities(
        dra_note=(
            "NVIDIA's DRA driver on kind needs a node made for it: containerd's enable_cdi, the host's "
            "nvidia-ctk and the GPUs mounted into the node through NVIDIA's runtime with "
            "accept-nvidia-visible-devices-as-volume-mounts (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0 "
            "demo/clusters/kind/scripts/kind-cluster-config.yaml), which this variant's node is not; "
            "make such a cluster with upstream's demo and use cluster=existing"
        ),
        gpu_stack_note=(
            "the kind node gets NVIDIA's toolkit and an nvidia containerd handler from the lab, but the "
            "nvidia RuntimeClass comes from the GPU Operator, which device-plugin does not install; for "
            "NVIDIA's chart alone on a kind cluster, create that RuntimeClass and use cluster=existing "
            "with runtimeClass=nvidia"
        ),
    )
    config = _Config(name)
    operator = _Operator(
        node_runtime="containerd",
        runtime_injects_gpus=True,  # the host's toolkit, in nvkind's way (variants/kind/ctl.py)
        device_list_reason=(
            _NO_CDI + "; with the envvar strategy the kubelet sets NVIDIA_VISIBLE_DEVICES to the allocated "
            "UUIDs over the image's all, and that runtime injects exactly those"
        ),
    )
    host = _Host(
        name,
        tools=(
            Tool("kind", "install kind >= v0.30.0 (https://kind.sigs.k8s.io/docs/user/quick-start/)"),
            Tool("docker", "install Docker Engine and the NVIDIA container toolkit"),
            Tool("nvidia-ctk", "install nvidia-container-toolkit (it injects the GPUs into the kind node)"),
        ),
        bundle_tools={"kind": ("kind", "version")},
    )
    local = _Lifecycle(
        name,
        # kind publishes the API server on the host port it picked at create
        # (`common.PortOrGetFreePort`, sigs.k8s.io/kind v0.33.0
        # pkg/cluster/internal/providers/docker/provision.go), so it survives a restart: a new
        # endpoint means the node container was made again or the kubeconfig rewritten.
        endpoint_fix=(
            "kind cluster {profile} now publishes its API server at {live}, not at {recorded} where the "
            "stack read it at create; `kind export kubeconfig --name {profile}` points kubectl at it. "
            "Pulumi would replace every object of the lab to use the new address: make the lab anew "
            "with `GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab`"
        ),
        steps={"up": "kind-cluster"},
    )

    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.kind.component import KindArgs, KindCluster

        own = cfg.settings(KindSettings)
        return KindCluster("kind", KindArgs(node_image=own.node_image, **self.local.named_cluster(cfg)), opts)


VARIANT = Kind()
