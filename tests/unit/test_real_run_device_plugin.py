"""Replays the H200 run of ``gpuStack: device-plugin`` (tests/data/device-h200-node/lab-device-plugin,
2026-12-03): NVIDIA's device plugin, GFD and NFD, built from their modules and installed by the
lab's own Helm release, on a real kubelet. Its stack outputs go through the program's typed model,
checklist and card as the run's did; the node as the kubelet and NFD left it goes through the
fleet check's rules; and the second stack that failed there (a found stack reading no replicas)
passes on the same node with the fix (gpulab.kube.fleet ``timeSlicingReplicas``)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpulab.core.outputs import LabOutputs
from gpulab.kube import fleet
from gpulab.verdict import checklist
from gpulab.verdict.card import build_card

RUN = Path(__file__).resolve().parents[2] / "tests" / "data" / "device-h200-node" / "lab-device-plugin"


#: 19:44 UTC: the whole sequence in one run, the negative failing within its bound.
WHOLE = RUN.parent / "lab-device-plugin-whole"


def doc(name: str, run: Path = RUN) -> Any:
    return json.loads((run / name).read_text(encoding="utf-8"))


def outputs(run: Path = RUN) -> LabOutputs:
    return LabOutputs.from_json(doc("lab-existing-outputs-existing.json", run))


@pytest.mark.parametrize("run", [RUN, WHOLE], ids=["15:05", "19:44"])
def test_the_outputs_say_nvidias_chart_served_four_shared_gpus(run: Path) -> None:
    raw = doc("lab-existing-outputs-existing.json", run)
    assert raw["gpuStack"]["mode"] == "device-plugin"
    assert raw["gpuStack"]["devicePlugin"] == ["nvidia-device-plugin/nvidia-device-plugin"]
    assert (raw["chartVersion"], raw["devicePluginOwner"]) == ("0.19.0", "device-plugin-chart")
    assert raw["allocatableGpus"] == 4 and raw["operatorComponents"]["timeSlicingReplicas"] == 4
    (row,) = raw["nodes"]
    assert row["expectedSource"] == "gfd:nvidia.com/gpu.count=1 x nvidia.com/gpu.replicas=4"
    assert (row["gate"], row["smoke"], row["compute"], row["status"]) == ("pass", "pass", "pass", "pass")
    assert raw["smokeDriverVersion"] == raw["hostDriverVersion"] == "580.159.04"
    assert raw["simulated"] is False and raw["simulatedFields"] == []


@pytest.mark.parametrize("run", [RUN, WHOLE], ids=["15:05", "19:44"])
def test_the_checklist_and_card_replay_as_the_run_wrote_them(run: Path) -> None:
    items = {i.id: i.status.value for i in checklist.evaluate(outputs(run))}
    recorded = doc("lab-existing-baseline-card.json", run)
    assert items == {i["id"]: i["status"] for i in recorded["checklist"]["items"]}
    assert checklist.overall(checklist.evaluate(outputs(run))) == recorded["checklist"]["result"] == "pass"
    assert items["pods-see-every-gpu"] == "not-tested"  # time-slicing: replicas are not GPUs
    card = build_card(
        outputs(run),
        tflops=doc("lab-existing-tflops.json", run),
        tool_versions=recorded["toolVersions"],
        now=datetime.fromisoformat(recorded["generatedAt"]),
    )
    assert card["operator"]["gpuStack"]["value"]["mode"] == "device-plugin"
    assert card["cluster"]["allocatableGpus"]["value"] == 4 and card["checklist"]["result"] == "pass"


@pytest.mark.parametrize("run", [RUN, WHOLE], ids=["15:05", "19:44"])
def test_the_real_node_passes_the_gate_rules_on_nvidias_labels(run: Path) -> None:
    """The node as NVIDIA's plugin (allocatable) and GFD through NFD's master (labels) left it."""
    node = doc("node-after-up.json", run)
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200-SHARED"
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    spec = fleet.FleetSpec(namespace="gpu-lab", smoke_image="i:1", installed_in="nvidia-device-plugin")
    exp = fleet.expectation(node, spec)
    assert (exp.count, exp.replicas, exp.pod_gpus) == (4, 4, 1)
    plugin = {"status": {"containerStatuses": [{"ready": True}]}, "metadata": {"name": "p"}}
    assert fleet.gate_node(node, exp, "nvidia.com/gpu", plugin, True, "nvidia-device-plugin").ok


def test_a_stack_finding_that_chart_now_reads_its_replicas() -> None:
    """There the found stack said 1 GPU x 1 replica against allocatable 4 and failed; the fleet
    check now gives the replicas GFD labelled, and the same outputs pass."""
    rows = doc("lab-existing-outputs-existing.json")["nodes"]
    assert fleet._common_replicas(rows) == 4
    found = outputs().with_values(
        operator_components={
            "found": True,
            "dcgmExporter": False,
            "timeSlicingReplicas": fleet._common_replicas(rows),
        }
    )
    items = {i.id: i.status.value for i in checklist.evaluate(found)}
    assert items["allocatable-matches-gpus"] == "pass"
    before = outputs().with_values(operator_components={"found": True, "dcgmExporter": False})
    assert {i.id: i.status.value for i in checklist.evaluate(before)}["allocatable-matches-gpus"] == "fail"


NEG = RUN.parent / "lab-device-plugin-negative"


def test_the_next_run_found_the_chart_and_the_taint_takes_the_plugin_away() -> None:
    """15:23 UTC: the stack finding NVIDIA's chart passed (the replicas fix), and under the
    negative's taint the node advertised 0 with no Pod of the chart on it: the gate's rule names
    that. The run's verify did not fail within its bound (Unschedulable NFD Pods counted as
    progress, fixed since: tests/unit/kube/test_fleet.py); the index says negative: fail."""
    found = json.loads((NEG / "lab-existing-found-baseline-card.json").read_text())
    items = {i["id"]: i["status"] for i in found["checklist"]["items"]}
    assert found["checklist"]["result"] == "pass" and items["allocatable-matches-gpus"] == "pass"
    summary = json.loads((NEG / "summary.json").read_text())
    assert summary["lab"]["found-up"]["rc"] == 0 and summary["lab"]["verify"]["rc"] == 0
    assert summary["lab"]["verify-tainted"]["rc"] == 124  # stopped by the harness, not by the lab
    node = json.loads((NEG / "node-tainted.json").read_text())
    exp = fleet.expectation(node, fleet.FleetSpec(namespace="gpu-lab", smoke_image="i:1"))
    gate = fleet.gate_node(node, exp, "nvidia.com/gpu", None, True, "nvidia-device-plugin")
    assert (
        not gate.ok and gate.cause == "no Pod of the device plugin chart's DaemonSet runs on node gpulab-h200"
    )
    assert "taint" in gate.fix


def test_the_whole_run_failed_its_negative_within_the_bound_and_destroyed() -> None:
    """19:44 UTC, one run: up, the found stack, verify, the taint negative, destroy. The lab's
    verify failed by itself (exit 1, not the harness's 124) within the gate's grace plus the
    Pulumi run around it, with the same cause the fleet rules give on the node as it was; the
    release left nothing of its own behind."""
    lab = doc("summary.json", WHOLE)["lab"]
    assert [lab[k]["rc"] for k in ("up", "found-up", "found-destroy", "verify", "destroy")] == [0] * 5
    neg = lab["negative"]
    assert neg["verifyRc"] == 1 and neg["verifySeconds"] < 60  # gpuGraceSeconds 20, one Pulumi run
    node = doc("node-tainted.json", WHOLE)
    assert node["status"]["allocatable"].get("nvidia.com/gpu", "0") == "0"
    exp = fleet.expectation(node, fleet.FleetSpec(namespace="gpu-lab", smoke_image="i:1"))
    gate = fleet.gate_node(node, exp, "nvidia.com/gpu", None, True, "nvidia-device-plugin")
    said = (WHOLE / "lab-verify-tainted.out").read_text(encoding="utf-8")
    assert not gate.ok and f"first failure: gate: {gate.cause}" in said
    left = doc("leftovers-cluster.json", WHOLE)
    owned = ("namespace", "daemonSets", "deployments", "configMaps", "serviceAccounts", "clusterRoles")
    assert all(left[k] == [] for k in (*owned, "clusterRoleBindings", "nodeFeatures", "nodeLabels"))
    assert left["crds"] == [  # Helm leaves a chart's crds/ (helm.sh docs: "CRDs are never deleted")
        "nodefeaturegroups.nfd.k8s-sigs.io",
        "nodefeaturerules.nfd.k8s-sigs.io",
        "nodefeatures.nfd.k8s-sigs.io",
    ]
