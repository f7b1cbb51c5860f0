"""The minikube variant: the chapter's lab (``minikube start --driver=docker --gpus=all``).

Folder: ``component.py`` (MinikubeCluster), ``ctl.py`` (the helper the commands run:
check-then-act ``minikube start``/``delete`` scoped to the profile), ``host.py`` (Docker,
resources and minikube version on this host).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from variants.base import Runner, Tool, Variant, run_quietly

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config import LabConfig
    from gpulab.findings import Finding


class Minikube(Variant):
    """minikube with the docker driver and runtime on this GPU host (see module docstring)."""

    name = "minikube"
    node_runtime = "docker"  # the lab always starts minikube with --container-runtime=docker
    # `--gpus=all`: minikube writes the node's /etc/docker/daemon.json with default-runtime
    # nvidia (/usr/bin/nvidia-container-runtime, preinstalled in its kicbase image since
    # v1.32): minikube pkg/minikube/cruntime/docker.go, configureDocker. The operator's
    # toolkit would configure a second runtime in the node; off unless gpu-lab:toolkit=true.
    runtime_injects_gpus = True
    tools = (Tool("minikube", "install minikube >= 1.32"), Tool("kubectl", "install kubectl"))
    steps: ClassVar = {"up": "minikube-start", "addon": "minikube-addon"}
    exclusive_settings = (("devicePluginOwner", "minikube-addon"),)

    def host_findings(self, cfg: LabConfig) -> Sequence[Finding]:
        from variants.minikube.host import minikube_host_findings

        return minikube_host_findings(cfg)

    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.minikube.component import MinikubeArgs, MinikubeCluster

        return MinikubeCluster(
            "minikube",
            MinikubeArgs(
                profile=cfg.profile,
                cpus=cfg.cpus,
                memory_mib=cfg.memory_mib,
                kubernetes_version=cfg.kubernetes_version,
                addon_device_plugin=cfg.device_plugin_owner == "minikube-addon",
                timeout_seconds=cfg.cluster_timeout_seconds,
            ),
            opts,
        )

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


VARIANT = Minikube()
