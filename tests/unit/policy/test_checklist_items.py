"""The five checklist items (:mod:`policy.validators.checklist_items`)."""

from __future__ import annotations

import pytest

from gpulab.core import outputs as out
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden

from .harness import (
    ITEMS,
    STACK_URN,
    UNK,
    check_stack,
    good_outputs,
    stack,
)

# --- the five checklist items -------------------------------------------------------
VIOLATING = {
    "device-plugin-stable": {
        out.DEVICE_PLUGIN_PODS: [{"name": "p", "phase": "Running", "ready": True, "restarts": 3}]
    },
    "allocatable-matches-gpus": {out.ALLOCATABLE_GPUS: 2},
    "driver-version-matches": {out.SMOKE_DRIVER_VERSION: "570.26"},
    "events-scheduled-and-pulled": {out.SMOKE_EVENTS: ["Scheduled", "Started"]},
    "baseline-card-complete": {out.HOST_GPU_MODELS: []},
    "compute-works": {out.COMPUTE_RESULT: "failed", out.COMPUTE_PHASE: "Failed"},
}


@pytest.mark.parametrize("item", ITEMS)
def test_checklist_item_passes_on_a_healthy_lab(item: str) -> None:
    assert check_stack(item, [stack(good_outputs())]).passed


@pytest.mark.parametrize("item", ITEMS)
def test_checklist_item_violates_with_observed_expected_and_fix(item: str) -> None:
    o = check_stack(item, [stack(good_outputs(**VIOLATING[item]))])
    assert len(o.violations) == 1, o.text
    message, urn = o.violations[0]
    assert (
        message.startswith(f"[{item}] observed: ")
        and "; expected: " in message
        and "; first fix: " in message
    )
    assert urn == STACK_URN


def test_allocatable_missing_key_and_zero_read_differently() -> None:
    missing = check_stack("allocatable-matches-gpus", [stack(good_outputs(**{out.ALLOCATABLE_GPUS: None}))])
    zero = check_stack("allocatable-matches-gpus", [stack(good_outputs(**{out.ALLOCATABLE_GPUS: 0}))])
    assert "device plugin not registered" in missing.text
    assert "devices unhealthy, e.g. XID errors" in zero.text


def test_allocatable_uses_time_slicing_replicas_from_pack_config_else_the_outputs() -> None:
    four = [stack(good_outputs(**{out.ALLOCATABLE_GPUS: 4}))]
    assert check_stack("allocatable-matches-gpus", four, {"timeSlicingReplicas": 4}).passed
    # The replicas come from the outputs as deployed (as the card reads them), not the stack's
    # config now: one derivation, gpulab.core.outputs.LabOutputs.time_slicing_replicas.
    ctx = StackContext(dry_run=False, config={"gpu-lab:timeSlicingReplicas": "4"})
    with stack_context_overridden(ctx):
        assert not check_stack("allocatable-matches-gpus", four).passed
    sliced = good_outputs(**{out.ALLOCATABLE_GPUS: 4, out.OPERATOR_COMPONENTS: {"timeSlicingReplicas": 4}})
    assert check_stack("allocatable-matches-gpus", [stack(sliced)]).passed
    assert check_stack("allocatable-matches-gpus", four, {"expectedGpus": 4}).passed


def test_a_bad_output_shape_fails_naming_the_key() -> None:
    bad = [stack(good_outputs(**{out.HOST_GPU_COUNT: "two"}))]
    outcome = check_stack("allocatable-matches-gpus", bad)
    assert not outcome.passed
    assert "hostGpuCount: expected an integer, got 'two' (str)" in outcome.text


@pytest.mark.parametrize("item", ITEMS)
def test_at_preview_every_item_is_not_evaluated_never_passed_nor_violated(item: str) -> None:
    computed = {
        out.DEVICE_PLUGIN_PODS: UNK,
        out.ALLOCATABLE_GPUS: UNK,
        out.CAPACITY_GPUS: UNK,
        out.SMOKE_DRIVER_VERSION: UNK,
        out.SMOKE_EVENTS: UNK,
        out.SMOKE_PHASE: UNK,
        out.COMPUTE_RESULT: UNK,
        out.COMPUTE_PHASE: UNK,
    }
    o = check_stack(item, [stack(good_outputs(**computed))])
    assert not o.violations and o.not_applicable is not None
    assert "not evaluated: known after deployment" in o.not_applicable


@pytest.mark.parametrize("item", ITEMS)
def test_a_preview_of_a_deployed_stack_still_reads_not_evaluated(item: str) -> None:
    with stack_context_overridden(StackContext(dry_run=True, config={})):
        o = check_stack(item, [stack(good_outputs())])
    assert not o.violations and o.not_applicable and "known after deployment (preview)" in o.not_applicable


def test_image_pulls_in_the_simulated_lab_are_not_observable_not_passed() -> None:
    sim = good_outputs(**{out.SIMULATED: True, out.SMOKE_EVENTS: ["Scheduled"]})
    o = check_stack("events-scheduled-and-pulled", [stack(sim)])
    assert not o.violations and o.not_applicable and "not observable in the simulated lab" in o.not_applicable
