"""The components read what each check printed through its record (gpulab.kube.results): a check
whose JSON has the wrong shape fails the run naming every bad key, never exports a wrong value."""

from __future__ import annotations

import json

import pytest

from tests.unit.program_harness import MINIKUBE, fake_stdout, run_program

pytestmark = pytest.mark.usefixtures("no_host_tools")


def test_a_check_that_prints_a_wrong_shape_fails_naming_each_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit import program_harness

    real = program_harness.fake_stdout

    def stdout(purpose: str, gpus: int = 1) -> str:
        if purpose != "smoke-check":
            return real(purpose, gpus)
        return json.dumps({**json.loads(real(purpose, gpus)), "smokeEvents": "Scheduled", "smokeNode": 3})

    monkeypatch.setattr(program_harness, "fake_stdout", stdout)
    with pytest.raises(ValueError) as err:  # raised by the smoke check's output, as it resolves
        run_program(MINIKUBE)
    text = str(err.value)
    assert "gpulab.kube smoke printed a result of the wrong shape (2 key(s))" in text
    assert "smokeEvents: expected a list of strings or null, got 'Scheduled' (str)" in text
    assert "smokeNode: expected a string or null, got 3 (int)" in text


def test_the_checks_records_reach_the_outputs_unchanged() -> None:
    run = run_program(MINIKUBE)
    assert run.error is None, run.error
    smoke = json.loads(fake_stdout("smoke-check"))
    gate = json.loads(fake_stdout("operator-gate"))
    assert (
        run.outputs["smokeEvents"] == smoke["smokeEvents"] and run.outputs["smokeNode"] == smoke["smokeNode"]
    )
    assert run.outputs["smokeMeasuredAt"] == smoke["measuredAt"]
    assert run.outputs["allocatableGpus"] == gate["allocatableGpus"]
    assert run.outputs["devicePluginPods"] == gate["devicePluginPods"]
    # A key the check did not print reads as None (the harness's gate prints no migResources).
    assert run.outputs["migResources"] is None and run.outputs["smokeGpuUuids"] is None
