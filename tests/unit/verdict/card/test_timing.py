"""gpulab.verdict.card.timing: every measured fact says when; a value from an earlier run is flagged."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from gpulab.verdict.card import timing
from tests.unit.samples import NOW, tflops_fixture


@pytest.mark.parametrize(
    ("measured", "run", "expected"),
    [
        ("2026-12-01T09:00:10+00:00", "2026-12-01T09:00:00+00:00", "current"),
        ("2026-12-01T09:00:00+00:00", "2026-12-01T09:00:00+00:00", "current"),
        ("2026-12-01T08:59:59+00:00", "2026-12-01T09:00:00+00:00", "earlier-run"),
        ("2026-12-01T10:00:00+01:00", "2026-12-01T09:00:01Z", "earlier-run"),
        (None, "2026-12-01T09:00:00+00:00", "unknown"),
        ("2026-12-01T09:00:10+00:00", None, "unknown"),
        ("2026-12-01T09:00:10", "2026-12-01T09:00:00+00:00", "unknown"),  # naive: not trusted
        ("yesterday", "2026-12-01T09:00:00+00:00", "unknown"),
    ],
)
def test_freshness(measured: Any, run: Any, expected: str) -> None:
    assert timing.freshness(measured, run) == expected


def test_one_run_every_fact_is_current(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    groups = c["measurements"]["groups"]
    assert c["measurements"]["runAt"] == sim[o.RUN_AT]
    assert {g: m["freshness"] for g, m in groups.items()} == {
        "host": "current",
        "gate": "current",
        "smoke": "current",
        "compute": "current",
    }
    assert c["cluster"]["allocatableGpus"]["measuredAt"] == sim[o.GATE_MEASURED_AT]
    assert c["smoke"]["phase"]["measuredAt"] == sim[o.SMOKE_MEASURED_AT]
    assert c["host"]["gpuCount"]["measuredAt"] == sim[o.RUN_AT]
    assert c["operator"]["chartVersion"]["freshness"] == "configured"
    assert timing.stale(c["measurements"]) == []
    assert "Not measured in the newest run" not in card.render_markdown(c)


def test_a_no_op_run_flags_the_gate_and_smoke_facts(sim: dict[str, Any]) -> None:
    # `pulumi up` with nothing to change: the program ran (runAt), the gate and smoke did not.
    sim[o.RUN_AT] = "2026-11-30T09:30:00+00:00"
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert timing.stale(c["measurements"]) == ["gate", "smoke", "compute"]
    fact = c["smoke"]["driverVersion"]
    assert fact["freshness"] == "earlier-run" and fact["measuredAt"] == sim[o.SMOKE_MEASURED_AT]
    assert c["host"]["driverVersion"]["freshness"] == "current"
    md = card.render_markdown(c)
    assert "| Phase | Succeeded *(simulated)* | **2026-11-30 07:58:16 UTC (earlier run)** |" in md
    assert (
        "> **Not measured in the newest run (or when is not recorded):** "
        "readiness gate, smoke test, compute check." in md
    )
    assert "`make verify` measures them again" in md


def test_outputs_without_stamps_are_never_current(real: dict[str, Any]) -> None:
    for key in (o.RUN_AT, o.GATE_MEASURED_AT, o.SMOKE_MEASURED_AT):
        del real[key]
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert {m["freshness"] for m in c["measurements"]["groups"].values()} == {"unknown"}
    assert c["cluster"]["allocatableGpus"]["measuredAt"] is None
    assert "**not recorded**" in card.render_markdown(c)


def test_tflops_from_before_the_run_is_an_earlier_runs(real: dict[str, Any]) -> None:
    tf = tflops_fixture()
    c = card.build_card(
        LabOutputs.from_json(real), tflops=tf, now=NOW
    )  # measured 12-01 09:12, after the run 11-29 23:30
    assert c["measuredTflops"]["freshness"] == "current"
    real[o.RUN_AT] = "2026-12-02T06:00:00+00:00"
    c = card.build_card(LabOutputs.from_json(real), tflops=tf, now=NOW)
    assert c["measuredTflops"]["freshness"] == "earlier-run"
    assert "tflops" in timing.stale(c["measurements"])
    assert "**(2026-12-01 09:12:11 UTC (earlier run))**" in card.render_markdown(c)


def test_benchmark_pod_stamp_dates_the_stack_output_tflops(real: dict[str, Any]) -> None:
    real[o.MEASURED_TFLOPS] = {"bf16": 791.4}
    real[o.TFLOPS_MEASURED_AT] = "2026-11-29T23:33:00+00:00"
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert c["measurements"]["groups"]["tflops"]["freshness"] == "current"
    assert c["measuredTflops"]["measuredAt"] == "2026-11-29T23:33:00+00:00"


def test_label() -> None:
    assert timing.label("2026-12-01T10:08:49+01:00", "current") == "2026-12-01 09:08:49 UTC (this run)"
    assert timing.label("2026-12-01T09:08:49Z", "earlier-run") == "2026-12-01 09:08:49 UTC (earlier run)"
    assert timing.label(None, "unknown") == "not recorded"
    assert timing.label(None, "configured") == "configured"
