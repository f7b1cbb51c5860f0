"""``single-device-plugin-owner``."""

from __future__ import annotations

from policy import validators

from ..harness import (
    STACK_URN,
    UNK,
    addon,
    check_stack,
    ctl_start,
    release,
    res,
    stack,
)


# --- single-device-plugin-owner -----------------------------------------------------
def test_one_owner_passes_operator_with_addon_disabled_and_the_sim_lab() -> None:
    minikube = [
        res(validators.T_COMMAND, ctl_start(), "minikube-cluster"),
        res(validators.T_COMMAND, addon("disabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, release(), "gpu-operator-release"),
    ]
    assert check_stack("single-device-plugin-owner", minikube).passed
    sim = [res(validators.T_RELEASE, release(), "gpu-operator-release"), stack({})]
    assert check_stack("single-device-plugin-owner", sim).passed


def test_two_owners_violate() -> None:
    both = [
        res(validators.T_COMMAND, ctl_start(), "minikube-cluster"),
        res(validators.T_COMMAND, addon("enabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, release(), "gpu-operator-release"),
        stack({}),
    ]
    o = check_stack("single-device-plugin-owner", both)
    assert "owners: minikube-addon, operator" in o.text and o.violations[0][1] == STACK_URN


def test_gpus_flag_without_an_addon_command_means_minikubes_plugin_is_on() -> None:
    implicit = [
        res(validators.T_COMMAND, ctl_start(), "minikube-cluster"),
        res(validators.T_RELEASE, release()),
    ]
    assert "minikube start --gpus=all" in check_stack("single-device-plugin-owner", implicit).text


def test_no_owner_violates() -> None:
    values = release()["values"] | {"devicePlugin": {"enabled": False}}
    none = [
        res(validators.T_COMMAND, addon("disabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, release(values=values)),
    ]
    assert "owners: none" in check_stack("single-device-plugin-owner", none).text


def test_owner_at_preview_reads_the_operator_component_when_the_release_state_is_empty() -> None:
    preview = [
        res(validators.T_COMMAND, addon("disabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, {}, "gpu-operator-release"),
        res(validators.T_GPU_OPERATOR, {"components": {"devicePlugin": True}, "allocatableGpus": UNK}),
    ]
    assert check_stack("single-device-plugin-owner", preview).passed
    preview[1:] = [res(validators.T_RELEASE, {}, "gpu-operator-release")]
    o = check_stack("single-device-plugin-owner", preview)
    assert not o.violations and o.not_applicable and "known after deployment" in o.not_applicable
