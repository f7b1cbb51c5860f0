"""What each minikube release bundles that the GPU lab depends on, and the floor it sets.

With ``--driver=docker --container-runtime=docker`` the kubelet talks to cri-dockerd inside
the node (minikube's kicbase image). GPU Operator v26.x puts ``runtimeClassName: nvidia`` on
every operand (NVIDIA/gpu-operator v26.7.0 ``controllers/object_controls.go``
``setRuntimeClassName``: skipped only for CRI-O without CDI or with the NRI plugin), and
cri-dockerd before v0.4.0 refuses any handler but ``docker`` when it creates the Pod sandbox
(Mirantis/cri-dockerd v0.3.25 ``core/sandbox_run.go``: ``RuntimeHandler %q not supported``);
v0.4.0 maps the handler to a Docker runtime it finds configured (``IsRuntimeConfigured``,
``HostConfig.Runtime``). So on a minikube with cri-dockerd 0.3.x no operand starts and the
gate times out.

The table is read from kubernetes/minikube at each tag: ``deploy/kicbase/Dockerfile``
(``ARG CRI_DOCKERD_VERSION``) and ``pkg/minikube/constants/constants.go``
(``NewestKubernetesVersion``, ``OldestKubernetesVersion``). A Kubernetes version above a
release's newest is "not supported by this release" (``cmd/minikube/cmd/start.go``
``validateKubernetesVersion``: a warning and a look-up on GitHub, refused offline), so the
floor is the first release that has both cri-dockerd >= v0.4.0 and the lab's default
Kubernetes version (gpulab.config ``LabConfig.kubernetes_version``, v1.34.0): v1.37.0.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

Version = tuple[int, int, int]


def parse(version: str) -> Version:
    """``"v1.37.0"`` (or ``"1.37.0"``) -> ``(1, 37, 0)``.

    Raises:
        ValueError: not ``[v]MAJOR.MINOR.PATCH``.
    """
    parts = version.strip().removeprefix("v").split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a vMAJOR.MINOR.PATCH version: {version!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def text(version: Version) -> str:
    """``(1, 37, 0)`` -> ``"v1.37.0"``."""
    return "v" + ".".join(str(p) for p in version)


@dataclass(frozen=True)
class Release:
    """One minikube release: its version, the cri-dockerd its kicbase image installs, and the
    Kubernetes versions it supports (oldest, newest), all ``vX.Y.Z``."""

    minikube: str
    cri_dockerd: str
    oldest_kubernetes: str
    newest_kubernetes: str

    def honours_runtime_class(self) -> bool:
        """Its cri-dockerd creates sandboxes with a RuntimeClass handler (>= v0.4.0)."""
        return parse(self.cri_dockerd) >= CRI_DOCKERD_RUNTIME_HANDLERS

    def supports(self, kubernetes_version: str) -> bool:
        """``kubernetes_version`` lies in its supported range."""
        v = parse(kubernetes_version)
        return parse(self.oldest_kubernetes) <= v <= parse(self.newest_kubernetes)


#: First cri-dockerd whose RunPodSandbox takes a RuntimeClass handler other than ``docker``
#: (Mirantis/cri-dockerd v0.4.0 ``core/sandbox_run.go``).
CRI_DOCKERD_RUNTIME_HANDLERS: Final[Version] = (0, 4, 0)

#: kubernetes/minikube, each tag's deploy/kicbase/Dockerfile and constants.go.
RELEASES: Final[tuple[Release, ...]] = (
    Release("v1.32.0", "v0.3.3", "v1.16.0", "v1.28.3"),
    Release("v1.33.0", "v0.3.12", "v1.20.0", "v1.30.0"),
    Release("v1.33.1", "v0.3.12", "v1.20.0", "v1.30.0"),
    Release("v1.34.0", "v0.3.15", "v1.20.0", "v1.31.0"),
    Release("v1.35.0", "v0.3.15", "v1.20.0", "v1.32.0"),
    Release("v1.36.0", "v0.4.0", "v1.20.0", "v1.33.1"),
    Release("v1.37.0", "v0.4.0", "v1.28.0", "v1.34.0"),
    Release("v1.38.0", "v0.4.1", "v1.28.0", "v1.35.0"),
    Release("v1.38.1", "v0.4.1", "v1.28.0", "v1.35.1"),
)


def release(minikube: str) -> Release | None:
    """The table's row for ``minikube`` (``"v1.36.0"``), None for a release it does not list."""
    want = parse(minikube)
    return next((r for r in RELEASES if parse(r.minikube) == want), None)


def floor(kubernetes_version: str) -> Version:
    """The oldest release that runs the operator's operands (cri-dockerd >= v0.4.0) and
    supports ``kubernetes_version``.

    Raises:
        LookupError: no listed release does (a Kubernetes version newer than the table).
    """
    for r in RELEASES:
        if r.honours_runtime_class() and r.supports(kubernetes_version):
            return parse(r.minikube)
    raise LookupError(f"no minikube release in the table supports Kubernetes {kubernetes_version}")
