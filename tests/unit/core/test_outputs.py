"""gpulab.core.outputs.LabOutputs: the one typed model of the stack outputs (parse, shape errors
naming every key, unknown/absent, derived settings, the writer's completeness check)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import UNKNOWN, LabOutputs, OutputsError
from tests.unit.samples import DATA


@pytest.mark.parametrize("sample", sorted(p.name for p in (DATA / "outputs").glob("*.json")))
def test_every_recorded_sample_parses_and_round_trips(sample: str) -> None:
    raw = json.loads((DATA / "outputs" / sample).read_text())
    model = LabOutputs.from_json(raw)
    assert model.to_json() == {k: v for k, v in raw.items() if k in o.ALL_KEYS}
    assert model.host_gpu_count == raw[o.HOST_GPU_COUNT]
    assert model.absent == set(o.ALL_KEYS) - set(raw)


def test_every_key_is_one_field_and_back() -> None:
    assert {o.attribute(k) for k in o.ALL_KEYS} == {f.name for f in o._OUTPUT_FIELDS}
    assert len(o.ALL_KEYS) == len(set(o.ALL_KEYS)) == len(o._OUTPUT_FIELDS)
    assert o.attribute(o.HOST_GPU_COUNT) == "host_gpu_count"


def test_a_bad_shape_names_every_key_and_the_fix() -> None:
    with pytest.raises(OutputsError) as err:
        LabOutputs.from_json(
            {o.HOST_GPU_COUNT: "two", o.HOST_GPUS: [1], o.OPERATOR_COMPONENTS: {"toolkit": "yes"}}
        )
    assert err.value.problems == (
        "operatorComponents: expected an object of booleans and integers, got {'toolkit': 'yes'} (dict)",
        "hostGpuCount: expected an integer, got 'two' (str)",
        "hostGpus: expected a list of objects, got [1] (list)",
    )
    assert "3 key(s)" in str(err.value) and "first fix: make card" in str(err.value)
    with pytest.raises(OutputsError, match="expected an object of output keys"):
        LabOutputs.from_json([1, 2])


def test_whole_floats_are_counts_and_unknown_keys_are_ignored() -> None:
    model = LabOutputs.from_json({o.ALLOCATABLE_GPUS: 2.0, "aNewerKey": 1})
    assert model.allocatable_gpus == 2 and isinstance(model.allocatable_gpus, int)
    assert "aNewerKey" not in model.to_json()


def test_unknown_absent_and_null_are_three_states() -> None:
    sentinel = next(iter(o.POLICY_SENTINELS))
    model = LabOutputs.from_json({o.SMOKE_PHASE: UNKNOWN, o.SMOKE_NODE: sentinel, o.ALLOCATABLE_GPUS: None})
    assert model.is_unknown(o.SMOKE_PHASE) and model.is_unknown(o.SMOKE_NODE)
    assert model.has(o.SMOKE_PHASE) and not model.has(o.HOST_GPUS) and model.is_unknown(o.HOST_GPUS)
    assert not model.is_unknown(o.ALLOCATABLE_GPUS) and model.allocatable_gpus is None
    # Before anything was deployed a None is "not known yet"; after, a real absence.
    assert model.unknown(o.ALLOCATABLE_GPUS)
    deployed = model.with_values(host_gpu_count=1)
    assert deployed.deployed and not deployed.unknown(o.ALLOCATABLE_GPUS)
    assert o.SMOKE_PHASE not in model.to_json()


def test_replicas_and_profile_are_derived_once() -> None:
    raw: dict[str, Any] = {o.OPERATOR_COMPONENTS: {"timeSlicingReplicas": 4, "dcgmExporter": False}}
    assert LabOutputs.from_json(raw).time_slicing_replicas == 4
    assert LabOutputs.from_json(raw, time_slicing_replicas=2).time_slicing_replicas == 2
    assert LabOutputs.from_json({}).time_slicing_replicas == 1
    assert LabOutputs.from_json(raw).component_off("dcgmExporter")
    assert not LabOutputs.from_json(raw).component_off("toolkit")
    assert LabOutputs.from_json({}).profile == "gpu-lab"
    assert LabOutputs.from_json({}, profile="lab2").profile == "lab2"
    with pytest.raises(ValueError, match="time_slicing_replicas"):
        LabOutputs.from_json({}, time_slicing_replicas=0)


def test_simulated_keys() -> None:
    sim = LabOutputs.from_json({o.SIMULATED: True, o.SIMULATED_FIELDS: [o.HOST_GPUS]})
    assert sim.simulated_lab and sim.is_simulated(o.HOST_GPUS) and not sim.is_simulated(o.SMOKE_PHASE)
    assert sim.simulated([o.SMOKE_PHASE, o.HOST_GPUS]) and not sim.simulated([o.SMOKE_PHASE])
    # A simulated lab without the list: everything is labelled simulated, never under-reported.
    assert LabOutputs.from_json({o.SIMULATED: True}).is_simulated(o.SMOKE_PHASE)


def test_with_values_checks_shapes_and_without_drops_keys() -> None:
    model = LabOutputs.from_json({o.KUBECONFIG: "apiVersion: v1", o.HOST_GPU_COUNT: UNKNOWN})
    assert model.with_values(host_gpu_count=2).host_gpu_count == 2
    assert not model.with_values(host_gpu_count=2).is_unknown(o.HOST_GPU_COUNT)
    with pytest.raises(OutputsError, match="hostGpuCount: expected an integer"):
        model.with_values(host_gpu_count="2")
    dropped = model.without(o.KUBECONFIG)
    assert dropped.kubeconfig is None and not dropped.has(o.KUBECONFIG)


def test_the_writer_must_set_every_field_once() -> None:
    every = {o.attribute(k): None for k in o.ALL_KEYS}
    written = LabOutputs.export(every)
    assert list(written) == list(o.ALL_KEYS)
    partial = {n: v for n, v in every.items() if n not in ("smoke_phase", "leftovers")}
    with pytest.raises(TypeError, match=r"field 'smoke_phase' \(smokePhase\) not set"):
        LabOutputs.export(partial)
    # Fields only some labs export (a variant's extra_outputs, the benchmark's) may be left out.
    some = {n: v for n, v in every.items() if n not in ("leftovers", "gpu_labels_before")}
    assert o.LEFTOVERS in LabOutputs.export(some, extra={o.LEFTOVERS: []})
    with pytest.raises(TypeError, match=r"unknown field 'smokePhase'.*unknown output key 'nope'"):
        LabOutputs.export({**every, "smokePhase": 1}, extra={"nope": 1})
    with pytest.raises(TypeError, match="set twice"):
        LabOutputs.export(every, extra={o.LEFTOVERS: []})
