"""gpulab.kube.pod_specs: the smoke and compute Pods are built once, and the per-node fleet check
runs exactly the program's Pods (only pinned to a node, named and labelled for it)."""

from __future__ import annotations

import pytest

from components import compute as compute_component
from components import smoke as smoke_component
from gpulab.kube import fleet, pod_specs
from gpulab.kube.compute import COMPUTE_SCRIPT
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
    assert _unpinned(pod) == smoke_component.pod_spec(SPEC.smoke_image, 8, "nvidia", "nvidia.com/gpu")
    assert pod["metadata"]["namespace"] == "gpu-lab"  # type: ignore[index]


def test_the_fleets_compute_pod_is_the_programs_pinned_to_the_node() -> None:
    assert SPEC.compute_image is not None
    pod = fleet.compute_pod("gpu-a", SPEC, 2)
    assert _unpinned(pod) == compute_component.pod_spec(SPEC.compute_image, "nvidia.com/gpu", "nvidia", 2)


def test_the_specs_run_once_with_their_scripts_and_limits() -> None:
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
    compute = pod_specs.compute("img:2", 2, "nvidia")
    assert compute["runtimeClassName"] == "nvidia" and compute["restartPolicy"] == "Never"
    assert [(c["name"], c["command"][-1], c["resources"]) for c in compute["containers"]] == [
        ("vectoradd-0", COMPUTE_SCRIPT, {"limits": {"nvidia.com/gpu": "1"}}),
        ("vectoradd-1", COMPUTE_SCRIPT, {"limits": {"nvidia.com/gpu": "1"}}),
    ]


def test_no_compute_pod_without_a_compute_image_nor_without_a_gpu() -> None:
    with pytest.raises(ValueError, match="no compute image"):
        fleet.compute_pod("gpu-a", fleet.FleetSpec(namespace="gpu-lab", smoke_image="img:1"), 1)
    with pytest.raises(ValueError, match="at least one container"):
        pod_specs.compute("img:2", 0)
