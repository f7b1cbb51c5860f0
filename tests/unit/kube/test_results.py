"""gpulab.kube.results: each check's record round-trips its JSON, and a wrong shape is named.

The recorded real runs (tests/data/device-h200-node) are what the checks printed on a real node:
each reads back through its record, and printing the record gives the same keys and values.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from gpulab.kube import results as r

UUID = "GPU-00000000-0000-4000-8000-000000000000"
AT = "2026-12-01T22:11:21+00:00"

#: One record of each check, every field set as the check sets it.
SAMPLES: dict[type[r.CheckRecord], r.CheckRecord] = {
    r.GateResult: r.GateResult(
        gpu_resource="nvidia.com/gpu",
        allocatable_gpus=1,
        capacity_gpus=1,
        mig_resources={},
        cluster_policy_state="ready",
        device_plugin_pods=[
            {"name": "p", "phase": "Running", "ready": True, "restarts": 0, "simulated": False}
        ],
        kubernetes_version="v1.36.3",
        measured_at=AT,
    ),
    r.FleetResult: r.FleetResult(
        gpu_resource="nvidia.com/gpu",
        allocatable_gpus=8,
        capacity_gpus=8,
        mig_resources={},
        cluster_policy_state="ready",
        device_plugin_pods=[],
        kubernetes_version="v1.36.3",
        measured_at=AT,
        nodes=[{"node": "gpu-a", "status": "pass"}],
        nodes_summary="1 node, 8 GPUs: 8 allocatable; every node passed",
        nodes_passed=1,
        expected_gpus=8,
        time_slicing_replicas=1,
        device_plugin_found=["kube-system/nvidia-device-plugin"],
    ),
    r.DraGateResult: r.DraGateResult(
        dra_slices=[
            {"node": "n1", "pool": "n1", "devices": [{"name": "gpu-0", "uuid": UUID}], "simulated": False}
        ],
        allocatable_gpus=1,
        device_class="gpu.nvidia.com",
        kubernetes_version="v1.36.3",
        measured_at=AT,
    ),
    r.SmokeResult: r.SmokeResult(
        smoke_phase="Succeeded",
        smoke_driver_version="580.159.04",
        smoke_cuda_version="13.0",
        smoke_events=["Scheduled", "Pulled"],
        smoke_node="n1",
        smoke_gpu_uuids=[UUID],
        smoke_log_simulated=False,
        smoke_started_at=AT,
        measured_at=AT,
        smoke_claim={"claim": "gpu-smoke-gpus-x", "uuidsMatch": "match"},
    ),
    r.ComputeResult: r.ComputeResult(
        compute_phase="Succeeded",
        compute_result="passed",
        compute_gpus=1,
        compute_gpu_uuids={"vectoradd-0": {"gpus": [UUID], "mig": []}},
        compute_node="n1",
        compute_log_simulated=False,
        compute_started_at=AT,
        measured_at=AT,
    ),
    r.DcgmResult: r.DcgmResult(dcgm_metrics={"scrapes": 6, "gpus": {}, "error": None}, measured_at=AT),
    r.BenchmarkResult: r.BenchmarkResult.from_json(
        {
            "schema": "gpulab.dev/tflops/v2",
            "gpu": "NVIDIA H200",
            "results": {"bf16": {"tflops": 667.9}},
            "measuredAt": AT,
        }
    ),
    r.AccessResult: r.AccessResult(namespace="gpu-lab", allowed=["list nodes (cluster-wide)"]),
    r.QueueProofResult: r.QueueProofResult(
        measured_at="2026-12-01T22:11:21Z",
        namespace="default",
        local_queue="gpu-lab",
        cluster_queue="gpu-lab",
        resource="nvidia.com/gpu",
        quota=1,
        measured_allocatable=1,
        quota_matches_allocatable=True,
        queueing_strategy="BestEffortFIFO",
        jobs=[{"job": "queue-proof-a", "waitedSeconds": None}],
        gang={"job": "queue-proof-gang", "admitted": False},
        unqueued_pod={"pod": "queue-proof-unqueued", "workload": None},
    ),
    r.QueueCensusResult: r.QueueCensusResult(leftovers=[]),
    r.QueueSweepResult: r.QueueSweepResult(deleted=["kueue-batch-admin-role"]),
    r.PingResult: r.PingResult(
        kubernetes_version="v1.36.3", kube_system_uid="3f6c0a52-0000-4000-8000-000000000000"
    ),
}


def _records() -> list[type[r.CheckRecord]]:
    """Every record class of the module."""
    return [
        v
        for v in vars(r).values()
        if isinstance(v, type) and issubclass(v, r.CheckRecord) and v is not r.CheckRecord
    ]


def test_every_record_has_a_sample_and_names_its_command() -> None:
    assert set(_records()) == set(SAMPLES)
    commands = [cls.COMMAND for cls in SAMPLES]
    assert len(set(commands)) == len(commands) and all(c.startswith("gpulab.kube ") for c in commands)


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_a_record_round_trips_through_the_json_the_command_prints(cls: type[r.CheckRecord]) -> None:
    sample = SAMPLES[cls]
    printed = json.dumps(sample.to_json(), sort_keys=True)
    again = cls.from_stdout(f"[gpulab] progress on stdout's earlier lines\n{printed}\n")
    assert again == sample and json.dumps(again.to_json(), sort_keys=True) == printed
    # Every field was set, so every key is printed and none is null.
    assert None not in json.loads(printed).values()


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_a_wrong_shape_is_named_key_by_key(cls: type[r.CheckRecord]) -> None:
    doc = SAMPLES[cls].to_json()
    # Each value replaced by one of another JSON type: a string where a list or number was, a
    # list where a string or object was.
    bad = {k: ["x"] if isinstance(v, (str, dict)) else "x" for k, v in doc.items() if k in _keys(cls)}
    with pytest.raises(r.CheckResultError) as err:
        cls.from_json({**doc, **bad})
    assert err.value.command == cls.COMMAND
    assert [p.split(":")[0] for p in err.value.problems] == list(bad)
    assert str(err.value).startswith(f"{cls.COMMAND} printed a result of the wrong shape ({len(bad)} key(s))")


def _keys(cls: type[r.CheckRecord]) -> list[str]:
    return [r.camel(f.name) for f in fields(cls) if not f.metadata.get("not_a_key")]


def test_the_error_says_what_was_expected_and_what_came() -> None:
    with pytest.raises(r.CheckResultError) as err:
        r.GateResult.from_json(
            {
                "allocatableGpus": True,
                "migResources": {"nvidia.com/mig-1g.18gb": "7"},
                "gpuResource": "nvidia.com/gpu",
            }
        )
    assert err.value.problems == (
        "allocatableGpus: expected an integer or null, got True (bool)",
        "migResources: expected an object of integers or null, got {'nvidia.com/mig-1g.18gb': '7'} (dict)",
    )
    with pytest.raises(r.CheckResultError, match=r"<document>: expected an object, got \[1\] \(list\)"):
        r.SmokeResult.from_json([1])
    with pytest.raises(
        r.CheckResultError, match=r"(?s)gpulab.kube compute printed .*<last stdout line>: not JSON"
    ):
        r.ComputeResult.from_stdout("Test PASSED\n")


def test_absent_keys_read_as_none_and_unknown_keys_are_ignored() -> None:
    got = r.SmokeResult.from_json({"smokePhase": "Succeeded", "smokeSomethingNewer": 1})
    assert got == r.SmokeResult(smoke_phase="Succeeded")
    assert r.GateResult.from_stdout("") == r.GateResult()  # printed nothing: every field None


def test_the_claim_is_printed_only_on_the_dra_path() -> None:
    plain = r.SmokeResult(smoke_phase="Succeeded")
    assert "smokeClaim" not in plain.to_json() and plain.to_json()["smokeNode"] is None
    assert SAMPLES[r.SmokeResult].to_json()["smokeClaim"] == {
        "claim": "gpu-smoke-gpus-x",
        "uuidsMatch": "match",
    }


def test_the_benchmark_document_is_kept_whole() -> None:
    doc = json.loads((Path(__file__).parents[2] / "data" / "tflops" / "h200-torch-v2.json").read_text())
    got = r.BenchmarkResult.from_json(doc)
    assert got.to_json() == doc and got.measured_at == doc["measuredAt"] and got.results == doc["results"]
    with pytest.raises(r.CheckResultError, match="results: expected an object or null"):
        r.BenchmarkResult.from_json({**doc, "results": [1]})


RECORDED = Path(__file__).parents[2] / "data" / "device-h200-node"
#: The recorded files of each check (hack/node's run.sh names them).
BY_FILE: dict[str, type[r.CheckRecord]] = {
    "gate": r.GateResult,
    "smoke-check": r.SmokeResult,
    "compute-check": r.ComputeResult,
    "fleet": r.FleetResult,
    "access": r.AccessResult,
}


def _recorded() -> list[tuple[Path, type[r.CheckRecord]]]:
    found = [
        (p, BY_FILE[p.stem])
        for p in sorted(RECORDED.glob("*/*.stdout"))
        if p.stem in BY_FILE and p.read_text().strip()
    ]
    assert len(found) >= 8, found
    return found


@pytest.mark.parametrize(
    "path, cls", _recorded(), ids=lambda v: v.parent.name + "/" + v.name if isinstance(v, Path) else ""
)
def test_what_a_real_node_printed_reads_back_and_prints_the_same(
    path: Path, cls: type[r.CheckRecord]
) -> None:
    text = path.read_text()
    raw = json.loads(text.strip().splitlines()[-1])
    printed = cls.from_stdout(text).to_json()
    # Every recorded key is printed again with its value; a key this version adds is null there.
    assert {k: printed[k] for k in raw} == raw
    assert all(printed[k] is None for k in set(printed) - set(raw)), path


def test_the_newest_recordings_have_every_key_of_their_record() -> None:
    """The fleet run (hack/node run.sh fleet) printed every key of these records but the
    fleet's ``timeSlicingReplicas``, which came later, and the smoke's ``smokeClaim`` (the DRA
    path's only)."""
    for name in ("smoke-check", "compute-check", "access"):
        raw: dict[str, Any] = json.loads((RECORDED / "fleet" / f"{name}.stdout").read_text())
        assert set(raw) == set(_keys(BY_FILE[name])) - {"smokeClaim"}, name  # DRA's only
    fleet = json.loads((RECORDED / "fleet" / "fleet.stdout").read_text())
    assert set(_keys(r.FleetResult)) - set(fleet) == {"timeSlicingReplicas"}
