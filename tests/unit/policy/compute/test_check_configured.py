"""``compute-check-configured``."""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyResource

from policy import validators

from ..harness import COMPUTE_OK, UNK, check_stack, host_probe, res

ITEM = "compute-check-configured"


def compute_pod(image: str = COMPUTE_OK, **spec: Any) -> dict[str, Any]:
    container = {"name": "vectoradd", "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    body: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-compute"}, "spec": body}


def component(spec: dict[str, Any]) -> PolicyResource:
    return res(validators.T_COMPUTE, {"image": COMPUTE_OK, "phase": UNK, "podSpec": spec}, "compute")


def pod(props: dict[str, Any]) -> PolicyResource:
    return res(validators.T_POD, props, "compute-pod")


def test_the_labs_compute_pod_passes() -> None:
    assert check_stack(ITEM, [host_probe(), pod(compute_pod())]).passed


def test_at_preview_the_components_pod_spec_is_read() -> None:
    # The Pod's state is empty while the provider's kubeconfig is unknown.
    o = check_stack(ITEM, [host_probe(), pod({}), component(compute_pod()["spec"])])
    assert o.passed, o.text
    o = check_stack(ITEM, [host_probe(), pod({}), component(compute_pod(restartPolicy="Always")["spec"])])
    assert "restartPolicy 'Always'" in o.text and o.violations[0][1] == "urn:test::compute"


def test_no_gpu_limit_restart_always_and_latest_each_violate() -> None:
    spec = compute_pod("nvcr.io/nvidia/k8s/cuda-sample:latest", restartPolicy="Always")
    spec["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1"}}
    o = check_stack(ITEM, [host_probe(), pod(spec)])
    assert len(o.violations) == 3, o.text
    assert "resources.limits nvidia.com/gpu >= 1" in o.text
    assert "restartPolicy 'Always'" in o.text
    assert "image 'nvcr.io/nvidia/k8s/cuda-sample:latest'" in o.text and "computeImage" in o.text


def test_a_mig_resource_counts_as_a_gpu() -> None:
    spec = compute_pod()
    spec["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.18gb": "1"}}
    assert check_stack(ITEM, [host_probe(), pod(spec)]).passed


def test_an_image_whose_cuda_the_host_cannot_run_violates_naming_the_tag_that_fits() -> None:
    o = check_stack(ITEM, [host_probe(driver="550.54.14", max_cuda="12.4"), pod(compute_pod())])
    assert len(o.violations) == 1
    assert "needs CUDA 12.5" in o.text and "CUDA 12.4 at most" in o.text
    assert "cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04" in o.text
    assert "scripts/pulumi config set gpu-lab:computeImage" in o.text


def test_no_host_facts_is_not_evaluated_not_passed() -> None:
    o = check_stack(ITEM, [host_probe(source="off", driver=None, max_cuda=None), pod(compute_pod())])
    assert not o.violations and o.not_applicable and "no host facts" in o.not_applicable


def test_no_compute_pod_nothing_to_check() -> None:
    o = check_stack(ITEM, [host_probe()])
    assert o.passed and not o.violations


def per_gpu_pod(gpus: int, image: str = COMPUTE_OK) -> dict[str, Any]:
    """The compute Pod of a ``gpus``-GPU lab: ``vectoradd-0`` ... with one GPU each."""
    spec = compute_pod(image)
    one = spec["spec"]["containers"][0]
    spec["spec"]["containers"] = [{**one, "name": f"vectoradd-{i}"} for i in range(gpus)]
    return spec


def test_one_container_per_gpu_each_with_one_gpu_passes() -> None:
    o = check_stack(ITEM, [host_probe(), pod(per_gpu_pod(4))])
    assert o.passed, o.text
    o = check_stack(ITEM, [host_probe(), pod({}), component(per_gpu_pod(2)["spec"])])
    assert o.passed, o.text


def test_a_container_without_a_gpu_violates_naming_it() -> None:
    spec = per_gpu_pod(2)
    spec["spec"]["containers"][1]["resources"] = {"limits": {"cpu": "1"}}
    o = check_stack(ITEM, [host_probe(), pod(spec)])
    assert len(o.violations) == 1, o.text
    assert "every container with resources.limits nvidia.com/gpu >= 1" in o.text
    assert 'vectoradd-1: {"cpu": "1"}' in o.text


def test_an_image_too_new_for_the_host_violates_once_not_per_gpu() -> None:
    o = check_stack(ITEM, [host_probe(driver="550.54.14", max_cuda="12.4"), pod(per_gpu_pod(3))])
    assert len(o.violations) == 1, o.text
    assert "needs CUDA 12.5" in o.text
    latest = check_stack(ITEM, [host_probe(), pod(per_gpu_pod(2, "nvcr.io/nvidia/k8s/cuda-sample:latest"))])
    assert len(latest.violations) == 1, latest.text
    assert "containers vectoradd-0, vectoradd-1: image 'nvcr.io/nvidia/k8s/cuda-sample:latest'" in latest.text


def test_a_request_of_the_pods_claim_counts_as_a_gpu() -> None:
    """gpuStack dra: container i uses request gpu-<i> of the Pod's ResourceClaim, no counted limit."""
    spec = compute_pod()
    spec["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus", "request": "gpu-0"}]}
    assert check_stack(ITEM, [host_probe(), pod(spec)]).passed
    spec["spec"]["containers"][0]["resources"] = {"claims": []}
    assert not check_stack(ITEM, [host_probe(), pod(spec)]).passed
