"""End to end: the compute check in the simulated lab, through the real engine and policy pack.

up (with the policy pack) -> the compute Pod ``gpu-compute`` ran after the smoke Pod, kwok
served it the vectorAdd log marked simulated, the check read ``Test PASSED`` from it -> the
outputs carry the compute keys, listed as simulated -> the checklist item ``compute-works``
reads "not observable in simulation", never a pass -> destroy.
"""

from __future__ import annotations

import pytest

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project, kube_api, shared_chart

pytestmark = pytest.mark.sim


def test_simulated_compute_check(project: Project) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    project.init("sim", chartPath=chart, profile="e2e-compute")
    try:
        _compute_check(project)
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", check=False)
    assert not (project.dir / ".state" / "sim" / "e2e-compute").exists()


def _compute_check(project: Project) -> None:
    up = project.pulumi("up", "--yes", "--skip-preview", "--stack", "sim", "--policy-pack", "policy")
    o = project.outputs("sim")
    # The check read a log with Test PASSED from a Pod that reached Succeeded.
    assert o[out.COMPUTE_RESULT] == "passed" and o[out.COMPUTE_PHASE] == "Succeeded"
    assert o[out.COMPUTE_GPUS] == 1  # one GPU: one vectorAdd container
    # What the container listed (the capture's GPU, in its simulated log), as the check read it.
    assert o[out.COMPUTE_GPU_UUIDS] == {
        "vectoradd-0": {"gpus": ["GPU-00000000-0000-4000-8000-000000000000"], "mig": []}
    }
    assert o[out.COMPUTE_IMAGE] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    assert o[out.COMPUTE_MEASURED_AT] >= o[out.SMOKE_MEASURED_AT]
    assert {out.COMPUTE_PHASE, out.COMPUTE_RESULT} <= set(o[out.SIMULATED_FIELDS])
    assert o[out.OPERAND_IMAGES] == dict.fromkeys(("devicePlugin", "toolkit", "dcgmExporter", "validator"))

    item = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}["compute-works"]
    assert item.status == "not-observable-in-simulation", item
    assert "not observable in simulation" in item.observed and item.simulated
    assert (
        checklist.overall(checklist.evaluate(LabOutputs.from_json(o))) == "pass"
    )  # the card adds "(simulated lab)"
    # The pack says so after up, without blocking it.
    assert "[compute-works] not observable in the simulated lab" in up.stdout + up.stderr

    kubeconfig = project.secret_outputs("sim")[out.KUBECONFIG]
    from kubernetes import client

    core = client.CoreV1Api(kube_api(kubeconfig))
    pod = core.read_namespaced_pod("gpu-compute", "default")
    assert pod.status.phase == "Succeeded"
    assert pod.metadata.annotations["gpulab.dev/simulated-execution"] == "true"
    assert [c.name for c in pod.spec.containers] == ["vectoradd-0"]
    assert pod.spec.containers[0].resources.limits == {"nvidia.com/gpu": "1"}
    lines = core.read_namespaced_pod_log("gpu-compute", "default").splitlines()
    assert "gpu-lab simulated" in lines[0], lines[:2]
    assert "Test PASSED" in lines
    assert "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-4000-8000-000000000000)" in lines
    # One GPU at a time: the compute Pod started after the smoke Pod had finished.
    smoke = core.read_namespaced_pod("gpu-smoke", "default")
    smoke_done = smoke.status.container_statuses[0].state.terminated.finished_at
    assert pod.metadata.creation_timestamp >= smoke_done
