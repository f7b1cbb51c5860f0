"""Checklist item ``compute-works`` and the overall verdict it feeds (hand-written fixtures)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.checklist import UNKNOWN
from tests.unit.samples import load


def compute_item(outputs: dict[str, Any]) -> checklist.Item:
    return {i.id: i for i in checklist.evaluate(LabOutputs.from_json(outputs))}["compute-works"]


def test_a_gpu_lab_whose_kernel_passed_passes() -> None:
    real = load("minikube-h200-1gpu.json")
    item = compute_item(real)
    assert item.status == "pass" and not item.simulated
    assert item.observed == "vectorAdd passed in 1 of 1 containers (one GPU each), every GPU of the host (1)"
    assert "Test PASSED" in item.title and "Test PASSED" in item.expected
    assert checklist.overall(checklist.evaluate(LabOutputs.from_json(real))) == "pass"


@pytest.mark.parametrize(
    ("result", "phase"), [("failed", "Failed"), ("failed", "Succeeded"), ("passed", "Running")]
)
def test_a_failed_or_unfinished_kernel_fails(result: str, phase: str) -> None:
    real = load("minikube-h200-1gpu.json")
    real[o.COMPUTE_RESULT], real[o.COMPUTE_PHASE] = result, phase
    item = compute_item(real)
    assert item.status == "fail" and "kubectl logs gpu-compute" in item.fix
    assert checklist.overall(checklist.evaluate(LabOutputs.from_json(real))) == "fail"


def test_compute_check_off_is_not_tested_and_the_verdict_says_so() -> None:
    real = load("minikube-h200-1gpu.json")
    real.update({o.COMPUTE_RESULT: "not-tested", o.COMPUTE_PHASE: None, o.COMPUTE_MEASURED_AT: None})
    items = checklist.evaluate(LabOutputs.from_json(real))
    item = {i.id: i for i in items}["compute-works"]
    assert item.status == "not-tested" and "computeCheck is off" in item.observed
    assert "computeCheck true" in item.fix
    # Every other item passes, and still no "pass": no GPU was shown doing work.
    assert checklist.overall(items) == "compute not tested"
    assert checklist.exit_code(items) == 1


def test_outputs_of_a_lab_without_the_compute_check_are_not_tested() -> None:
    real = load("minikube-h200-1gpu.json")
    for key in (o.COMPUTE_RESULT, o.COMPUTE_PHASE, o.COMPUTE_GPUS, o.COMPUTE_IMAGE, o.COMPUTE_MEASURED_AT):
        del real[key]
    item = compute_item(real)
    assert item.status == "not-tested" and "deployed without it" in item.observed
    assert checklist.overall(checklist.evaluate(LabOutputs.from_json(real))) == "compute not tested"


def test_the_simulated_lab_is_not_observable_and_keeps_its_verdict() -> None:
    sim = load("sim-h200-1gpu.json")
    items = checklist.evaluate(LabOutputs.from_json(sim))
    item = {i.id: i for i in items}["compute-works"]
    assert item.status == "not-observable-in-simulation" and item.simulated
    assert item.observed.startswith(
        "not observable in simulation: vectorAdd passed in 1 of 1 containers (one GPU each), "
        "every GPU of the host (1) (kwok completed the Pod"
    ), item.observed
    assert checklist.overall(items) == "pass" and checklist.exit_code(items) == 0


def test_a_simulated_lab_with_the_check_off_is_not_tested() -> None:
    sim = load("sim-h200-1gpu.json")
    sim[o.COMPUTE_RESULT] = "not-tested"
    assert compute_item(sim).status == "not-tested"
    assert checklist.overall(checklist.evaluate(LabOutputs.from_json(sim))) == "compute not tested"


def test_before_deployment_it_is_not_evaluated() -> None:
    real = load("minikube-h200-1gpu.json")
    real[o.COMPUTE_RESULT] = UNKNOWN
    assert compute_item(real).status == "not-evaluated"
    assert compute_item({}).status == "not-evaluated"


def test_the_verdict_needs_a_compute_item_that_passed() -> None:
    real = load("minikube-h200-1gpu.json")
    others = [i for i in checklist.evaluate(LabOutputs.from_json(real)) if i.id != "compute-works"]
    assert checklist.overall(others) == "compute not tested"


# --- one vectorAdd container per GPU (computeGpus) ------------------------------------------

UUIDS = ["GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"]


def two_gpu_host(computed: int | None, smoke: int = 2, **extra: Any) -> dict[str, Any]:
    """The minikube fixture on a host with two GPUs; ``computed`` None: no computeGpus key."""
    real = load("minikube-h200-1gpu.json")
    gpu = real[o.HOST_GPUS][0]
    real[o.HOST_GPUS] = [{**gpu, "index": i, "uuid": u} for i, u in enumerate(UUIDS)]
    real.update({o.HOST_GPU_COUNT: 2, o.SMOKE_GPUS: smoke, o.COMPUTE_GPUS: computed, **extra})
    if computed is None:
        del real[o.COMPUTE_GPUS]
    return real


def test_every_gpu_of_the_host_covered_passes() -> None:
    item = compute_item(two_gpu_host(2))
    assert item.status == "pass", item
    assert item.observed == "vectorAdd passed in 2 of 2 containers (one GPU each), every GPU of the host (2)"


def test_fewer_gpus_covered_than_the_host_has_is_not_tested_and_says_which() -> None:
    outputs = two_gpu_host(1, smoke=1)
    items = checklist.evaluate(LabOutputs.from_json(outputs))
    item = {i.id: i for i in items}["compute-works"]
    assert item.status == "not-tested", item
    assert item.observed.startswith("not tested on every GPU: vectorAdd passed in 1 of 1 containers")
    assert "not covered: 1 of the host's 2 GPUs" in item.observed
    assert all(u in item.observed for u in UUIDS) and "is not recorded" in item.observed
    assert "smokeGpus is not all" in item.observed and "smokeGpus all, then make verify" in item.fix
    assert checklist.overall(items) != "pass" and checklist.exit_code(items) == 1


def test_a_lab_from_before_the_per_gpu_check_covered_one_gpu() -> None:
    # No computeGpus: the compute Pod of an earlier version had one container.
    two = compute_item(two_gpu_host(None))
    assert two.status == "not-tested" and "a lab deployed before the per-GPU check" in two.observed
    assert "not covered: 1 of the host's 2 GPUs" in two.observed and two.fix.startswith("make verify")
    real = load("minikube-h200-1gpu.json")
    del real[o.COMPUTE_GPUS]
    assert compute_item(real).status == "pass"


def test_time_slicing_and_mig_pass_on_what_ran_without_the_comparison() -> None:
    real = two_gpu_host(1, smoke=1)
    sliced = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(real, time_slicing_replicas=4))}[
        "compute-works"
    ]
    assert sliced.status == "pass", sliced
    assert "vectorAdd passed in 1 of 1 containers (one nvidia.com/gpu each)" in sliced.observed
    assert "not required: time-slicing (4 replicas per GPU)" in sliced.observed
    assert "not covered: 1 of the host's 2 GPUs" in sliced.observed  # never a silent pass
    mig = compute_item(
        two_gpu_host(1, smoke=1, **{o.MIG_STRATEGY: "mixed", o.SMOKE_RESOURCE: "nvidia.com/mig-1g.18gb"})
    )
    assert mig.status == "pass" and "(one nvidia.com/mig-1g.18gb, MIG mixed each)" in mig.observed
    assert "each container gets a MIG device" in mig.observed
    # Time-slicing's renamed resource (nvidia.com/gpu.shared) is a share, not a whole GPU.
    shared = compute_item(two_gpu_host(1, smoke=1, **{o.SMOKE_RESOURCE: "nvidia.com/gpu.shared"}))
    assert shared.status == "pass" and "(one nvidia.com/gpu.shared each)" in shared.observed
    assert "not required: resource nvidia.com/gpu.shared (shared, not whole GPUs)" in shared.observed


def test_an_existing_cluster_says_what_one_pod_could_not_cover() -> None:
    item = compute_item(two_gpu_host(1, smoke=1, **{o.CLUSTER_KIND: "existing"}))
    assert item.status == "pass", item
    assert "not covered: 1 of the cluster's (expectedGpus) 2 GPUs" in item.observed
    assert "one Pod runs on one node" in item.observed and UUIDS[0] not in item.observed


def test_an_unknown_host_gpu_count_is_not_compared() -> None:
    item = compute_item(two_gpu_host(2, **{o.HOST_GPU_COUNT: None}))
    assert item.status == "pass" and "not compared with the host's GPUs" in item.observed


def test_the_count_not_known_yet_is_not_evaluated() -> None:
    assert compute_item(two_gpu_host(2, **{o.COMPUTE_GPUS: UNKNOWN})).status == "not-evaluated"


def test_a_failed_pod_fails_whatever_its_count() -> None:
    real = two_gpu_host(1, **{o.COMPUTE_RESULT: "failed", o.COMPUTE_PHASE: "Failed"})
    item = compute_item(real)
    assert item.status == "fail" and item.observed == "compute Pod Failed, result failed"
    assert "--all-containers" in item.fix


def test_the_two_gpu_simulated_lab_gives_the_count_and_stays_simulated() -> None:
    sim = load("sim-h200-1gpu.json")
    sim.update({o.HOST_GPU_COUNT: 2, o.COMPUTE_GPUS: 2, o.SMOKE_GPUS: 2})
    item = compute_item(sim)
    assert item.status == "not-observable-in-simulation" and item.simulated
    assert "vectorAdd passed in 2 of 2 containers (one GPU each), every GPU of the host (2)" in item.observed
    sim[o.COMPUTE_GPUS] = 1
    partial = compute_item(sim)
    assert partial.status == "not-observable-in-simulation" and "not covered: 1 of" in partial.observed


GPU0, GPU1 = "GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"


def _two_gpu_lab(per_container: dict[str, list[str]]) -> dict[str, Any]:
    real = load("minikube-h200-1gpu.json")
    gpu = real[o.HOST_GPUS][0]
    real[o.HOST_GPUS] = [{**gpu, "index": 0, "uuid": GPU0}, {**gpu, "index": 1, "uuid": GPU1}]
    real[o.HOST_GPU_COUNT] = len(real[o.HOST_GPUS])
    real[o.COMPUTE_GPUS] = len(per_container)
    real[o.COMPUTE_GPU_UUIDS] = {name: {"gpus": uuids, "mig": []} for name, uuids in per_container.items()}
    return real


def test_recorded_distinct_host_gpus_pass_and_name_what_was_covered() -> None:
    item = compute_item(_two_gpu_lab({"vectoradd-0": [GPU0], "vectoradd-1": [GPU1]}))
    assert item.status == "pass", item
    partial = compute_item(_two_gpu_lab({"vectoradd-0": [GPU1]}))
    assert (
        partial.status == "not-tested" and f"not covered: 1 of the host's 2 GPUs ({GPU0})" in partial.observed
    )


@pytest.mark.parametrize(
    ("per_container", "said"),
    [
        ({"vectoradd-0": [GPU0], "vectoradd-1": [GPU0]}, f"vectoradd-0 and vectoradd-1 both saw {GPU0}"),
        ({"vectoradd-0": [GPU0, GPU1], "vectoradd-1": [GPU1]}, f"vectoradd-0 saw 2 GPUs ({GPU0}, {GPU1})"),
        ({"vectoradd-0": ["GPU-ffffffff-0000-4000-8000-00000000000f"]}, "not a GPU of the host"),
    ],
)
def test_a_recorded_leak_fails(per_container: dict[str, list[str]], said: str) -> None:
    item = compute_item(_two_gpu_lab(per_container))
    assert item.status == "fail" and said in item.observed, item
    assert "the node's runtime gave a container GPUs the device plugin did not allocate" in item.fix
