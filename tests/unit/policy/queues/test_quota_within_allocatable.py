"""``cluster-queue-quota-within-allocatable``: the lab's ClusterQueue, its quota against the
allocatable the gate measured (its annotation); refused above it or without it, not evaluated
while the gate has not run."""

from __future__ import annotations

import pytest
from pulumi_policy.proxy import UnknownValueError

from gpulab.config.queues import CLUSTER_QUEUE, FLAVOR, MEASURED_ANNOTATION, cluster_queue_spec
from policy.validators.queues.quota_within_allocatable import ITEM, T_CLUSTER_QUEUE

from ..harness import UNK, check_resource


def _queue(quota: object, measured: object = "2", resource: str = "nvidia.com/gpu") -> dict:
    annotations = {} if measured is None else {MEASURED_ANNOTATION: measured}
    spec = cluster_queue_spec(FLAVOR, resource, 2)
    spec["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = quota
    return {"metadata": {"name": CLUSTER_QUEUE, "annotations": annotations}, "spec": spec}


def test_the_labs_queue_at_the_measured_allocatable_passes() -> None:
    assert check_resource(ITEM, T_CLUSTER_QUEUE, _queue(2)).passed
    assert check_resource(ITEM, T_CLUSTER_QUEUE, _queue(4, "4", "nvidia.com/gpu.shared")).passed
    # The engine hands a policy numbers as floats (seen in make lab: nominalQuota 2.0).
    assert check_resource(ITEM, T_CLUSTER_QUEUE, _queue(2.0)).passed


def test_a_quota_above_allocatable_or_without_the_measurement_is_refused() -> None:
    o = check_resource(ITEM, T_CLUSTER_QUEUE, _queue(3))
    assert not o.passed and "measured allocatable '2'" in o.text, o.text
    assert not check_resource(ITEM, T_CLUSTER_QUEUE, _queue(2, None)).passed
    assert not check_resource(ITEM, T_CLUSTER_QUEUE, _queue("lots")).passed
    assert not check_resource(ITEM, T_CLUSTER_QUEUE, _queue(1.5)).passed


def test_before_the_gate_ran_it_is_not_evaluated_and_other_queues_are_not_its() -> None:
    # The SDK reports an unknown value read by a resource policy as not evaluated (a preview).
    with pytest.raises(UnknownValueError):
        check_resource(ITEM, T_CLUSTER_QUEUE, _queue(UNK, UNK))
    other = _queue(9)
    other["metadata"]["name"] = "someone-elses"
    assert ITEM not in check_resource(ITEM, T_CLUSTER_QUEUE, other).text
