"""Reading the ``minikube start`` command (:mod:`policy.validators.minikube.start_command`)."""

from __future__ import annotations

import pytest

from policy import validators
from variants.minikube import ctl as minikube_ctl

from ..harness import (
    addon,
    check_resource,
    ctl_start,
)


def test_minikube_argv_is_what_minikube_ctl_really_runs() -> None:
    argv = validators.minikube_start_argv(ctl_start()["create"])
    assert argv == minikube_ctl.start_argv(minikube_ctl.StartSpec("gpu-lab", 4, 8192, "v1.34.0", "all"))
    direct = ["minikube", "start", "-p", "x", "--driver=docker"]
    assert validators.minikube_start_argv(direct) == direct
    assert validators.minikube_start_argv(["echo", "hi"]) is None


@pytest.mark.parametrize(
    ("text", "mib"), [("8192mb", 8192), ("8g", 8192), ("8GiB", 8192), ("8192", 8192), ("4096m", 4096)]
)
def test_memory_units(text: str, mib: float) -> None:
    assert validators.memory_mib(text) == mib


def test_minikube_policies_ignore_other_commands() -> None:
    assert check_resource("minikube-start-gpu", validators.T_COMMAND, addon("disabled")).passed
