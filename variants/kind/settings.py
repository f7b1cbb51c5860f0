"""The kind variant's own settings: the node image.

Its type and default are Pulumi.yaml's (gpulab.config.schema); the pattern it must match is
here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import IMAGE, NAMESPACE
from gpulab.config.variant import VariantSettings
from variants.base import Getter, get_text, refuse_cdi

#: Why the kind node's nvidia runtime takes no CDI as the lab sets it up.
NO_CDI: Final = (
    "the kind worker's containerd runs runtime class nvidia with the nvidia-container-runtime that "
    "nvidia-ctk runtime configure registers without container_annotations (NVIDIA/nvidia-container-toolkit "
    "v1.20.0 cmd/nvidia-ctk/runtime/configure), so the chart's cdi-annotations never reach that runtime, "
    "and the runtime adds every GPU the image's NVIDIA_VISIBLE_DEVICES=all asks for on top of what "
    "containerd injected for cdi-cri"
)

#: kind v0.30.0's node image for Kubernetes v1.34.0 (kind release notes), pinned by digest:
#: ``kindNodeImage``'s default in Pulumi.yaml (tests/contract/test_kind.py pins the value).
DEFAULT_NODE_IMAGE: Final[str] = schema.default("kindNodeImage")


@dataclass(frozen=True)
class KindSettings(VariantSettings):
    """What ``kind create cluster`` is given.

    Attributes:
        node_image: ``kindNodeImage``, the node image (``--image``), ``repo:tag@sha256:<digest>``
            as the kind release notes list it; it decides the Kubernetes version.
    """

    node_image: str = DEFAULT_NODE_IMAGE

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """A line when ``kindNodeImage`` is not an image pinned by digest."""
        image = get_text(get, "kindNodeImage")
        m = IMAGE.match(image)
        if not m or not m.group("digest"):
            problems.append(
                f"{NAMESPACE}:kindNodeImage={image!r} is not pinned by digest; use repo:tag@sha256:<digest> "
                f"from the kind release notes, e.g. {DEFAULT_NODE_IMAGE}"
            )

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> KindSettings:
        """:func:`parse`, refusing ``cdi=true`` (:data:`NO_CDI`) and ``toolkit=true`` (the host's
        toolkit injects the GPUs into the node, nvkind's way)."""
        refuse_cdi("kind", values, problems, NO_CDI)
        if values.get("toolkit") is True:
            problems.append(
                "gpu-lab:toolkit=true with cluster=kind: the host's NVIDIA container toolkit injects the "
                "GPUs into the kind node (nvkind's way), so the operator's toolkit stays off; "
                "set toolkit=false"
            )
        return parse(get)


def parse(get: Getter) -> KindSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return KindSettings(node_image=get_text(get, "kindNodeImage"))
