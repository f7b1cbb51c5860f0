"""``minikube-start-resources``."""

from __future__ import annotations

from gpulab.core.argv import encode
from policy import validators

from ..harness import (
    check_resource,
    ctl_start,
)


def test_minikube_resources() -> None:
    assert check_resource("minikube-start-resources", validators.T_COMMAND, ctl_start()).passed
    o = check_resource("minikube-start-resources", validators.T_COMMAND, ctl_start(cpus=2))
    assert "--cpus=2" in o.text and ">= 4" in o.text
    o = check_resource("minikube-start-resources", validators.T_COMMAND, ctl_start(memory=4096))
    assert "--memory=4096mb" in o.text
    direct = {"create": encode(["minikube", "start", "--cpus=4", "--memory=8g"])}
    assert check_resource("minikube-start-resources", validators.T_COMMAND, direct).passed
    o = check_resource("minikube-start-resources", validators.T_COMMAND, ctl_start(), {"minCpus": 8})
    assert "expected: --cpus >= 8" in o.text and "scripts/pulumi config set gpu-lab:cpus 8" in o.text
