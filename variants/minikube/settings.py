"""The minikube variant's own settings: the node's size and the Docker self-test.

Every key's type and default is Pulumi.yaml's (gpulab.config.schema); the bounds and the
checks with their reasons are here. ``cpus`` and ``memoryMiB`` are checked whichever variant
is chosen (one stack file may carry several; a value below the chapter's minimum is refused
everywhere, as it always was).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE, bound_problems
from gpulab.config.variant import VariantSettings
from gpulab.core.names import MIN_CPUS, MIN_MEMORY_MIB
from variants.base import Getter, get_flag, get_int, refuse_cdi

#: Why minikube's node runtime takes no CDI and needs the ``envvar`` device list.
NO_CDI: Final = (
    "with the docker runtime the kubelet talks to cri-dockerd, which hands Docker no CDI device in "
    "any release (Mirantis/cri-dockerd v0.4.3 core/container_create.go never reads CDIDevices; the "
    "support of #522 is unreleased) and turns CRI annotations into Docker labels, so neither the "
    "chart's cdi-cri nor its cdi-annotations reaches the node's default nvidia runtime, and every "
    "container would see what its image's NVIDIA_VISIBLE_DEVICES=all says"
)

#: The allowed range of minikube's numeric keys, inclusive (Pulumi.yaml states each highest).
BOUNDS: Final[Mapping[str, tuple[int, int]]] = {
    "cpus": (MIN_CPUS, 256),  # minikube --cpus: a node is at most the host
    "memoryMiB": (MIN_MEMORY_MIB, 2_097_152),  # minikube --memory: 2 TiB
}


@dataclass(frozen=True)
class MinikubeSettings(VariantSettings):
    """What ``minikube start`` is given and what its preflight runs.

    Attributes:
        cpus: ``cpus``, the node's ``--cpus`` (the default is the lab's minimum, 4:
            gpulab.core.names.MIN_CPUS; fewer and the operator's pods sit Pending).
        memory_mib: ``memoryMiB``, the node's ``--memory``, in MiB (at least 8192, 8 GiB:
            gpulab.core.names.MIN_MEMORY_MIB).
        docker_selftest: ``dockerSelfTest``, preflight also runs ``docker run --rm --gpus all
            <smokeImage> nvidia-smi`` (variants/minikube/host.py).
    """

    cpus: int = schema.default("cpus")
    memory_mib: int = schema.default("memoryMiB")
    docker_selftest: bool = schema.default("dockerSelfTest")

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """One line per bad value of ``cpus`` or ``memoryMiB``: below the chapter's minimum (with
        why), above :data:`BOUNDS`."""
        cpus = get_int(get, "cpus")
        if cpus < MIN_CPUS:
            problems.append(f"{NAMESPACE}:cpus={cpus} is below {MIN_CPUS} (the operator's pods sit Pending)")
        memory = get_int(get, "memoryMiB")
        if memory < MIN_MEMORY_MIB:
            problems.append(
                f"{NAMESPACE}:memoryMiB={memory} is below {MIN_MEMORY_MIB} (8 GiB, the chapter's minimum)"
            )
        problems += bound_problems(get, BOUNDS)

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> MinikubeSettings:
        """:func:`parse`, refusing ``cdi=true`` (the node's runtime reads no CDI: :data:`NO_CDI`)."""
        refuse_cdi("minikube", values, problems, NO_CDI)
        return parse(get)


def parse(get: Getter) -> MinikubeSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return MinikubeSettings(
        cpus=get_int(get, "cpus"),
        memory_mib=get_int(get, "memoryMiB"),
        docker_selftest=get_flag(get, "dockerSelfTest"),
    )
