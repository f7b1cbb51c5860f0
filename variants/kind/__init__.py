"""The kind variant: GPUs injected into a kind worker the way NVIDIA's nvkind does it.

Folder: ``settings.py`` (its own config key, ``kindNodeImage``: KindSettings),
``component.py`` (KindCluster), ``ctl.py`` (the helper: kind config, create/delete, the
in-node toolkit, and the host's NVIDIA runtime checks).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core.names import DEVICE_LIST_ENVVAR
from variants import base
from variants.base import (
    Getter,
    Runner,
    Status,
    Tool,
    Variant,
    VariantSpec,
    named_cluster,
    run_quietly,
)
from variants.kind.settings import NO_CDI, KindSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.core.findings import Finding


class Kind(Variant):
    """kind with one GPU worker holding every GPU (see module docstring)."""

    spec = VariantSpec(
        name="kind",
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
        settings=KindSettings,
        node_runtime="containerd",
        # The host's toolkit injects the GPUs, in nvkind's way (variants/kind/ctl.py): the
        # operator's toolkit stays off (true is refused by its settings), and with it the chart's
        # toolkit.enabled; an operator toolkit would install a second runtime into the node and
        # rewrite the containerd config kind_ctl gave its nvidia handler.
        runtime_injects_gpus=True,
        cdi=False,  # the node's nvidia runtime reads no CDI annotation (true is refused)
        device_list=DEVICE_LIST_ENVVAR,
        device_list_reason=(
            NO_CDI + "; with the envvar strategy the kubelet sets NVIDIA_VISIBLE_DEVICES to the allocated "
            "UUIDs over the image's all, and that runtime injects exactly those"
        ),
        # kind_ctl gives the node's containerd an nvidia handler; runc stays the default.
        runtime_class="nvidia",
        tools=(
            Tool("kind", "install kind >= v0.30.0 (https://kind.sigs.k8s.io/docs/user/quick-start/)"),
            Tool("docker", "install Docker Engine and the NVIDIA container toolkit"),
            Tool("nvidia-ctk", "install nvidia-container-toolkit (it injects the GPUs into the kind node)"),
        ),
        bundle_tools={"kind": ("kind", "version")},
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
        start_or_delete_hint=(
            "start its node containers (`docker start {profile}-control-plane {profile}-worker`) "
            "or delete it (`kind delete cluster --name {profile}`)"
        ),
        # The GPU worker is a container of this host's Docker (variants/kind/ctl.py names it).
        node_command="docker exec {profile}-worker {cmd}",
        steps={"up": "kind-cluster"},
    )

    def preflight(self, cfg: LabConfig) -> Sequence[Finding]:
        """The host's NVIDIA runtime settings (variants/kind/ctl.py); none without its tools."""
        from variants.kind import ctl

        # Without docker or nvidia-ctk the runtime checks would only repeat that.
        return [] if base.missing_tools(self.spec) else ctl.host_findings()

    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.kind.component import KindArgs, KindCluster

        own = cfg.settings(KindSettings)
        return KindCluster("kind", KindArgs(node_image=own.node_image, **named_cluster(self.spec, cfg)), opts)

    def status(self, profile: str, root: Path, run: Runner = run_quietly) -> Status:
        """kind clusters, listed by ``kind get clusters``."""
        if shutil.which("kind") is None:
            return Status(None, "kind is not on PATH")
        p = run(["kind", "get", "clusters"])
        if p.returncode != 0:
            return Status(None, f"`kind get clusters` failed: {(p.stderr or p.stdout)[:200]}")
        present = profile in {ln.strip() for ln in p.stdout.splitlines()}
        return Status(not present, f"kind cluster {profile} is {'listed' if present else 'absent'}")

    def delete(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        """The helper's work dir (its config and kubeconfig), made before ``kind create cluster``."""
        workdir = self.spec.workdir(profile)
        if not (root / workdir).exists():
            return None
        argv = ["python", "-m", self.spec.ctl, "down", "--name", profile, "--workdir", workdir]
        return argv, f"the kind cluster {profile!r}"

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create (variants.kind.ctl.get_kubeconfig_argv): kind
        # writes the node's admin.conf with the host endpoint Docker publishes now.
        from variants.kind.ctl import get_kubeconfig_argv

        if shutil.which("kind") is None:
            return None
        p = run(get_kubeconfig_argv(profile))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


VARIANT = Kind()
