"""gpulab.tflops.report: a gpulab.tflops document boiled down to the measuredTflops output."""

from __future__ import annotations

import json

from gpulab.tflops import report as tflops_report
from tests.unit.samples import tflops_fixture as load


def test_the_h200_run_keeps_burst_sustained_and_the_reference() -> None:
    """tests/data/tflops/h200-torch-v2.json: a real H200 (tests/data/device-h200/README.md)."""
    out = tflops_report.measured_tflops(load("h200-torch-v2.json"))
    assert sorted(out) == ["bf16", "fp16", "fp32", "tf32"]
    bf16 = out["bf16"]
    assert bf16["tflops"] == 667.9  # the headline is the sustained rate
    assert bf16["burst"] == {
        "tflops": 790.9,
        "smClockMHz": 1980.0,
        "powerW": 120.1,
        "tempC": 39.0,
        "clockEventReasons": [],
    }
    assert bf16["sustained"] == {
        "tflops": 667.9,
        "smClockMHz": 1470.0,
        "powerW": 687.1,
        "tempC": 63.0,
        "clockEventReasons": ["sw-power-cap"],
    }
    ref = bf16["reference"]
    assert (ref["tflops"], ref["smClockMHz"], ref["burstOverReference"], ref["withinTolerance"]) == (
        797.8,
        1980.0,
        0.991,
        True,
    )
    assert ref["dtype"] == "bf16" and ref["products"] == 10 and ref["tolerance"] == 0.03
    assert "reference" not in out["fp32"]
    assert out["fp32"]["burst"]["powerW"] == 662.4  # true FP32 runs long enough for the power to show
    json.dumps(out)


def test_a_v1_document_has_one_rate_per_dtype() -> None:
    out = tflops_report.measured_tflops(load("h200-torch.json"))
    assert out["bf16"] == {"tflops": 578.7, "burst": None, "sustained": None}


def test_odd_documents_give_what_they_have() -> None:
    assert tflops_report.measured_tflops({}) == {}
    assert tflops_report.measured_tflops({"results": {"bf16": None}}) == {
        "bf16": {"tflops": None, "burst": None, "sustained": None}
    }
    doc = {"results": {"bf16": {"tflops": 1.0, "burst": {"tflops": 2.0, "smClockMHz": 1980}}}}
    assert tflops_report.measured_tflops(doc)["bf16"]["burst"]["smClockMHz"] == 1980.0
    assert tflops_report.measured_tflops(doc)["bf16"]["burst"]["powerW"] is None
    assert tflops_report.headline({"tflops": 3}) == 3.0 and tflops_report.headline(4.5) == 4.5
    assert tflops_report.headline(True) is None and tflops_report.headline(None) is None
