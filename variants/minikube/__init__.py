"""The minikube variant: the chapter's lab (``minikube start --driver=docker --gpus=all``).

Folder: ``settings.py`` (its own config keys, ``cpus``, ``memoryMiB``, ``dockerSelfTest``:
MinikubeSettings), ``component.py`` (MinikubeCluster), ``ctl.py`` (the helper the commands
run: check-then-act ``minikube start``/``delete`` scoped to the profile), ``host.py``
(Docker, resources and minikube version on this host).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

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
from variants.minikube import settings
from variants.minikube.settings import MinikubeSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig, OperatorConfig
    from gpulab.core.findings import Finding

#: Why minikube's node runtime takes no CDI and needs the ``envvar`` device list.
_NO_CDI = (
    "with the docker runtime the kubelet talks to cri-dockerd, which hands Docker no CDI device in "
    "any release (Mirantis/cri-dockerd v0.4.3 core/container_create.go never reads CDIDevices; the "
    "support of #522 is unreleased) and turns CRI annotations into Docker labels, so neither the "
    "chart's cdi-cri nor its cdi-annotations reaches the node's default nvidia runtime, and every "
    "container would see what its image's NVIDIA_VISIBLE_DEVICES=all says"
)


class _Config(ConfigRules):
    """minikube's config: its own keys, and the CDI its node refuses."""

    def check_keys(self, get: Getter, problems: list[str]) -> None:
        settings.check(get, problems)

    def resolve(
        self, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> MinikubeSettings:
        refuse_cdi(self.name, values, problems, _NO_CDI)
        return settings.parse(get)


class _Operator(OperatorNeeds):
    """The minikube node's Docker, whose default runtime is nvidia (``--gpus=all``)."""

    def operator_cdi(self, requested: bool | None, get: Getter) -> bool:
        return False  # the node's runtime reads no CDI (true is refused in resolve)

    def device_list_strategy(self, op: OperatorConfig) -> str | None:
        return DEVICE_LIST_ENVVAR


class _Host(HostNeeds):
    """minikube and kubectl on this host, and its Docker, resources and minikube version."""

    def host_findings(self, cfg: LabConfig) -> Sequence[Finding]:
        from variants.minikube.host import minikube_host_findings

        return minikube_host_findings(cfg)


class _Lifecycle(Lifecycle):
    """minikube profiles, listed by ``minikube profile list``; the helper's record of a start."""

    def gone(self, profile: str, root: Path, run: Runner = run_quietly) -> tuple[bool | None, str]:
        if shutil.which("minikube") is None:
            return None, "minikube is not on PATH"
        p = run(["minikube", "profile", "list", "-o", "json"])
        try:
            doc = json.loads(p.stdout)
            names = {x.get("Name") for x in (doc.get("valid") or []) + (doc.get("invalid") or [])}
        except (ValueError, AttributeError):
            # minikube prints an error, not JSON, when it has no profiles at all.
            if "No minikube profile was found" in (p.stdout + p.stderr):
                return True, "minikube has no profiles"
            return None, f"`minikube profile list -o json` printed no JSON: {(p.stderr or p.stdout)[:200]}"
        present = profile in names
        return not present, f"minikube profile {profile} is {'listed' if present else 'absent'}"

    def down_argv(self, profile: str) -> list[str] | None:
        return ["python", "-m", self.ctl, "down", "--profile", profile]

    def start_or_delete_hint(self, profile: str) -> str:
        return f"start it (`minikube start -p {profile}`) or delete it (`minikube delete -p {profile}`)"

    def live_kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create (variants.minikube.ctl.kubeconfig_argv): the
        # profile's context, which `minikube start` and `minikube update-context` rewrite.
        from variants.minikube.ctl import kubeconfig_argv

        if shutil.which("kubectl") is None:
            return None
        p = run(kubeconfig_argv(profile))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


class Minikube(Variant):
    """minikube with the docker driver and runtime on this GPU host (see module docstring)."""

    name = "minikube"
    capabilities = Capabilities(
        # NVIDIA's DRA driver hands the kubelet CDI devices (cmd/gpu-kubelet-plugin/cdi.go at
        # sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0), which the kubelet passes in the CRI's
        # ContainerConfig.CDIDevices; cri-dockerd drops them (_NO_CDI).
        dra_note=(
            "NVIDIA's DRA driver gives a Pod its GPU as a CDI device that the kubelet passes to the "
            "runtime (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0 cmd/gpu-kubelet-plugin/cdi.go), and "
            + _NO_CDI
            + "; use cluster=existing on a containerd or CRI-O node with CDI enabled"
        ),
        gpu_stack_note=(
            "minikube's --gpus=all turns on its own nvidia-device-plugin addon, NVIDIA's device plugin "
            "v0.17.3 as a static DaemonSet (kubernetes/minikube v1.37.0 pkg/minikube/assets/addons.go), "
            "so there the device plugin alone is that addon: set devicePluginOwner=minikube-addon and "
            "devicePlugin=false; NVIDIA's chart beside it would register nvidia.com/gpu a second time"
        ),
    )
    config = _Config(
        name, exclusive_settings=(("devicePluginOwner", "minikube-addon"),), bounds=settings.BOUNDS
    )
    operator = _Operator(
        node_runtime="docker",  # the lab always starts minikube with --container-runtime=docker
        # `--gpus=all`: minikube writes the node's /etc/docker/daemon.json with default-runtime
        # nvidia (/usr/bin/nvidia-container-runtime, preinstalled in its kicbase image since
        # v1.32): minikube pkg/minikube/cruntime/docker.go, configureDocker. The operator's
        # toolkit would configure a second runtime in the node; off unless gpu-lab:toolkit=true.
        runtime_injects_gpus=True,
        device_list_reason=(
            _NO_CDI + "; the node's nvidia runtime (Docker's default with --gpus=all) reads "
            "NVIDIA_VISIBLE_DEVICES, which the envvar strategy sets per container to the UUIDs the "
            "device plugin allocated, over the image's all"
        ),
    )
    host = _Host(
        name,
        tools=(
            Tool("minikube", "install minikube >= v1.37.0 (https://minikube.sigs.k8s.io/docs/start/)"),
            Tool("kubectl", "install kubectl"),
        ),
        bundle_tools={"minikube": ("minikube", "version", "--short")},
    )
    local = _Lifecycle(
        name,
        # The docker driver publishes the API server's 8443 on a host port Docker picks at each
        # start (`--publish=127.0.0.1::8443`: kubernetes/minikube v1.37.0
        # pkg/drivers/kic/oci/oci.go), so a restart moves it; `minikube update-context` rewrites
        # the profile's context to the new port (cmd/minikube/cmd/update-context.go).
        endpoint_fix=(
            "minikube profile {profile} was restarted and Docker published its API server on another "
            "host port; `minikube update-context -p {profile}` points kubectl's context at it (a "
            "`minikube start` did already). The stack read its kubeconfig at create ({recorded}), and "
            "Pulumi would replace every object of the lab to use {live}: make the lab anew with "
            "`GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab`"
        ),
        steps={"up": "minikube-start", "addon": "minikube-addon"},
        direct_steps={("minikube", "start"): "minikube-start", ("minikube", "addons"): "minikube-addon"},
    )

    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.minikube.component import MinikubeArgs, MinikubeCluster

        own = cfg.settings(MinikubeSettings)
        return MinikubeCluster(
            "minikube",
            MinikubeArgs(
                profile=cfg.profile,
                cpus=own.cpus,
                memory_mib=own.memory_mib,
                kubernetes_version=cfg.kubernetes_version,
                addon_device_plugin=cfg.device_plugin_owner == "minikube-addon",
                timeout_seconds=cfg.cluster_timeout_seconds,
            ),
            opts,
        )


VARIANT = Minikube()
