"""``smoke-pod-image-pinned``."""

from __future__ import annotations

import pytest

from policy import validators

from ..harness import (
    SMOKE_OK,
    check_resource,
    smoke_pod,
)


@pytest.mark.parametrize("image", [SMOKE_OK, "nvidia/cuda@sha256:" + "a" * 64, "reg:5000/cuda:12.4.1-base"])
def test_smoke_image_pinned_passes(image: str) -> None:
    assert check_resource("smoke-pod-image-pinned", validators.T_POD, smoke_pod(image)).passed


@pytest.mark.parametrize("image", ["nvidia/cuda", "nvidia/cuda:latest", "reg:5000/cuda"])
def test_smoke_image_pinned_violates(image: str) -> None:
    o = check_resource("smoke-pod-image-pinned", validators.T_POD, smoke_pod(image))
    assert repr(image) in o.text
