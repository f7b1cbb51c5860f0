"""End to end: the simulated lab with two GPUs (``stacks/sim-2gpu.yaml``) goes up, passes the
checklist and comes down, through ``scripts/lab`` (what ``GPULAB_STACK=sim-2gpu make lab`` and
``make destroy`` run).

The host is the capture ``h200-2gpu``; the kwok node advertises ``nvidia.com/gpu: 2``. With
``smokeGpus: all`` (the default) the smoke Pod requests both GPUs, and its simulated log
carries the capture's two UUIDs (``nvidia-smi -L`` lines), so ``pods-see-every-gpu`` runs its
comparison with ``hostGpus`` and reports it not observable in simulation.
"""

from __future__ import annotations

import json
import time

import pytest

from gpulab import checklist
from gpulab import outputs as out
from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.sim

STACK = "sim-2gpu"
UUIDS = ["GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"]


def test_the_2gpu_lab_goes_up_sees_every_gpu_and_comes_down(project: Project) -> None:
    if shared_chart() is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    try:
        t0 = time.monotonic()
        up = project.lab("up", stack=STACK)
        up_s = time.monotonic() - t0
        assert up.returncode == 0, f"{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        o = project.outputs(STACK)
        assert o[out.HOST_PROBE_SOURCE] == "capture:h200-2gpu" and o[out.HOST_GPU_COUNT] == 2
        assert o[out.ALLOCATABLE_GPUS] == 2 and o[out.SMOKE_GPUS] == 2
        assert o[out.SMOKE_PHASE] == "Succeeded"
        assert o[out.SMOKE_GPU_UUIDS] == UUIDS
        items = checklist.evaluate(o)
        by_id = {i.id: i for i in items}
        every = by_id["pods-see-every-gpu"]
        assert every.status == "not-observable-in-simulation" and every.simulated, every
        assert all(u in every.observed for u in UUIDS), every.observed
        assert checklist.exit_code(items) == 0, [i.report() for i in items]
    finally:
        t1 = time.monotonic()
        down = project.lab("destroy", stack=STACK)
        down_s = time.monotonic() - t1
    assert down.returncode == 0, down.stderr[-3000:]
    export = json.loads(project.pulumi("stack", "export", "--stack", STACK).stdout)
    assert not export["deployment"].get("resources")
    assert not (project.dir / ".state" / "sim" / "gpu-lab-2gpu").exists()
    print(f"\ntimings: make lab {up_s:.1f}s, make destroy {down_s:.1f}s")
