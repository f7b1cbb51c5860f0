"""Checklist item ``gpu-allocated-through-dra`` (gpulab.verdict.items.dra), and what DRA mode does to
``device-plugin-stable`` and ``allocatable-matches-gpus``."""

from __future__ import annotations

from typing import Any

from gpulab.core import outputs as o
from gpulab.core.findings import Status
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.items import dra


def _dra(match: str | None = "match", simulated: bool = True) -> dict[str, Any]:
    claim = {
        "claim": "gpu-smoke-gpus-x1",
        "podClaim": "gpus",
        "devices": [
            {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n", "device": "gpu-0", "uuid": "GPU-a"}
        ],
        "reservedFor": ["gpu-smoke"],
        "reservedForPod": True,
        "uuidsMatch": match,
    }
    slices = [
        {"node": "n", "pool": "n", "devices": [{"name": "gpu-0", "uuid": "GPU-a"}], "simulated": simulated}
    ]
    return {"deviceClass": "gpu.nvidia.com", "driver": "gpu.nvidia.com", "slices": slices, "claim": claim}


def _items(sim: dict[str, Any], **extra: Any) -> dict[str, checklist.Item]:
    return {i.id: i for i in checklist.evaluate(LabOutputs.from_json({**sim, **extra}))}


def test_only_in_dra_mode(sim: dict[str, Any]) -> None:
    assert dra.ITEM_ID not in _items(sim, **{o.ALLOCATION_PATH: "device-plugin", o.DRA: None})


def test_passes_when_the_claim_was_allocated_reserved_and_seen(sim: dict[str, Any]) -> None:
    it = _items(sim, **{o.ALLOCATION_PATH: "dra", o.DRA: _dra()})[dra.ITEM_ID]
    assert it.status == Status.PASS and it.simulated, it
    assert "n/gpu-0 = GPU-a" in it.observed and "allocation by the real scheduler" in it.observed


def test_fails_when_the_container_did_not_see_the_allocation(sim: dict[str, Any]) -> None:
    it = _items(sim, **{o.ALLOCATION_PATH: "dra", o.DRA: _dra(match=None)})[dra.ITEM_ID]
    assert it.status == Status.FAIL and "no claim allocated, reserved and seen" in it.observed


def test_dra_mode_has_no_device_plugin_and_counts_the_slices_devices(sim: dict[str, Any]) -> None:
    items = _items(sim, **{o.ALLOCATION_PATH: "dra", o.DRA: _dra()})
    assert items["device-plugin-stable"].status == Status.NOT_TESTED
    assert "no device plugin runs" in items["device-plugin-stable"].observed
    assert "ResourceSlice GPU devices" in items["allocatable-matches-gpus"].observed
