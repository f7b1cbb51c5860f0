"""``minikube-start-gpu``."""

from __future__ import annotations

from gpulab.core.argv import encode
from policy import validators

from ..harness import (
    check_resource,
    ctl_start,
)


# --- minikube start -----------------------------------------------------------------
def test_minikube_gpu_flags_pass_for_the_labs_command() -> None:
    assert check_resource("minikube-start-gpu", validators.T_COMMAND, ctl_start()).passed


def test_minikube_gpu_flags_violate_without_docker_or_gpus() -> None:
    direct = {"create": encode(["minikube", "start", "--driver=kvm2", "--cpus=4"])}
    o = check_resource("minikube-start-gpu", validators.T_COMMAND, direct)
    assert "--gpus=<absent>" in o.text and "--driver=kvm2" in o.text and "nvidia-ctk" in o.text


def test_minikube_command_that_cannot_be_read_is_not_evaluated() -> None:
    # The lab's start step, but its flags are not all there: nothing to judge.
    odd = {"create": encode(["python", "-m", "variants.minikube.ctl", "up", "--profile", "x"])}
    o = check_resource("minikube-start-gpu", validators.T_COMMAND, odd)
    assert not o.violations and o.not_applicable and "cannot read minikube start flags" in o.not_applicable
