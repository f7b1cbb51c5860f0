"""minikube's policies (variants/minikube/policies.py), as the pack runs them: reading the
``minikube start`` its step runs, ``minikube-start-gpu`` and ``minikube-start-resources``."""

from __future__ import annotations

import pytest

from gpulab.core.argv import encode
from policy import validators
from tests.unit.policy.harness import addon, check_resource, ctl_start
from variants import registry
from variants.minikube import ctl as minikube_ctl
from variants.minikube.policies import memory_mib, minikube_start_argv


def test_the_record_names_its_policies_and_the_pack_runs_them() -> None:
    names = [p.name for p in registry.get("minikube").spec.policies]
    assert names == ["minikube-start-gpu", "minikube-start-resources"]
    assert [s.name for s in validators.SPECS if s.name.startswith("minikube-")] == names


# --- reading the command ------------------------------------------------------------------
def test_minikube_argv_is_what_minikube_ctl_really_runs() -> None:
    argv = minikube_start_argv(ctl_start()["create"])
    assert argv == minikube_ctl.start_argv(minikube_ctl.StartSpec("gpu-lab", 4, 8192, "v1.34.0", "all"))
    direct = ["minikube", "start", "-p", "x", "--driver=docker"]
    assert minikube_start_argv(direct) == direct
    assert minikube_start_argv(["echo", "hi"]) is None


@pytest.mark.parametrize(
    ("text", "mib"), [("8192mb", 8192), ("8g", 8192), ("8GiB", 8192), ("8192", 8192), ("4096m", 4096)]
)
def test_memory_units(text: str, mib: float) -> None:
    assert memory_mib(text) == mib


def test_minikube_policies_ignore_other_commands() -> None:
    assert check_resource("minikube-start-gpu", validators.T_COMMAND, addon("disabled")).passed


# --- minikube-start-gpu -------------------------------------------------------------------
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


# --- minikube-start-resources -------------------------------------------------------------
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


def test_the_record_says_whether_minikube_s_own_device_plugin_addon_runs() -> None:
    # single-device-plugin-owner asks each variant's record, never minikube's module.
    ask = registry.get("minikube").spec.device_plugin_addon
    assert ask is not None
    assert all(registry.get(n).spec.device_plugin_addon is None for n in registry.NAMES if n != "minikube")
    addon_cmd = addon("disabled")["create"]  # the lab's: variants.minikube.ctl addon --state disabled
    on = encode(["minikube", "start", "-p", "lab", "--driver=docker", "--gpus=all"])
    off = encode(["minikube", "start", "-p", "lab", "--driver=docker"])
    assert ask({"minikube-start": on}) == (
        True,
        "minikube addon on (minikube start --gpus=all, no addon command)",
    )
    assert ask({"minikube-start": off}) == (False, "no minikube addon (minikube start without --gpus)")
    # The addon command's own state wins over the start's --gpus.
    assert ask({"minikube-start": on, "minikube-addon": addon_cmd}) == (
        False,
        "minikube addon nvidia-device-plugin disabled",
    )
    assert ask({"sim-cluster": encode(["python", "-m", "variants.sim.ctl", "up"])}) is None
