"""The found-stack run on the lent H200 (tests/data/device-h200-node/fleet), replayed through the lab.

``run.sh fleet`` (hack/node/README.md) rendered the ``existing`` variant with
``gpuStack: found`` (no Helm release; the node's pool ``h200`` of 1 GPU in ``nodePoolGpus``,
as no GPU Feature Discovery runs there) and ran, on a real kubelet with the project's device
plugin, the lab's access check, its fleet check (the per-node gate, a smoke and a compute Pod
pinned to the node) and the chapter's single smoke and compute Pods, then the negative (the
plugin reports the GPU unhealthy: the fleet check must fail naming the node). These tests read
what it recorded with the lab's own parsers and rules, and replay the program on it
(hack/node/replay.py). GPU UUIDs are placeholders (hack/node/record.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpulab.host import nvsmi
from gpulab.kube import access, fleet, smoke_gpus
from gpulab.kube import compute as kube_compute
from tests.unit.test_device_node import load_replay

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "device-h200-node" / "fleet"
PLACEHOLDER = "GPU-00000000-0000-4000-8000-000000000000"
NODE = "gpulab-h200"
SPEC = fleet.FleetSpec(
    namespace="gpu-lab",
    smoke_image="gpulab.local/node-smoke:1",
    pool_label="gpulab.dev/node-pool",
    pool_gpus={"h200": 1},
)


def text(name: str) -> str:
    return (RUN / name).read_text()


def doc(name: str) -> Any:
    return json.loads(text(name))


def host() -> nvsmi.GpuInfo:
    """The host's one GPU from ``nvidia-smi --query-gpu`` as recorded (``cmd-*.out``)."""
    out = text("cmd-host-query-gpu.out").split("# rc=0\n", 1)[1].split("\n# stderr:", 1)[0]
    (gpu,) = nvsmi.parse_query_csv(out)
    return gpu


def test_the_commands_ran_as_the_program_renders_them() -> None:
    rendered = doc("rendered.json")["fleet"]
    assert rendered["positive"]["config"]["gpuStack"] == "found"
    summary = doc("summary.json")
    assert summary["mode"] == "fleet" and summary["ok"] is True
    ran = [json.loads(line) for line in text("commands.jsonl").splitlines()]
    lab = [c["argv"][3:] for c in ran if c.get("argv", [None])[1:3] == ["-m", "gpulab.kube"]]
    # The fleet check's argv unchanged (no gateArgvChanges in this mode), the negative's with its grace.
    assert lab == [
        rendered["positive"]["access"],
        rendered["positive"]["fleet"],
        rendered["positive"]["smoke"]["check"],
        rendered["positive"]["compute"]["check"],
        rendered["negative"]["fleet"],
    ]
    assert "--pool-gpus" in rendered["positive"]["fleet"] and "h200=1" in rendered["positive"]["fleet"]
    # The access check asked for every permission the lab needs, and had them (the admin's context).
    assert summary["access"]["rc"] == 0
    assert doc("access.stdout")["allowed"] == [p.describe() for p in access.required("gpu-lab")]


def test_the_node_row_passed_on_the_real_node() -> None:
    out = doc("fleet.stdout")
    (row,) = out["nodes"]
    gpu = host()
    assert (row["node"], row["expected"], row["expectedSource"], row["allocatable"], row["capacity"]) == (
        NODE,
        1,
        "config:nodePoolGpus[h200]=1",
        1,
        1,
    )
    assert [row[k] for k in ("gate", "smoke", "compute", "status")] == ["pass"] * 4
    assert row["dcgm"] == "not-tested" and row["simulated"] is False and row["firstFailure"] is None
    # The smoke Pod pinned to the node printed the host's driver and the host's one GPU.
    assert row["driverVersion"] == gpu.driver_version == "580.159.04"
    assert row["smokeGpuUuids"] == [gpu.uuid] == [PLACEHOLDER] and row["computeGpus"] == 1
    assert out["nodesSummary"] == "1 node, 1 GPUs: 1 allocatable; every node passed" == fleet.summary([row])
    # The found plugin, by its labels: the harness's DaemonSet, its Pod on the node; no operator.
    assert out["devicePluginFound"] == ["kube-system/gpulab-device-plugin"]
    (plugin,) = out["devicePluginPods"]
    assert plugin["node"] == NODE and plugin["ready"] and plugin["restarts"] == 0 and not plugin["simulated"]
    assert out["clusterPolicyState"] is None and out["kubernetesVersion"] == "v1.36.3"
    # The lab's own rules on the recorded node say the same: expected from config, gate passes.
    node = doc("node-with-gpu.json")
    exp = fleet.expectation(node, SPEC)
    assert exp == fleet.Expectation(1, "config:nodePoolGpus[h200]=1")
    assert fleet.is_gpu_node(node, SPEC) and fleet.gate_node(node, exp, SPEC.resource, None, False).ok


