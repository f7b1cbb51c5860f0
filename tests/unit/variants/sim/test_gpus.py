"""variants.sim.ctl.gpus: what the simulated node advertises, as NVIDIA's device plugin and
GFD would for its GPUs (0 GPUs, time-slicing, MIG single and mixed)."""

from __future__ import annotations

import pytest

from variants.sim.ctl import render
from variants.sim.ctl.gpus import NodeGpus

MIG7 = (("1g.18gb", 7),)


def test_whole_gpus_times_replicas() -> None:
    assert NodeGpus(1).resources() == {"nvidia.com/gpu": "1"}
    shared = NodeGpus(2, replicas=4)
    assert shared.resources() == {"nvidia.com/gpu": "8"}
    assert shared.labels("NVIDIA-H200")["nvidia.com/gpu.product"] == "NVIDIA-H200-SHARED"
    assert shared.labels("NVIDIA-H200")["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert NodeGpus(2).labels("NVIDIA-H200")["nvidia.com/gpu.sharing-strategy"] == "none"


def test_zero_gpus_advertise_no_key_at_all() -> None:
    """A device plugin that never registered (NVIDIA/k8s-device-plugin#834)."""
    none = NodeGpus(0)
    assert none.resources() == {} and none.stale() == {"nvidia.com/gpu": None, "nvidia.com/gpu.shared": None}
    assert none.advertised_by({"cpu": "16", "pods": "110"})
    assert not none.advertised_by({"cpu": "16", "nvidia.com/gpu": "1"})


def test_mixed_advertises_each_profile_and_gpu_zero_with_gfds_labels() -> None:
    mixed = NodeGpus(1, mig=MIG7, strategy="mixed")
    assert mixed.resources() == {"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7"}
    labels = mixed.labels("NVIDIA-H200")
    assert labels["nvidia.com/mig.strategy"] == "mixed" and labels["nvidia.com/mig.capable"] == "true"
    assert labels["nvidia.com/mig-1g.18gb.count"] == "7"
    assert labels["nvidia.com/mig-1g.18gb.product"] == "NVIDIA-H200-MIG-1g.18gb"
    assert labels["nvidia.com/mig-1g.18gb.slices.gi"] == "1" and labels["nvidia.com/gpu.count"] == "1"
    assert mixed.advertised_by({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7", "cpu": "16"})
    assert not mixed.advertised_by({"nvidia.com/gpu": "0"})


def test_single_advertises_the_mig_devices_as_gpus() -> None:
    single = NodeGpus(1, mig=MIG7, strategy="single")
    assert single.resources() == {"nvidia.com/gpu": "7"}
    assert single.labels("NVIDIA-H200")["nvidia.com/gpu.product"] == "NVIDIA-H200-MIG-1g.18gb"


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        NodeGpus(9)
    with pytest.raises(ValueError):
        NodeGpus(1, strategy="half")


def test_the_node_manifest_carries_what_the_node_advertises() -> None:
    info = render.parse_capture(render.load_capture(0))  # the host still has its GPU
    bare = render.render_node_manifest("gpu-sim-node", 0, info, NodeGpus(0))
    assert "nvidia.com/gpu" not in bare["status"]["allocatable"]
    assert bare["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "true"
    mig = render.render_node_manifest("gpu-sim-node", 1, info, NodeGpus(1, mig=MIG7, strategy="mixed"))
    assert mig["status"]["capacity"]["nvidia.com/mig-1g.18gb"] == "7"
    assert render.load_capture(1, "h200-1gpu-mig").count("MIG 1g.18gb") == 0  # the table, not -L
    with pytest.raises(ValueError):
        render.load_capture(1, "../etc")
