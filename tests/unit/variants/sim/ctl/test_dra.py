"""variants.sim.ctl.dra: the simulated lab's ResourceSlice, as NVIDIA's GPU kubelet plugin
publishes it (tests/contract/test_dra_driver.py holds it against the plugin's sources)."""

from __future__ import annotations

import pytest

from gpulab.core import names
from variants.sim.ctl import dra
from variants.sim.ctl.cluster import UpOptions
from variants.sim.ctl.render import capture_listing


def test_the_slice_lists_the_captures_gpus_by_minor_with_their_uuids() -> None:
    gpus = dra.listed_gpus("\n".join(capture_listing("h200-2gpu")))
    assert [(m, u) for m, _, u in gpus] == [
        (0, "GPU-00000000-0000-4000-8000-000000000000"),
        (1, "GPU-00000001-0000-4000-8000-000000000001"),
    ]
    doc = dra.resource_slice("gpu-sim-node", gpus, "580.159.04", "13.0", 143771)
    assert doc["apiVersion"] == "resource.k8s.io/v1" and doc["kind"] == "ResourceSlice"
    spec = doc["spec"]
    assert (spec["driver"], spec["nodeName"], spec["pool"]["name"]) == (
        "gpu.nvidia.com",
        "gpu-sim-node",
        "gpu-sim-node",
    )
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]
    first = spec["devices"][0]
    assert first["attributes"]["type"] == {"string": "gpu"}
    assert first["attributes"]["uuid"] == {"string": "GPU-00000000-0000-4000-8000-000000000000"}
    assert first["attributes"]["productName"] == {"string": "NVIDIA H200"}
    assert first["attributes"]["driverVersion"] == {"version": "580.159.4"}
    assert first["attributes"]["cudaDriverVersion"] == {"version": "13.0.0"}
    assert first["capacity"] == {"memory": {"value": "143771Mi"}}
    # Published by the sim, never read as measured.
    assert doc["metadata"]["labels"][names.SIMULATED_ANNOTATION] == "true"
    assert doc["metadata"]["annotations"][names.SIMULATED_ANNOTATION] == "true"


def test_mig_lines_are_not_gpus_and_bad_input_is_refused() -> None:
    listing = "GPU 0: NVIDIA H200 (UUID: GPU-a)\n  MIG 1g.18gb     Device  0: (UUID: MIG-b)\n"
    assert dra.listed_gpus(listing) == [(0, "NVIDIA H200", "GPU-a")]
    with pytest.raises(ValueError, match="no GPU"):
        dra.resource_slice("n", [], "1.0", "1.0", None)
    with pytest.raises(ValueError, match="not a version"):
        dra.semver("580.x")


def test_dra_nodes_advertise_no_counted_gpu(tmp_path) -> None:  # type: ignore[no-untyped-def]
    opts = UpOptions(name="lab", workdir=tmp_path, gpus=2, dra=True)
    assert opts.node_gpus.resources() == {}
    with pytest.raises(ValueError, match="--dra publishes whole GPUs"):
        UpOptions(name="lab", workdir=tmp_path, gpus=2, dra=True, replicas=4)