def test_the_found_plugin_was_read_never_changed() -> None:
    """Found by the device plugin chart's label the fleet check looks for; the same DaemonSet
    (uid, generation), Pods and restarts before and after the check and after the lab's
    namespace was deleted."""
    summary = doc("summary.json")
    labels = summary["pluginLabels"]
    assert f"app.kubernetes.io/name={labels['app.kubernetes.io/name']}" in fleet.DEVICE_PLUGIN_SELECTORS
    f = summary["fleet"]
    assert f["pluginUntouched"] is True and f["pluginBefore"] == f["pluginAfter"]
    assert summary["pluginUntouchedAfterDestroy"] is True
    assert f["comparison"] == {NODE: {"driverMatches": True, "uuidsMatch": True}}
    assert all(not v for k, v in summary["leftovers"].items() if k != "cni0")


def test_the_chapters_pods_ran_in_the_labs_namespace() -> None:
    gpu = host()
    log = text("smoke-pod.log")
    header = nvsmi.parse_header(log)
    assert header.driver_version == gpu.driver_version and smoke_gpus.gpu_uuids(log) == [gpu.uuid]
    smoke = doc("smoke-check.stdout")
    assert smoke["smokePhase"] == "Succeeded" and smoke["smokeNode"] == NODE
    compute_log = text("compute-vectoradd-0.log")
    read = kube_compute.read_vectoradd_log(compute_log)
    assert read.passed and not read.simulated
    # `sh -c "nvidia-smi -L; exec /cuda-samples/vectorAdd"`: nvidia-smi's line, then the kernel's.
    assert compute_log.splitlines()[0] == f"GPU 0: NVIDIA H200 (UUID: {gpu.uuid})"
    assert doc("compute-check.stdout")["computeResult"] == "passed"
    for pod in (doc("smoke-pod.json"), doc("compute-pod.json")):
        assert pod["metadata"]["namespace"] == "gpu-lab" and pod["spec"]["nodeName"] == NODE


def test_the_unhealthy_gpu_fails_the_fleet_check_naming_the_node() -> None:
    """The plugin reported the GPU Unhealthy: allocatable 0, capacity 1; the fleet check,
    rendered with gpuGraceSeconds 20, failed within the grace with the node's row as cause."""
    neg = doc("summary.json")["negative"]
    assert neg["nodeWhileUnhealthy"] == {"allocatable": "0", "capacity": "1"}
    assert neg["fleet"]["rc"] == 1 and 20 <= neg["fleet"]["seconds"] < 30
    node = doc("node-unhealthy.json")
    exp = fleet.expectation(node, SPEC)
    g = fleet.gate_node(node, exp, SPEC.resource, None, False)
    assert not g.ok and (g.allocatable, g.capacity) == (0, 1)
    stderr = text("fleet-unhealthy.stderr")
    assert stderr.startswith("no GPU node passed the gate:")
    assert f"first failure: gate: {g.cause}" in stderr and f"fix: {g.fix}" in stderr
    assert "marked 1 GPU(s) unhealthy" in g.fix
    assert "fault injected" in text("device-plugin-negative.log")


@pytest.fixture
def replay():  # type: ignore[no-untyped-def]
    return load_replay(doc("rendered.json"))


def test_the_programs_node_table_and_checklist_on_the_real_facts(replay) -> None:  # type: ignore[no-untyped-def]
    outputs, error = replay.replay(RUN, fleet=True)
    assert error is None
    assert outputs["gpuStack"] == {
        "mode": "found",
        "namespace": "gpu-lab",
        "devicePlugin": ["kube-system/gpulab-device-plugin"],
        "clusterPolicyState": None,
    }
    assert outputs["nodes"] == doc("fleet.stdout")["nodes"]
    assert outputs["nodesSummary"] == "1 node, 1 GPUs: 1 allocatable; every node passed"
    assert outputs["simulated"] is False and outputs["simulatedFields"] == []
    assert (outputs["allocatableGpus"], outputs["computeResult"]) == (1, "passed")
    card = replay.card(outputs)
    items = {i["id"]: i["status"] for i in card["checklist"]["items"]}
    assert items["every-gpu-node-passes"] == "pass"
    assert all(v == "pass" for k, v in items.items() if k != "dcgm-reports-gpus"), items
    # No DCGM exporter there (dcgmExporter false). The found stack's operatorComponents is
    # {"found": true}: it does not say the exporter is off, so the item reads "known after
    # deployment" and the checklist is not-evaluated (README: the finding); were it said, the
    # item would be not-tested and the checklist pass.
    dcgm = items["dcgm-reports-gpus"]
    assert dcgm in ("not-evaluated", "not-tested")
    assert card["checklist"]["result"] == ("pass" if dcgm == "not-tested" else "not-evaluated")
    assert [(r["node"], r["status"]) for r in card["nodes"]["rows"]] == [(NODE, "pass")]
    # What the recorded card says is what the program says now.
    assert doc("replay/baseline-card.json")["checklist"] == card["checklist"]
