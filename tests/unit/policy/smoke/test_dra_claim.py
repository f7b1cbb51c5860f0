"""``smoke-pod-dra-claim``: the smoke Pod in DRA mode, and its ResourceClaimTemplate."""

from __future__ import annotations

from gpulab.kube import pod_specs
from policy import validators
from policy.validators.smoke.dra_claim import T_CLAIM_TEMPLATE, TEMPLATE

from ..harness import check_resource, smoke_pod


def _dra_pod() -> dict:
    spec = pod_specs.smoke("nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", 2, claim_template=TEMPLATE)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-smoke"}, "spec": spec}


def test_the_labs_dra_pod_passes_and_the_counted_gpu_path_is_not_this_policys() -> None:
    o = check_resource("smoke-pod-dra-claim", validators.T_POD, _dra_pod())
    assert o.passed, o.text
    # The device-plugin path: no finding here; smoke-pod-gpu-limit governs it.
    assert (
        "smoke-pod-dra-claim" not in check_resource("smoke-pod-dra-claim", validators.T_POD, smoke_pod()).text
    )
    # And smoke-pod-gpu-limit leaves the DRA Pod alone (it has no counted limit by design).
    assert (
        "smoke-pod-gpu-limit" not in check_resource("smoke-pod-gpu-limit", validators.T_POD, _dra_pod()).text
    )


def test_a_claim_beside_a_counted_gpu_or_unused_by_the_container_fails() -> None:
    pod = _dra_pod()
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}
    o = check_resource("smoke-pod-dra-claim", validators.T_POD, pod)
    assert not o.passed and "counted GPU limits ['nvidia.com/gpu']" in o.text, o.text
    pod = _dra_pod()
    pod["spec"]["containers"][0]["resources"] = {}
    assert not check_resource("smoke-pod-dra-claim", validators.T_POD, pod).passed


def test_the_template_asks_for_nvidias_device_class() -> None:
    props = {"metadata": {"name": TEMPLATE}, **pod_specs.claim_template("gpu.nvidia.com", 2)}
    props = {"metadata": props["metadata"], "spec": {"spec": props["spec"]}}
    assert check_resource("smoke-pod-dra-claim", T_CLAIM_TEMPLATE, props).passed
    props["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "mig.nvidia.com"
    o = check_resource("smoke-pod-dra-claim", T_CLAIM_TEMPLATE, props)
    assert not o.passed and "DeviceClass gpu.nvidia.com" in o.text, o.text
