"""allocatable-matches-gpus under MIG (gpulab.verdict.items.mig), from a sim lab's outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist

DATA = Path(__file__).resolve().parents[3] / "data" / "outputs"


def outputs(**change: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((DATA / "sim-h200-1gpu.json").read_text())
    # What the sim-mig stack exports: one MIG-enabled H200 as seven 1g.18gb devices.
    doc.update(
        {
            o.MIG_STRATEGY: "mixed",
            o.ALLOCATABLE_GPUS: 0,
            o.CAPACITY_GPUS: 0,
            o.MIG_RESOURCES: {"nvidia.com/mig-1g.18gb": 7},
            o.EXPECTED_MIG_RESOURCES: {"nvidia.com/mig-1g.18gb": 7},
            o.SMOKE_RESOURCE: "nvidia.com/mig-1g.18gb",
        }
    )
    doc.update(change)
    return doc


def item(doc: dict[str, Any]) -> checklist.Item:
    return next(
        i for i in checklist.evaluate(LabOutputs.from_json(doc)) if i.id == "allocatable-matches-gpus"
    )


def test_mixed_passes_on_the_mig_devices_never_as_zero_gpus() -> None:
    i = item(outputs())
    assert i.status == "pass" and "nvidia.com/mig-1g.18gb=7" in i.observed and i.simulated
    assert "MIG" in i.title


def test_mixed_with_fewer_devices_fails() -> None:
    assert item(outputs(**{o.MIG_RESOURCES: {"nvidia.com/mig-1g.18gb": 6}})).status == "fail"
    assert item(outputs(**{o.MIG_RESOURCES: {}})).status == "fail"


def test_mixed_with_an_unknown_expectation_needs_some_mig_device() -> None:
    assert item(outputs(**{o.EXPECTED_MIG_RESOURCES: None})).status == "pass"


def test_single_compares_gpus_with_the_mig_devices() -> None:
    single = outputs(**{o.MIG_STRATEGY: "single", o.ALLOCATABLE_GPUS: 7, o.MIG_RESOURCES: {}})
    single[o.EXPECTED_MIG_RESOURCES] = {"nvidia.com/gpu": 7}
    assert item(single).status == "pass"
    single[o.ALLOCATABLE_GPUS] = 1
    assert item(single).status == "fail"


def test_none_or_an_older_lab_keeps_the_gpu_rule() -> None:
    doc = json.loads((DATA / "sim-h200-1gpu.json").read_text())
    assert o.MIG_STRATEGY not in doc and item(doc).status == "pass"
    assert item({**doc, o.MIG_STRATEGY: "none"}).title.startswith("Allocatable nvidia.com/gpu")


def test_preview_is_not_evaluated() -> None:
    assert item(outputs(**{o.MIG_RESOURCES: checklist.UNKNOWN})).status == "not-evaluated"
