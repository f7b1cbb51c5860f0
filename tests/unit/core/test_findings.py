"""The one finding record (gpulab.core.findings): statuses, the names each report reads, equality
across constructors, JSON and the engine line."""

from __future__ import annotations

import dataclasses

import pytest

from gpulab.core.findings import Finding, Status
from gpulab.diagnose import Diagnosis
from gpulab.host import preflight
from gpulab.verdict import checklist
from policy.validators import findings as policy_findings


def test_statuses_are_the_strings_reports_print() -> None:
    assert [s.value for s in Status] == [
        "pass",
        "fail",
        "not-evaluated",
        "not-observable-in-simulation",
        "not-tested",
    ]
    assert Status.PASS == "pass" and f"{Status.NOT_EVALUATED}" == "not-evaluated"


def test_a_status_string_is_converted_and_an_unknown_one_refused() -> None:
    assert Finding("x", "fail", "seen").status is Status.FAIL  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Finding("x", "passed", "seen")  # type: ignore[arg-type]


def test_preflight_constructor_makes_the_record() -> None:
    f = preflight.Finding("nvidia-smi", False, "nvidia-smi not found on PATH", "install the driver")
    assert isinstance(f, Finding)
    assert (f.id, f.status, f.observed, f.fix) == (
        "nvidia-smi",
        Status.FAIL,
        "nvidia-smi not found on PATH",
        "install the driver",
    )
    assert (f.check, f.ok, f.message) == ("nvidia-smi", False, "nvidia-smi not found on PATH")
    assert preflight.Finding("nvidia-smi", True, "ran").ok


def test_diagnosis_constructor_makes_the_record() -> None:
    d = Diagnosis(
        row="allocatable-zero",
        object="node minikube",
        reason="device plugin not registered",
        detail="DaemonSet ready 0/1",
        fix="check the node",
        blocking=False,
        variant="not-registered",
    )
    assert isinstance(d, Finding) and d.status is Status.FAIL
    assert (d.id, d.subject, d.observed, d.evidence) == (
        "allocatable-zero",
        "node minikube",
        "device plugin not registered",
        "DaemonSet ready 0/1",
    )
    assert (d.row, d.object, d.reason, d.detail) == (d.id, d.subject, d.observed, d.evidence)
    assert (d.blocking, d.variant) == (False, "not-registered")


def test_the_checklist_and_the_policies_use_the_record_itself() -> None:
    assert checklist.Item is Finding and policy_findings.Finding is Finding
    f = Finding("smoke-pod-gpu-limit", Status.PASS, "limits 1", "limits >= 1", "set it", "urn:x")
    assert (f.item, f.urn) == ("smoke-pod-gpu-limit", "urn:x")
    assert dataclasses.replace(f, subject="urn:y").urn == "urn:y"


def test_equal_whichever_constructor_made_it() -> None:
    a = preflight.Finding("host-resources", True, "fine")
    b = Finding("host-resources", Status.PASS, "fine")
    assert a == b and b == a and hash(a) == hash(b)
    assert a != Finding("host-resources", Status.FAIL, "fine")
    assert a != "host-resources"


def test_to_json_keeps_the_checklist_keys_and_adds_only_set_extras() -> None:
    item = Finding("driver-version-matches", Status.PASS, "smoke 1, host 1", "equal", "compare", title="T")
    assert item.to_json() == {
        "id": "driver-version-matches",
        "title": "T",
        "status": "pass",
        "observed": "smoke 1, host 1",
        "expected": "equal",
        "fix": "compare",
        "simulated": False,
    }
    assert type(item.to_json()["status"]) is str
    d = Diagnosis("pod-failed", "pod a/b", "Failed", "evidence", "fix", blocking=False, variant="v")
    extra = {k: d.to_json()[k] for k in ("subject", "evidence", "blocking", "variant")}
    assert extra == {"subject": "pod a/b", "evidence": "evidence", "blocking": False, "variant": "v"}


@pytest.mark.parametrize(
    ("status", "line"),
    [
        (Status.FAIL, "[p] observed: o (simulated values); expected: e; first fix: f"),
        (Status.NOT_EVALUATED, "[p] not evaluated: o; expected when known: e"),
        (Status.NOT_OBSERVABLE, "[p] not observable in the simulated lab: o"),
        (Status.NOT_TESTED, "[p] not tested: o"),
    ],
)
def test_report_is_the_engine_line(status: Status, line: str) -> None:
    assert Finding("p", status, "o", "e", "f", simulated=True).report() == line
