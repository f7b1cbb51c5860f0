"""The minikube variant: the chapter's lab (``minikube start --driver=docker --gpus=all``).

Folder: ``settings.py`` (its own config keys, ``cpus``, ``memoryMiB``, ``dockerSelfTest``:
MinikubeSettings), ``component.py`` (MinikubeCluster), ``ctl.py`` (the helper the commands
run: check-then-act ``minikube start``/``delete`` scoped to the profile), ``host.py``
(Docker, resources and minikube version on this host), ``policies.py`` (its policies on the
``minikube start`` it runs).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core.names import DEVICE_LIST_ENVVAR
from variants.base import (
    Getter,
    Runner,
    Status,
    Tool,
    Variant,
    VariantSpec,
    run_quietly,
    started_record,
)
from variants.minikube import policies, settings
from variants.minikube.settings import NO_CDI, MinikubeSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.core.findings import Finding


class Minikube(Variant):
    """minikube with the docker driver and runtime on this GPU host (see module docstring)."""

    spec = VariantSpec(
        name="minikube",
        # NVIDIA's DRA driver hands the kubelet CDI devices (cmd/gpu-kubelet-plugin/cdi.go at
        # sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0), which the kubelet passes in the CRI's
        # ContainerConfig.CDIDevices; cri-dockerd drops them (NO_CDI).
        dra_note=(
            "NVIDIA's DRA driver gives a Pod its GPU as a CDI device that the kubelet passes to the "
            "runtime (sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0 cmd/gpu-kubelet-plugin/cdi.go), and "
            + NO_CDI
            + "; use cluster=existing on a containerd or CRI-O node with CDI enabled"
        ),
        gpu_stack_note=(
            "minikube's --gpus=all turns on its own nvidia-device-plugin addon, NVIDIA's device plugin "
            "v0.17.3 as a static DaemonSet (kubernetes/minikube v1.37.0 pkg/minikube/assets/addons.go), "
            "so there the device plugin alone is that addon: set devicePluginOwner=minikube-addon and "
            "devicePlugin=false; NVIDIA's chart beside it would register nvidia.com/gpu a second time"
        ),
        settings=MinikubeSettings,
        exclusive_settings=(("devicePluginOwner", "minikube-addon"),),
        bounds=settings.BOUNDS,
        node_runtime="docker",  # the lab always starts minikube with --container-runtime=docker
        # `--gpus=all`: minikube writes the node's /etc/docker/daemon.json with default-runtime
        # nvidia (/usr/bin/nvidia-container-runtime, preinstalled in its kicbase image since
        # v1.32): minikube pkg/minikube/cruntime/docker.go, configureDocker. The operator's
        # toolkit would configure a second runtime in the node; off unless gpu-lab:toolkit=true.
        runtime_injects_gpus=True,
        cdi=False,  # the node's runtime reads no CDI (true is refused by its settings)
        device_list=DEVICE_LIST_ENVVAR,
        device_list_reason=(
            NO_CDI + "; the node's nvidia runtime (Docker's default with --gpus=all) reads "
            "NVIDIA_VISIBLE_DEVICES, which the envvar strategy sets per container to the UUIDs the "
            "device plugin allocated, over the image's all"
        ),
        tools=(
            Tool("minikube", "install minikube >= v1.37.0 (https://minikube.sigs.k8s.io/docs/start/)"),
            Tool("kubectl", "install kubectl"),
        ),
        bundle_tools={"minikube": ("minikube", "version", "--short")},
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
        start_or_delete_hint=(
            "start it (`minikube start -p {profile}`) or delete it (`minikube delete -p {profile}`)"
        ),
        node_command="minikube -p {profile} ssh -- {cmd}",
        steps={"up": "minikube-start", "addon": "minikube-addon"},
        direct_steps={("minikube", "start"): "minikube-start", ("minikube", "addons"): "minikube-addon"},
        policies=policies.POLICIES,  # on its minikube start: GPUs, driver, runtime, resources
        device_plugin_addon=policies.device_plugin_addon,
    )

    def preflight(self, cfg: LabConfig) -> Sequence[Finding]:
        """Its Docker, resources and minikube version on this host (variants/minikube/host.py)."""
        from variants.minikube.host import minikube_host_findings

        return minikube_host_findings(cfg)

    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
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

    def status(self, profile: str, root: Path, run: Runner = run_quietly) -> Status:
        """minikube profiles, listed by ``minikube profile list``."""
        if shutil.which("minikube") is None:
            return Status(None, "minikube is not on PATH")
        p = run(["minikube", "profile", "list", "-o", "json"])
        try:
            doc = json.loads(p.stdout)
            names = {x.get("Name") for x in (doc.get("valid") or []) + (doc.get("invalid") or [])}
        except (ValueError, AttributeError):
            # minikube prints an error, not JSON, when it has no profiles at all.
            if "No minikube profile was found" in (p.stdout + p.stderr):
                return Status(True, "minikube has no profiles")
            return Status(
                None, f"`minikube profile list -o json` printed no JSON: {(p.stderr or p.stdout)[:200]}"
            )
        present = profile in names
        return Status(not present, f"minikube profile {profile} is {'listed' if present else 'absent'}")

    def delete(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        """The helper's record that it started ``profile`` (variants.base.record_started)."""
        if not started_record(root, self.name, profile).exists():
            return None
        return [
            "python",
            "-m",
            self.spec.ctl,
            "down",
            "--profile",
            profile,
        ], f"the minikube cluster {profile!r}"

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create (variants.minikube.ctl.kubeconfig_argv): the
        # profile's context, which `minikube start` and `minikube update-context` rewrite.
        from variants.minikube.ctl import kubeconfig_argv

        if shutil.which("kubectl") is None:
            return None
        p = run(kubeconfig_argv(profile))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


VARIANT = Minikube()
