"""``smoke-image-cuda-fits-host``."""

from __future__ import annotations

from pulumi_policy import PolicyResource

from policy import validators

from ..harness import (
    SMOKE_131,
    SMOKE_OK,
    UNK,
    check_stack,
    host_probe,
    res,
    smoke_pod,
    stack,
)


# --- smoke-image-cuda-fits-host -----------------------------------------------------
def smoke_component(image: str) -> PolicyResource:
    return res(validators.T_SMOKE, {"image": image, "phase": UNK}, "smoke")


def test_cuda_fits_passes_when_the_image_is_not_newer() -> None:
    assert check_stack("smoke-image-cuda-fits-host", [host_probe(), smoke_component(SMOKE_OK)]).passed


def test_cuda_131_on_a_130_host_violates_naming_image_cuda_driver_max_and_newest_tag() -> None:
    o = check_stack(
        "smoke-image-cuda-fits-host",
        [host_probe(), smoke_component(SMOKE_131), res(validators.T_POD, {}, "smoke-pod"), stack({})],
    )
    assert len(o.violations) == 1
    text = o.text
    assert "needs CUDA 13.1" in text and "driver 580.159.04" in text and "CUDA 13.0 at most" in text
    assert "nvidia/cuda:13.0.2-base-ubuntu24.04" in text and "first fix:" in text
    assert o.violations[0][1] == "urn:test::smoke"


def test_cuda_reads_the_pods_spec_when_known() -> None:
    o = check_stack("smoke-image-cuda-fits-host", [host_probe(), res(validators.T_POD, smoke_pod(SMOKE_131))])
    assert "needs CUDA 13.1" in o.text


def test_cuda_with_the_probe_off_is_not_evaluated_unless_pack_config_gives_the_facts() -> None:
    resources = [host_probe(source="off", driver=None, max_cuda=None), smoke_component(SMOKE_131)]
    o = check_stack("smoke-image-cuda-fits-host", resources)
    assert not o.violations and o.not_applicable and "host probe is off" in o.not_applicable
    o = check_stack(
        "smoke-image-cuda-fits-host", resources, {"hostMaxCuda": "13.0", "hostDriverVersion": "580.1"}
    )
    assert "needs CUDA 13.1" in o.text and "from pack config" in o.text
    o = check_stack("smoke-image-cuda-fits-host", resources, {"hostDriverVersion": "550.54.14"})
    assert "CUDA 12.4 at most" in o.text and "derived from driver" in o.text


def test_cuda_of_a_non_cuda_image_is_not_evaluated() -> None:
    o = check_stack("smoke-image-cuda-fits-host", [host_probe(), smoke_component("pytorch/pytorch:2.5.0")])
    assert not o.violations and o.not_applicable and "no CUDA X.Y" in o.not_applicable


def test_max_cuda_is_derived_from_the_driver_when_only_the_driver_is_known() -> None:
    assert validators.derive_max_cuda("580.159.04") == "13.0"
    assert validators.derive_max_cuda("550.54.14") == "12.4"
    assert validators.derive_max_cuda("470.1") is None
