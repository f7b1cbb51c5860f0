"""Checklist item ``queue-admits-all-or-nothing`` (gpulab.verdict.items.queues), and the card's
queues row and section (gpulab.verdict.card.model) from the same output."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.findings import Status
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.card.model import build_card
from gpulab.verdict.items import queues

#: The proof's facts as a simulated lab of two GPUs recorded them (make lab, sim-queues).
FACTS: dict[str, Any] = {
    "measuredAt": "2026-12-03T19:59:09Z",
    "namespace": "default",
    "localQueue": "gpu-lab",
    "clusterQueue": "gpu-lab",
    "resource": "nvidia.com/gpu",
    "quota": 2,
    "measuredAllocatable": 2,
    "quotaMatchesAllocatable": True,
    "queueingStrategy": "BestEffortFIFO",
    "jobs": [
        {
            "job": "queue-proof-a",
            "role": "admitted first",
            "gpus": 2,
            "workload": "job-queue-proof-a-1",
            "createdAt": "2026-12-03T19:58:46Z",
            "admittedAt": "2026-12-03T19:58:46Z",
            "finishedAt": "2026-12-03T19:58:55Z",
            "waitedSeconds": 0.0,
            "pending": None,
        },
        {
            "job": "queue-proof-b",
            "role": "waited, then admitted",
            "gpus": 2,
            "workload": "job-queue-proof-b-1",
            "createdAt": "2026-12-03T19:58:46Z",
            "admittedAt": "2026-12-03T19:58:56Z",
            "finishedAt": "2026-12-03T19:59:05Z",
            "waitedSeconds": 10.0,
            "pending": {
                "reason": "Pending",
                "while": "queue-proof-a",
                "message": "couldn't assign flavors to pod "
                "set main: insufficient unused quota for nvidia.com/gpu in flavor gpu-lab-gpu, 2 more needed",
            },
        },
    ],
    "gang": {
        "job": "queue-proof-gang",
        "pods": 3,
        "perPod": 1,
        "total": 3,
        "admitted": False,
        "podsCreated": 0,
        "suspended": True,
        "reason": "Pending",
        "observedSeconds": 24.2,
        "message": "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
        "gpu-lab-gpu, previously considered podsets requests (0) + current podset request (3) > maximum "
        "capacity (2)",
    },
    "unqueuedPod": {
        "pod": "queue-proof-unqueued",
        "queueLabel": False,
        "workload": None,
        "admissionGate": False,
        "phase": "Succeeded",
    },
    "chartVersion": "0.19.0",
    "chartSource": "oci://registry.k8s.io/kueue/charts",
    "controller": "a process of the simulated lab",
    "podsSimulated": True,
}


def _outputs(sim: dict[str, Any], facts: dict[str, Any] | None) -> LabOutputs:
    return LabOutputs.from_json({**sim, o.QUEUES: facts})


def _item(sim: dict[str, Any], facts: dict[str, Any] | None) -> checklist.Item | None:
    return {i.id: i for i in checklist.evaluate(_outputs(sim, facts))}.get(queues.ITEM_ID)


def test_absent_without_the_queue_layer(sim: dict[str, Any]) -> None:
    assert _item(sim, None) is None
    assert queues.ITEM_ID not in {i.id for i in checklist.evaluate(LabOutputs.from_json(sim))}


def test_passes_on_what_the_proof_measured_and_says_what(sim: dict[str, Any]) -> None:
    it = _item(sim, FACTS)
    assert it is not None and it.status == Status.PASS and it.simulated, it
    assert "queue-proof-b waited 10.0 s (Pending: couldn't assign flavors" in it.observed
    assert "queue-proof-gang (3 Pods x 1) never admitted" in it.observed and "gang_scheduling" in it.title


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"quota": 3, "quotaMatchesAllocatable": False}, "not the measured allocatable"),
        ({"gang": {**FACTS["gang"], "podsCreated": 1}}, "admitted in part"),
        ({"unqueuedPod": {**FACTS["unqueuedPod"], "workload": "pod-x"}}, "taken by the queue"),
        ({"jobs": [FACTS["jobs"][0]]}, "not one Job admitted and the other waiting"),
    ],
)
def test_fails_on_anything_the_proof_contradicts(
    sim: dict[str, Any], change: dict[str, Any], said: str
) -> None:
    it = _item(sim, {**copy.deepcopy(FACTS), **change})
    assert it is not None and it.status == Status.FAIL and said in it.observed, it


def test_the_card_turns_the_queues_row_into_measured_evidence(sim: dict[str, Any]) -> None:
    card = build_card(_outputs(sim, FACTS))
    row = next(r for r in card["capabilityBoundary"] if r["capability"].startswith("Queues"))
    assert row["status"].startswith("have, measured (gang_scheduling, CNCF Kubernetes AI Conformance)"), row
    assert (
        "Jobs' Pods simulated" in row["status"]
        and "no priorities, preemption or fair sharing" in row["status"]
    )
    section = card["queues"]
    assert section["quota"]["value"].startswith(
        "2 nvidia.com/gpu in ClusterQueue gpu-lab (measured allocatable 2)"
    )
    assert section["waited"]["value"].startswith("queue-proof-b: 10.0 s, Pending:")
    assert section["quota"]["measuredAt"] == "2026-12-03T19:59:09Z"
    # Without the layer the row stays missing and the section is empty.
    bare = build_card(_outputs(sim, None))
    row = next(r for r in bare["capabilityBoundary"] if r["capability"].startswith("Queues"))
    assert row["status"] == "missing: no governance yet"
    assert bare["queues"]["quota"]["value"] is None


def test_a_failed_proof_leaves_the_row_missing(sim: dict[str, Any]) -> None:
    bad = {**copy.deepcopy(FACTS), "gang": {**FACTS["gang"], "admitted": True}}
    row = next(
        r
        for r in build_card(_outputs(sim, bad))["capabilityBoundary"]
        if r["capability"].startswith("Queues")
    )
    assert row["status"].startswith("missing")
