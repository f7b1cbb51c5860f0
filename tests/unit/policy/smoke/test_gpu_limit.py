"""``smoke-pod-gpu-limit``."""

from __future__ import annotations

import pytest

from policy import validators

from ..harness import (
    check_resource,
    smoke_pod,
)


def test_smoke_gpu_limit() -> None:
    assert check_resource("smoke-pod-gpu-limit", validators.T_POD, smoke_pod()).passed
    pod = smoke_pod()
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    o = check_resource("smoke-pod-gpu-limit", validators.T_POD, pod)
    assert "limits[nvidia.com/gpu]=unset" in o.text


@pytest.mark.parametrize("resource", ["nvidia.com/mig-1g.18gb", "nvidia.com/gpu.shared"])
def test_a_mig_device_or_a_shared_gpu_is_a_gpu_limit_too(resource: str) -> None:
    """Under migStrategy mixed the smoke Pod asks for nvidia.com/mig-<profile> (gpulab.config.mig), under
    time-slicing's rename for nvidia.com/gpu.shared (gpulab.config.time_slicing)."""
    pod = smoke_pod()
    pod["spec"]["containers"][0]["resources"] = {"limits": {resource: "1"}}
    o = check_resource("smoke-pod-gpu-limit", validators.T_POD, pod)
    assert o.passed, o.text
    pod["spec"]["containers"][0]["resources"] = {"limits": {resource: "0"}}
    assert not check_resource("smoke-pod-gpu-limit", validators.T_POD, pod).passed
