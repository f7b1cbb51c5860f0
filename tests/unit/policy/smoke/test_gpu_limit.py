"""``smoke-pod-gpu-limit``."""

from __future__ import annotations

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
