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
    # ownsCluster decides, never the variant's name; outputs from before that key: their leftovers.
    owned = LabOutputs.from_json({**OUTPUTS, o.OWNS_CLUSTER: True})
    assert cl.items(owned, {"leftovers": [CRD]}) == []
    not_owned = LabOutputs.from_json({o.OWNS_CLUSTER: False})
    assert [i.id for i in cl.items(not_owned, {"leftovers": []})] == ["no-leftovers"]
    assert [i.id for i in cl.items(LabOutputs.from_json(OUTPUTS), {"leftovers": [CRD]})] == ["no-leftovers"]


def test_an_object_the_lab_did_not_create_gone_or_replaced_fails_naming_it() -> None:
    untouched = {
        "checked": 2,
        "missing": ["ConfigMap/gpu-operator/team-config"],
        "replaced": ["Namespace/gpu-operator"],
    }
    census = {"leftovers": [CRD], "untouched": untouched}
    item = cl.evaluate(LabOutputs.from_json(OUTPUTS), census)
    assert item.status == Status.FAIL
    assert item.observed == (
        "destroy removed what the lab did not create: ConfigMap/gpu-operator/team-config (gone), "
        "Namespace/gpu-operator (replaced: another UID)"
    )
    assert "foreignObjects" in item.fix


def test_an_adopted_namespace_left_with_everything_in_it_passes_and_says_so() -> None:
    outputs = {**OUTPUTS, o.LEFTOVERS: [CRD, "namespace/gpu-operator"]}
    census = {
        "leftovers": [CRD, "namespace/gpu-operator"],
        "untouched": {"checked": 2, "missing": [], "replaced": []},
    }
    item = cl.evaluate(LabOutputs.from_json(outputs), census)
    assert item.status == Status.PASS, item
    assert "the 2 object(s) the lab did not create are all there with their UIDs" in item.observed
