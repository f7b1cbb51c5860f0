"""gpulab.verdict.items.leftovers: the ``no-leftovers`` item from the outputs and a census."""

from __future__ import annotations

from gpulab.core import outputs as o
from gpulab.core.findings import Status
from gpulab.core.outputs import LabOutputs
from gpulab.verdict.items import leftovers as cl

CRD = "customresourcedefinition/clusterpolicies.nvidia.com"
OUTPUTS = {o.CLUSTER_KIND: "existing", o.LEFTOVERS: [CRD]}


def test_exactly_the_promised_leftovers_pass() -> None:
    item = cl.evaluate(LabOutputs.from_json(OUTPUTS), {"leftovers": [CRD], "labels": {}, "namespace": None})
    assert (item.id, item.status) == ("no-leftovers", Status.PASS)
    assert CRD in item.observed and item.fix == ""


def test_a_promised_crd_already_gone_still_passes_and_says_so() -> None:
    item = cl.evaluate(LabOutputs.from_json(OUTPUTS), {"leftovers": []})
    assert item.status == Status.PASS and "already gone" in item.observed


def test_unpromised_leftovers_fail_with_the_commands_that_remove_them() -> None:
    census = {
        "leftovers": [
            CRD,
            "customresourcedefinition/nvidiadrivers.nvidia.com",
            "namespace/gpu-operator",
            "node/gpu-sim-node label nvidia.com/gpu.product",
            "node/gpu-sim-node label nvidia.com/gpu.deploy.dcgm",
        ],
        "namespace": {
            "name": "gpu-operator",
            "phase": "Terminating",
            "fix": "kubectl -n gpu-operator patch ...",
        },
        "labels": {"gpu-sim-node": ["nvidia.com/gpu.deploy.dcgm", "nvidia.com/gpu.product"]},
    }
    item = cl.evaluate(LabOutputs.from_json(OUTPUTS), census)
    assert item.status == Status.FAIL
    assert CRD not in item.observed.split(": ", 1)[1]
    assert "kubectl delete crd nvidiadrivers.nvidia.com" in item.fix
    assert "scripts/pulumi config set gpu-lab:removeCrds true" in item.fix
    assert "kubectl -n gpu-operator patch" in item.fix
    assert "kubectl label node gpu-sim-node nvidia.com/gpu.deploy.dcgm- nvidia.com/gpu.product-" in item.fix


def test_before_destroy_the_item_is_not_evaluated_and_the_checklist_gets_nothing() -> None:
    assert cl.evaluate(LabOutputs.from_json(OUTPUTS), None).status == Status.NOT_EVALUATED
    assert cl.items(LabOutputs.from_json(OUTPUTS), None) == []
    assert cl.items(LabOutputs.from_json({o.CLUSTER_KIND: "sim"}), {"leftovers": []}) == []
    assert [i.id for i in cl.items(LabOutputs.from_json(OUTPUTS), {"leftovers": [CRD]})] == ["no-leftovers"]
