"""``smoke-pod-restart-never``."""

from __future__ import annotations

from policy import validators

from ..harness import (
    check_resource,
    smoke_pod,
)


def test_smoke_restart_never() -> None:
    assert check_resource("smoke-pod-restart-never", validators.T_POD, smoke_pod()).passed
    o = check_resource("smoke-pod-restart-never", validators.T_POD, smoke_pod(restartPolicy="Always"))
    assert "restartPolicy 'Always'" in o.text
    pod = smoke_pod()
    del pod["spec"]["restartPolicy"]
    assert (
        "Kubernetes default: Always" in check_resource("smoke-pod-restart-never", validators.T_POD, pod).text
    )
