"""Replays the H200 run of ``gpuStack: dra`` (tests/data/device-h200-node/lab-dra, 2026-12-03):
NVIDIA's DRA driver v0.5.0 (its GPU kubelet plugin built from the module, its chart installed by
the lab's Helm release) on a real kubelet. The stack outputs go through the typed model,
checklist and card as the run's did; the slice, the claim and the Pods' nvidia-smi name one GPU,
the host's."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.card import build_card

RUN = Path(__file__).resolve().parents[2] / "tests" / "data" / "device-h200-node" / "lab-dra"


def doc(name: str) -> Any:
    return json.loads((RUN / name).read_text(encoding="utf-8"))


def test_the_claim_gave_the_pod_the_gpu_the_slice_published() -> None:
    raw = doc("lab-existing-outputs-existing.json")
    assert raw["allocationPath"] == "dra" and raw["simulated"] is False
    (slice_,) = raw["dra"]["slices"]
    (device,) = slice_["devices"]
    assert (slice_["node"], device["productName"], slice_["simulated"]) == (
        "gpulab-h200",
        "NVIDIA H200",
        False,
    )
    claim = raw["dra"]["claim"]
    (allocated,) = claim["devices"]
    assert (allocated["driver"], allocated["device"]) == ("gpu.nvidia.com", device["name"])
    assert claim["reservedFor"] == ["gpu-smoke"] and claim["reservedForPod"] is True
    host = (RUN / "cmd-host-nvidia-smi-L.out").read_text(encoding="utf-8")
    smoke = (RUN / "pod-default-gpu-smoke.log").read_text(encoding="utf-8")
    assert device["uuid"] == allocated["uuid"] == raw["smokeGpuUuids"][0]
    assert f"(UUID: {device['uuid']})" in host and f"(UUID: {device['uuid']})" in smoke
    assert "Driver Version: 580.159.04" in smoke


def test_the_checklist_and_card_replay_as_the_run_wrote_them() -> None:
    outputs = LabOutputs.from_json(doc("lab-existing-outputs-existing.json"))
    recorded = doc("lab-existing-baseline-card.json")
    items = {i.id: i.status.value for i in checklist.evaluate(outputs)}
    assert items == {i["id"]: i["status"] for i in recorded["checklist"]["items"]}
    assert checklist.overall(checklist.evaluate(outputs)) == recorded["checklist"]["result"] == "pass"
    card = build_card(
        outputs,
        tflops=doc("lab-existing-tflops.json"),
        tool_versions=recorded["toolVersions"],
        now=datetime.fromisoformat(recorded["generatedAt"]),
    )
    assert card["checklist"]["result"] == "pass"
    assert json.dumps(card, sort_keys=True, default=str).count('"dra"') >= 1


def test_the_runs_verify_failed_on_the_gate_it_did_not_know() -> None:
    """scripts/lab verify exited 2 there; ops.verify now takes the DRA gate as the gate."""
    lab = doc("summary.json")["lab"]
    assert (lab["up"]["rc"], lab["verify"]["rc"], lab["destroy"]["rc"]) == (0, 2, 0)
    assert "the stack has no gate resource" in (RUN / "lab-verify.out").read_text(encoding="utf-8")
