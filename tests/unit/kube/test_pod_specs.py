"""gpulab.kube.pod_specs: the smoke and compute Pods are built once (components/smoke.py and
components/compute.py build theirs there), and the per-node fleet check runs exactly those Pods,
only pinned to a node, named and labelled for it."""

from __future__ import annotations

import pytest

from gpulab.kube import fleet, pod_specs
from gpulab.kube.smoke_gpus import SMOKE_SCRIPT

SPEC = fleet.FleetSpec(
    namespace="gpu-lab",
    smoke_image="nvidia/cuda:12.4.1-base-ubuntu22.04",
    compute_image="nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
    resource="nvidia.com/gpu",
    runtime_class="nvidia",
)


def _unpinned(pod: dict[str, object]) -> dict[str, object]:
    spec = dict(pod["spec"])  # type: ignore[call-overload]
    assert spec.pop("nodeSelector") == {"kubernetes.io/hostname": "gpu-a"}
    return spec


def test_the_fleets_smoke_pod_is_the_programs_pinned_to_the_node() -> None:
    pod = fleet.smoke_pod("gpu-a", SPEC, 8)
    assert _unpinned(pod) == pod_specs.smoke(SPEC.smoke_image, 8, "nvidia", "nvidia.com/gpu")
    assert pod["metadata"]["namespace"] == "gpu-lab"  # type: ignore[index]


def test_the_fleets_compute_pod_is_the_programs_pinned_to_the_node() -> None:
    assert SPEC.compute_image is not None
    pod = fleet.compute_pod("gpu-a", SPEC, 2)
    assert _unpinned(pod) == pod_specs.compute(SPEC.compute_image, 2, "nvidia", "nvidia.com/gpu")


def test_the_smoke_spec_runs_once_with_its_script_and_limit() -> None:
    smoke = pod_specs.smoke("img:1", 2, resource="nvidia.com/mig-1g.18gb")
    assert smoke == {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "cuda",
                "image": "img:1",
                "command": ["sh", "-c", SMOKE_SCRIPT],
                "resources": {"limits": {"nvidia.com/mig-1g.18gb": "2"}},
            }
        ],
    }


def test_pod_spec_has_one_container_per_gpu() -> None:
    spec = pod_specs.compute("img:1", 3, "nvidia", "nvidia.com/mig-1g.18gb")
    assert spec["runtimeClassName"] == "nvidia" and spec["restartPolicy"] == "Never"
    script = ["sh", "-c", "nvidia-smi -L; exec /cuda-samples/vectorAdd"]
    assert spec["containers"] == [
        {
            "name": f"vectoradd-{i}",
            "image": "img:1",
            "command": script,
            "resources": {"limits": {"nvidia.com/mig-1g.18gb": "1"}},
        }
        for i in range(3)
    ]
    assert pod_specs.compute("img:1") == {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "vectoradd-0",
                "image": "img:1",
                "command": script,
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }
        ],
    }
    with pytest.raises(ValueError, match="at least one container"):
        pod_specs.compute_container_names(0)
    with pytest.raises(ValueError, match="at least one container"):
        pod_specs.compute("img:2", 0)


def test_no_fleet_compute_pod_without_a_compute_image() -> None:
    with pytest.raises(ValueError, match="no compute image"):
        fleet.compute_pod("gpu-a", fleet.FleetSpec(namespace="gpu-lab", smoke_image="img:1"), 1)


def test_the_dra_smoke_pod_claims_its_gpus_through_a_template_and_asks_for_no_counted_gpu() -> None:
    spec = pod_specs.smoke("img:1", 2, claim_template="gpu-smoke-gpus")
    (container,) = spec["containers"]
    assert container["resources"] == {"claims": [{"name": pod_specs.CLAIM}]}
    assert spec["resourceClaims"] == [
        {"name": pod_specs.CLAIM, "resourceClaimTemplateName": "gpu-smoke-gpus"}
    ]
    request = pod_specs.claim_template("gpu.nvidia.com", 2)["spec"]["devices"]["requests"][0]
    assert request == {
        "name": pod_specs.CLAIM,
        "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2},
    }


def test_the_dra_smoke_pod_waits_behind_its_checks_gate() -> None:
    """Its claim is deleted once it is done, so the check must watch before it may be scheduled."""
    assert pod_specs.smoke("img:1", 1, claim_template="t")["schedulingGates"] == [
        {"name": pod_specs.CLAIM_GATE}
    ]
    assert "schedulingGates" not in pod_specs.smoke("img:1", 1)


def test_the_dra_compute_pod_gives_each_container_its_own_request_of_one_gpu() -> None:
    spec = pod_specs.compute("img:1", 2, claim_template="gpu-compute-gpus")
    assert [c["resources"] for c in spec["containers"]] == [
        {"claims": [{"name": pod_specs.CLAIM, "request": "gpu-0"}]},
        {"claims": [{"name": pod_specs.CLAIM, "request": "gpu-1"}]},
    ]
    assert spec["resourceClaims"] == [
        {"name": pod_specs.CLAIM, "resourceClaimTemplateName": "gpu-compute-gpus"}
    ]
    requests = pod_specs.compute_claim_template("gpu.nvidia.com", 2)["spec"]["devices"]["requests"]
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [("gpu-0", 1), ("gpu-1", 1)]
