"""The chapter's checklist evaluated from stack outputs (hand-written fixtures)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.checklist import UNKNOWN, Item
from tests.unit.samples import load


@pytest.fixture
def real() -> dict[str, Any]:
    data = load("minikube-h200-1gpu.json")
    # The capture predates the smoke Pod's nvidia-smi -L: what a smoke Pod of this version
    # records on that 1-GPU host (pods-see-every-gpu; its own tests: test_checklist_gpus.py).
    data[o.SMOKE_GPUS], data[o.SMOKE_GPU_UUIDS] = 1, [g["uuid"] for g in data[o.HOST_GPUS]]
    return data


@pytest.fixture
def sim() -> dict[str, Any]:
    return load("sim-h200-1gpu.json")


def by_id(items: list[Item]) -> dict[str, Item]:
    return {i.id: i for i in items}


def test_items_come_in_a_stable_order_with_stable_ids(real: dict[str, Any]) -> None:
    items = checklist.evaluate(LabOutputs.from_json(real))
    assert [i.id for i in items] == list(checklist.ITEM_IDS)
    assert all(i.status in checklist.STATUSES for i in items)
    assert all(i.fix and i.expected and i.title for i in items)


def test_real_lab_passes(real: dict[str, Any]) -> None:
    items = checklist.evaluate(LabOutputs.from_json(real))
    assert [i.status for i in items] == ["pass"] * len(checklist.ITEM_IDS)
    assert not any(i.simulated for i in items)
    assert checklist.exit_code(items) == 0
    assert checklist.overall(items) == "pass"


def test_simulated_lab_pull_half_is_not_observable(sim: dict[str, Any]) -> None:
    items = by_id(checklist.evaluate(LabOutputs.from_json(sim)))
    ev = items["events-scheduled-and-pulled"]
    assert ev.status == "not-observable-in-simulation"
    assert "Scheduled seen" in ev.observed
    assert ev.simulated
    assert all(i.simulated for i in items.values())
    assert checklist.exit_code(list(items.values())) == 0


def test_simulated_lab_still_checks_scheduled(sim: dict[str, Any]) -> None:
    sim[o.SMOKE_EVENTS] = ["SimulatedExit"]
    ev = by_id(checklist.evaluate(LabOutputs.from_json(sim)))["events-scheduled-and-pulled"]
    assert ev.status == "fail"
    assert "no Scheduled event" in ev.observed
    assert "4 CPUs / 8 GiB" in ev.fix


def test_real_lab_without_pulled_fails(real: dict[str, Any]) -> None:
    real[o.SMOKE_EVENTS] = ["Scheduled", "Started"]
    ev = by_id(checklist.evaluate(LabOutputs.from_json(real)))["events-scheduled-and-pulled"]
    assert ev.status == "fail"
    assert "nvidia-container-toolkit-daemonset" in ev.fix


def test_allocatable_key_missing_is_device_plugin_not_registered(real: dict[str, Any]) -> None:
    real[o.ALLOCATABLE_GPUS] = None
    real[o.CAPACITY_GPUS] = None
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["allocatable-matches-gpus"]
    assert item.status == "fail"
    assert "device plugin not registered" in item.observed
    # The capture predates nodeCommand: words that hold for every variant.
    assert "check the node sees the GPU: nvidia-smi on the GPU node;" in item.fix
    real[o.NODE_COMMAND] = "minikube -p gpu-lab ssh -- {cmd}"  # what a minikube lab exports now
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["allocatable-matches-gpus"]
    assert "check the node sees the GPU: minikube -p gpu-lab ssh -- nvidia-smi;" in item.fix


def test_allocatable_zero_is_devices_unhealthy(real: dict[str, Any]) -> None:
    real[o.ALLOCATABLE_GPUS] = 0
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["allocatable-matches-gpus"]
    assert item.status == "fail"
    assert "devices unhealthy, e.g. XID errors" in item.observed


def test_allocatable_uses_time_slicing_replicas(real: dict[str, Any]) -> None:
    real[o.ALLOCATABLE_GPUS] = 4
    assert by_id(checklist.evaluate(LabOutputs.from_json(real)))["allocatable-matches-gpus"].status == "fail"
    item = by_id(checklist.evaluate(LabOutputs.from_json(real, time_slicing_replicas=4)))[
        "allocatable-matches-gpus"
    ]
    assert item.status == "pass"
    assert "= 4" in item.expected
    with pytest.raises(ValueError, match="time_slicing_replicas"):
        checklist.evaluate(LabOutputs.from_json(real, time_slicing_replicas=0))


def test_device_plugin_restarts_fail(real: dict[str, Any]) -> None:
    real[o.DEVICE_PLUGIN_PODS] = [
        {
            "name": "nvidia-device-plugin-daemonset-x2k9p",
            "phase": "Running",
            "ready": True,
            "restarts": 3,
        },
    ]
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["device-plugin-stable"]
    assert item.status == "fail"
    assert "restarts=3" in item.observed
    assert "injection" in item.observed


def test_no_device_plugin_pod_fails(real: dict[str, Any]) -> None:
    real[o.DEVICE_PLUGIN_PODS] = []
    assert by_id(checklist.evaluate(LabOutputs.from_json(real)))["device-plugin-stable"].status == "fail"


def test_minikube_addon_owner_points_at_kube_system(real: dict[str, Any]) -> None:
    real[o.DEVICE_PLUGIN_OWNER] = "minikube-addon"
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["device-plugin-stable"]
    assert "kubectl -n kube-system logs ds/nvidia-device-plugin-daemonset" in item.fix


def test_driver_mismatch_fails(real: dict[str, Any]) -> None:
    real[o.SMOKE_DRIVER_VERSION] = "570.195.03"
    items = checklist.evaluate(LabOutputs.from_json(real))
    item = by_id(items)["driver-version-matches"]
    assert item.status == "fail"
    assert item.observed == "smoke 570.195.03, host 580.159.04"
    assert checklist.exit_code(items) == 1
    assert checklist.overall(items) == "fail"


def test_preview_with_every_value_unknown_is_not_evaluated(real: dict[str, Any]) -> None:
    # In a preview the computed outputs are absent or None: nothing may pass.
    preview: dict[str, Any] = {k: None for k in real if k not in (o.CLUSTER_KIND, o.SIMULATED)}
    preview[o.CLUSTER_KIND] = "minikube"
    items = checklist.evaluate(LabOutputs.from_json(preview))
    assert [i.status for i in items] == ["not-evaluated"] * len(checklist.ITEM_IDS)
    assert all("known after deployment" in i.observed for i in items)
    assert checklist.exit_code(items) == 1
    assert checklist.overall(items) == "not-evaluated"
    assert [i.status for i in checklist.evaluate(LabOutputs.from_json({}))] == ["not-evaluated"] * len(
        checklist.ITEM_IDS
    )


@pytest.mark.parametrize(
    "unknown", [UNKNOWN, "3eeb2bf0-c639-47a8-9e75-3b44932eb421"], ids=["UNKNOWN", "policy-sentinel"]
)
def test_a_single_unknown_value_is_not_evaluated(real: dict[str, Any], unknown: Any) -> None:
    real[o.ALLOCATABLE_GPUS] = unknown
    items = by_id(checklist.evaluate(LabOutputs.from_json(real)))
    assert items["allocatable-matches-gpus"].status == "not-evaluated"
    assert items["baseline-card-complete"].status == "not-evaluated"
    assert items["driver-version-matches"].status == "pass"


def test_missing_key_is_unknown_not_absent(real: dict[str, Any]) -> None:
    del real[o.SMOKE_DRIVER_VERSION]
    assert LabOutputs.from_json(real).is_unknown(o.SMOKE_DRIVER_VERSION)
    assert not LabOutputs.from_json(real).is_unknown(o.HOST_DRIVER_VERSION)
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["driver-version-matches"]
    assert item.status == "not-evaluated"
    assert "smokeDriverVersion" in item.observed


def test_card_complete_without_tflops_is_a_pass_that_says_so(real: dict[str, Any]) -> None:
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["baseline-card-complete"]
    assert item.status == "pass"
    assert "measured TFLOPS not recorded" in item.observed
    assert "not a failure of the lab" in item.observed
    real[o.MEASURED_TFLOPS] = {"bf16": 767.3}
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["baseline-card-complete"]
    assert "measured TFLOPS recorded" in item.observed


def test_card_incomplete_when_max_cuda_absent_after_deployment(real: dict[str, Any]) -> None:
    real[o.HOST_MAX_CUDA] = None  # a driver too old to print a CUDA version
    item = by_id(checklist.evaluate(LabOutputs.from_json(real)))["baseline-card-complete"]
    assert item.status == "fail"
    assert "missing: hostMaxCuda" in item.observed


def test_simulated_flag_follows_simulated_fields(sim: dict[str, Any]) -> None:
    sim[o.SIMULATED_FIELDS] = ["smokeDriverVersion"]
    items = by_id(checklist.evaluate(LabOutputs.from_json(sim)))
    assert items["driver-version-matches"].simulated
    assert not items["allocatable-matches-gpus"].simulated
    # The device-plugin pod carries its own simulated mark.
    assert items["device-plugin-stable"].simulated
    # Without the list, a simulated lab labels everything.
    del sim[o.SIMULATED_FIELDS]
    assert all(i.simulated for i in checklist.evaluate(LabOutputs.from_json(sim)))


def test_item_to_json_has_every_field(real: dict[str, Any]) -> None:
    data = checklist.evaluate(LabOutputs.from_json(real))[0].to_json()
    assert set(data) == {"id", "title", "status", "observed", "expected", "fix", "simulated"}


def test_allocatable_given_as_floats_by_the_engine_still_matches() -> None:
    """Policies receive numeric outputs as floats (1.0); a whole float is a count."""
    from gpulab.core import outputs as o
    from gpulab.verdict import checklist

    items = checklist.evaluate(
        LabOutputs.from_json({o.ALLOCATABLE_GPUS: 1.0, o.CAPACITY_GPUS: 1.0, o.HOST_GPU_COUNT: 1.0})
    )
    (item,) = [i for i in items if i.id == "allocatable-matches-gpus"]
    assert item.status == checklist.PASS, item
    items = checklist.evaluate(
        LabOutputs.from_json({o.ALLOCATABLE_GPUS: 1.0, o.CAPACITY_GPUS: 1.0, o.HOST_GPU_COUNT: 2.0})
    )
    (item,) = [i for i in items if i.id == "allocatable-matches-gpus"]
    assert item.status == checklist.FAIL, item


def test_first_fix_fits_the_lab_it_is_shown_in() -> None:
    from gpulab.core import outputs as o
    from gpulab.verdict import checklist

    facts = {o.ALLOCATABLE_GPUS: 0, o.CAPACITY_GPUS: 1, o.HOST_GPU_COUNT: 1}
    (real,) = [
        i for i in checklist.evaluate(LabOutputs.from_json(facts)) if i.id == "allocatable-matches-gpus"
    ]
    assert real.fix.startswith("check the node sees the GPU: nvidia-smi on the GPU node;")
    for node, said in (
        ("minikube -p lab ssh -- {cmd}", "minikube -p lab ssh -- nvidia-smi;"),
        ("docker exec lab-worker {cmd}", "docker exec lab-worker nvidia-smi;"),
        ("{cmd}", "nvidia-smi;"),  # k3s, microk8s: this host is the node
    ):
        (item,) = [
            i
            for i in checklist.evaluate(LabOutputs.from_json({**facts, o.NODE_COMMAND: node}))
            if i.id == "allocatable-matches-gpus"
        ]
        assert item.fix.startswith(f"check the node sees the GPU: {said}"), item.fix
    sim_items = checklist.evaluate(LabOutputs.from_json({**facts, o.SIMULATED: True}))
    (sim,) = [i for i in sim_items if i.id == "allocatable-matches-gpus"]
    assert sim.fix.startswith("simulated lab: the kwok node advertises simGpus GPUs")
    assert "on a GPU host: check the node sees the GPU" in sim.fix
