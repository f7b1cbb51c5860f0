"""End to end: the simulated lab with two GPUs (``stacks/sim-2gpu.yaml``) goes up, passes the
checklist and comes down, through ``scripts/lab`` (what ``GPULAB_STACK=sim-2gpu make lab`` and
``make destroy`` run).

The host is the capture ``h200-2gpu``; the kwok node advertises ``nvidia.com/gpu: 2``. With
``smokeGpus: all`` (the default) the smoke Pod requests both GPUs, and its simulated log
carries the capture's two UUIDs (``nvidia-smi -L`` lines), so ``pods-see-every-gpu`` runs its
comparison with ``hostGpus`` and reports it not observable in simulation. The compute Pod
runs one vectorAdd container per GPU (``vectoradd-0``, ``vectoradd-1``, one GPU each); kwok
completes each and serves each its own simulated log (the one capture GPU it lists, then the
vectorAdd output), so the check's per-container comparison runs and ``computeGpus`` is 2.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.sim

STACK = "sim-2gpu"
UUIDS = ["GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"]


def test_the_2gpu_lab_goes_up_sees_every_gpu_and_comes_down(project: Project) -> None:
    if shared_chart() is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    with project.round_trip(STACK, "gpu-lab-2gpu"):
        o = project.outputs(STACK)
        assert o[out.HOST_PROBE_SOURCE] == "capture:h200-2gpu" and o[out.HOST_GPU_COUNT] == 2
        assert o[out.ALLOCATABLE_GPUS] == 2 and o[out.CAPACITY_GPUS] == 2 and o[out.SMOKE_GPUS] == 2
        links = [[lk["code"] for lk in g["links"]] for g in o[out.HOST_TOPOLOGY]["gpus"]]
        assert links == [["NV18"], ["NV18"]]  # the synthesized 2-GPU matrix (gpulab/host/captures/README.md)
        assert o[out.SMOKE_PHASE] == "Succeeded"
        assert o[out.SMOKE_GPU_UUIDS] == UUIDS
        items = checklist.evaluate(LabOutputs.from_json(o))
        by_id = {i.id: i for i in items}
        every = by_id["pods-see-every-gpu"]
        assert every.status == "not-observable-in-simulation" and every.simulated, every
        assert all(u in every.observed for u in UUIDS), every.observed
        # The compute check covered both GPUs: one vectorAdd container each, each passed.
        assert o[out.COMPUTE_RESULT] == "passed" and o[out.COMPUTE_GPUS] == 2
        assert (
            out.COMPUTE_GPUS in o[out.SIMULATED_FIELDS] and out.COMPUTE_GPU_UUIDS in o[out.SIMULATED_FIELDS]
        )
        # Each container saw its own GPU (the capture's, in the simulated logs).
        assert o[out.COMPUTE_GPU_UUIDS] == {
            "vectoradd-0": {"gpus": [UUIDS[0]], "mig": []},
            "vectoradd-1": {"gpus": [UUIDS[1]], "mig": []},
        }
        compute = by_id["compute-works"]
        assert compute.status == "not-observable-in-simulation" and compute.simulated, compute
        assert "vectorAdd passed in 2 of 2 containers (one GPU each), every GPU of the host (2)" in (
            compute.observed
        )
        _each_compute_container_passed(project)
        assert checklist.exit_code(items) == 0, [i.report() for i in items]


def _each_compute_container_passed(project: Project) -> None:
    """The compute Pod in the cluster: two containers, one GPU each, each terminated with exit
    code 0 and served a (simulated) vectorAdd log with ``Test PASSED``."""
    from kubernetes import client

    core: Any = client.CoreV1Api(project.kube_api(STACK))
    pod = core.read_namespaced_pod("gpu-compute", "default")
    assert pod.status.phase == "Succeeded"
    names = [c.name for c in pod.spec.containers]
    assert names == ["vectoradd-0", "vectoradd-1"]
    assert all(c.resources.limits == {"nvidia.com/gpu": "1"} for c in pod.spec.containers)
    codes = {s.name: s.state.terminated.exit_code for s in pod.status.container_statuses}
    assert codes == dict.fromkeys(names, 0), codes
    for name in names:
        raw = core.read_namespaced_pod_log("gpu-compute", "default", container=name, _preload_content=False)
        lines = raw.data.decode().splitlines()
        assert "gpu-lab simulated" in lines[0] and "Test PASSED" in lines, (name, lines[:3])
        i = int(name.removeprefix("vectoradd-"))
        assert [x for x in lines if x.startswith("GPU ")] == [f"GPU {i}: NVIDIA H200 (UUID: {UUIDS[i]})"]
