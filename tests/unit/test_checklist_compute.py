"""Checklist item ``compute-works`` and the overall verdict it feeds (hand-written fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpulab import checklist
from gpulab import outputs as o
from gpulab.checklist import UNKNOWN

DATA = Path(__file__).resolve().parents[1] / "data" / "outputs"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text())
    return data


def compute_item(outputs: dict[str, Any]) -> checklist.Item:
    return {i.id: i for i in checklist.evaluate(outputs)}["compute-works"]


def test_a_gpu_lab_whose_kernel_passed_passes() -> None:
    real = load("minikube-h200-1gpu.json")
    item = compute_item(real)
    assert item.status == "pass" and not item.simulated
    assert item.observed == "compute Pod Succeeded, result passed"
    assert "Test PASSED" in item.title and "Test PASSED" in item.expected
    assert checklist.overall(checklist.evaluate(real)) == "pass"


@pytest.mark.parametrize(
    ("result", "phase"), [("failed", "Failed"), ("failed", "Succeeded"), ("passed", "Running")]
)
def test_a_failed_or_unfinished_kernel_fails(result: str, phase: str) -> None:
    real = load("minikube-h200-1gpu.json")
    real[o.COMPUTE_RESULT], real[o.COMPUTE_PHASE] = result, phase
    item = compute_item(real)
    assert item.status == "fail" and "kubectl logs gpu-compute" in item.fix
    assert checklist.overall(checklist.evaluate(real)) == "fail"


def test_compute_check_off_is_not_tested_and_the_verdict_says_so() -> None:
    real = load("minikube-h200-1gpu.json")
    real.update({o.COMPUTE_RESULT: "not-tested", o.COMPUTE_PHASE: None, o.COMPUTE_MEASURED_AT: None})
    items = checklist.evaluate(real)
    item = {i.id: i for i in items}["compute-works"]
    assert item.status == "not-tested" and "computeCheck is off" in item.observed
    assert "computeCheck true" in item.fix
    # Every other item passes, and still no "pass": no GPU was shown doing work.
    assert checklist.overall(items) == "compute not tested"
    assert checklist.exit_code(items) == 1


def test_outputs_of_a_lab_without_the_compute_check_are_not_tested() -> None:
    real = load("minikube-h200-1gpu.json")
    for key in (o.COMPUTE_RESULT, o.COMPUTE_PHASE, o.COMPUTE_IMAGE, o.COMPUTE_MEASURED_AT):
        del real[key]
    item = compute_item(real)
    assert item.status == "not-tested" and "deployed without it" in item.observed
    assert checklist.overall(checklist.evaluate(real)) == "compute not tested"


def test_the_simulated_lab_is_not_observable_and_keeps_its_verdict() -> None:
    sim = load("sim-h200-1gpu.json")
    items = checklist.evaluate(sim)
    item = {i.id: i for i in items}["compute-works"]
    assert item.status == "not-observable-in-simulation" and item.simulated
    assert "not observable in simulation" in item.observed
    assert checklist.overall(items) == "pass" and checklist.exit_code(items) == 0


def test_a_simulated_lab_with_the_check_off_is_not_tested() -> None:
    sim = load("sim-h200-1gpu.json")
    sim[o.COMPUTE_RESULT] = "not-tested"
    assert compute_item(sim).status == "not-tested"
    assert checklist.overall(checklist.evaluate(sim)) == "compute not tested"


def test_before_deployment_it_is_not_evaluated() -> None:
    real = load("minikube-h200-1gpu.json")
    real[o.COMPUTE_RESULT] = UNKNOWN
    assert compute_item(real).status == "not-evaluated"
    assert compute_item({}).status == "not-evaluated"


def test_the_verdict_needs_a_compute_item_that_passed() -> None:
    real = load("minikube-h200-1gpu.json")
    others = [i for i in checklist.evaluate(real) if i.id != "compute-works"]
    assert checklist.overall(others) == "compute not tested"
