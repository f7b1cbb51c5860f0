"""The kind variant's own settings: the node image.

Its type and default are Pulumi.yaml's (gpulab.config.schema); the pattern it must match is
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import IMAGE, NAMESPACE
from variants.base import Getter, get_text

#: kind v0.30.0's node image for Kubernetes v1.34.0 (kind release notes), pinned by digest:
#: ``kindNodeImage``'s default in Pulumi.yaml (tests/contract/test_kind.py pins the value).
DEFAULT_NODE_IMAGE: Final[str] = schema.default("kindNodeImage")


@dataclass(frozen=True)
class KindSettings:
    """What ``kind create cluster`` is given.

    Attributes:
        node_image: ``kindNodeImage``, the node image (``--image``), ``repo:tag@sha256:<digest>``
            as the kind release notes list it; it decides the Kubernetes version.
    """

    node_image: str = DEFAULT_NODE_IMAGE


def check(get: Getter, problems: list[str]) -> None:
    """A line when ``kindNodeImage`` is not an image pinned by digest."""
    image = get_text(get, "kindNodeImage")
    m = IMAGE.match(image)
    if not m or not m.group("digest"):
        problems.append(
            f"{NAMESPACE}:kindNodeImage={image!r} is not pinned by digest; use repo:tag@sha256:<digest> "
            f"from the kind release notes, e.g. {DEFAULT_NODE_IMAGE}"
        )


def parse(get: Getter) -> KindSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return KindSettings(node_image=get_text(get, "kindNodeImage"))
