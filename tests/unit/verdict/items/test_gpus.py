"""Checklist item ``pods-see-every-gpu`` (gpulab.verdict.items.gpus): each status, from outputs.

Inputs: the recorded outputs of the 1-GPU H200 lab and of the simulated lab
(``tests/data/outputs``), with the host widened to the two GPUs of the ``h200-2gpu`` capture
where a case needs a multi-GPU host.
"""

from __future__ import annotations

from typing import Any

from gpulab.core import outputs as o
from gpulab.core.findings import Status
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist

GPU0, GPU1 = "GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"


def item(outputs: dict[str, Any], replicas: int = 1) -> checklist.Item:
    (found,) = [
        i
        for i in checklist.evaluate(LabOutputs.from_json(outputs, time_slicing_replicas=replicas))
        if i.id == "pods-see-every-gpu"
    ]
    return found


def two_gpus(data: dict[str, Any], seen: list[str] | None, requested: int = 2) -> dict[str, Any]:
    gpu = data[o.HOST_GPUS][0]
    data[o.HOST_GPUS] = [{**gpu, "index": 0, "uuid": GPU0}, {**gpu, "index": 1, "uuid": GPU1}]
    data[o.HOST_GPU_COUNT] = 2
    data[o.SMOKE_GPUS], data[o.SMOKE_GPU_UUIDS] = requested, seen
    return data


def test_registered_last_with_a_stack_policy() -> None:
    from policy.validators.checklist_items import SPECS

    assert checklist.ITEM_IDS[-1] == "pods-see-every-gpu"
    assert "pods-see-every-gpu" in {s.name for s in SPECS}


def test_passes_when_the_pod_saw_every_gpu_of_the_host(real: dict[str, Any]) -> None:
    found = item(two_gpus(real, [GPU1, GPU0]))
    assert found.status == Status.PASS and not found.simulated
    assert found.observed == f"the smoke Pod saw the host's 2 GPU(s): {GPU0}, {GPU1}"


def test_fails_naming_the_missing_gpu_and_says_smoke_gpus_was_not_all(real: dict[str, Any]) -> None:
    found = item(two_gpus(real, [GPU0], requested=1))
    assert found.status == Status.FAIL
    assert found.observed == (
        "the smoke Pod saw 1 GPU(s), the host has 2 (the smoke Pod requested 1: smokeGpus is not all): "
        f"not in the Pod: {GPU1}"
    )
    assert found.fix.startswith("scripts/pulumi config set gpu-lab:smokeGpus all")


def test_a_gpu_held_back_with_all_requested_points_at_the_device_plugin(real: dict[str, Any]) -> None:
    # Both requested, one GPU in the Pod: the device plugin's device list is the suspect.
    found = item(two_gpus(real, [GPU0, "GPU-ffffffff-0000-4000-8000-00000000000f"]))
    assert found.status == Status.FAIL
    assert f"not in the Pod: {GPU1}" in found.observed
    assert "not on the host: GPU-ffffffff-0000-4000-8000-00000000000f" in found.observed
    assert "logs ds/nvidia-device-plugin-daemonset" in found.fix


def test_time_slicing_and_mig_are_not_tested(real: dict[str, Any]) -> None:
    found = item(two_gpus(real, [GPU0], requested=1), replicas=4)
    assert found.status == Status.NOT_TESTED and "time-slicing (4 replicas per GPU)" in found.observed
    mig = {**real, o.MIG_STRATEGY: "mixed", o.SMOKE_RESOURCE: "nvidia.com/mig-1g.18gb"}
    assert item(mig).status == Status.NOT_TESTED


def test_a_lab_from_an_earlier_version_is_not_tested_and_a_preview_not_evaluated(
    real: dict[str, Any],
) -> None:
    assert o.SMOKE_GPU_UUIDS not in real
    assert item(real).status == Status.NOT_TESTED
    assert item({}).status == Status.NOT_EVALUATED


def test_a_log_without_a_listing_is_not_evaluated(real: dict[str, Any]) -> None:
    found = item(two_gpus(real, None))
    assert found.status == Status.NOT_EVALUATED and "make verify" in found.observed


def test_unknown_host_uuids_are_not_tested(real: dict[str, Any]) -> None:
    # existing / hostProbe off: hostGpus is empty, hostGpuCount comes from expectedGpus.
    data = {**real, o.HOST_GPUS: [], o.SMOKE_GPUS: 1, o.SMOKE_GPU_UUIDS: [GPU0]}
    assert item(data).status == Status.NOT_TESTED


def test_simulated_lab_compares_but_is_not_observable(sim: dict[str, Any]) -> None:
    found = item(two_gpus(sim, [GPU0, GPU1]))
    assert found.status == Status.NOT_OBSERVABLE and found.simulated
    assert found.observed.startswith("not observable in simulation: the simulated log (from the capture)")
    # A simulated log that contradicts the capture is the lab's own wiring: it fails.
    assert item(two_gpus(sim, [GPU0])).status == Status.FAIL
    assert item(two_gpus(sim, None)).status == Status.NOT_OBSERVABLE


def test_a_pod_that_saw_more_gpus_than_it_was_allocated_fails(real: dict[str, Any]) -> None:
    # One GPU requested on a two-GPU host, both listed: the runtime injected the image's
    # NVIDIA_VISIBLE_DEVICES=all instead of the device plugin's list. The set matches the
    # host, which is exactly why a comparison with the host alone passed this before.
    found = item(two_gpus(real, [GPU0, GPU1], requested=1))
    assert found.status == Status.FAIL
    assert found.observed.startswith(f"the smoke Pod saw 2 GPUs ({GPU0}, {GPU1}), it was allocated 1")
    assert "NVIDIA_VISIBLE_DEVICES=all" in found.observed
    assert found.fix.startswith("scripts/kubectl -n gpu-operator get ds nvidia-device-plugin-daemonset")


def test_more_than_allocated_fails_under_time_slicing_and_in_simulation_too(
    real: dict[str, Any], sim: dict[str, Any]
) -> None:
    assert item(two_gpus(real, [GPU0, GPU1], requested=1), replicas=4).status == Status.FAIL
    found = item(two_gpus(sim, [GPU0, GPU1], requested=1))
    assert found.status == Status.FAIL and found.simulated  # the lab's own simulated logs are wrong
