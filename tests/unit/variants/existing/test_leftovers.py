"""variants.existing.leftovers: the census of what destroy left (pure part)."""

from __future__ import annotations

from typing import Any

from variants.existing import leftovers as lo

CHART = ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"]


def _node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}}}


def test_gpu_labels_keep_only_the_nvidia_ones() -> None:
    nodes = [_node("a", {"nvidia.com/gpu.present": "true", "zone": "x"}), _node("b", {})]
    assert lo.gpu_labels(nodes) == {"a": {"nvidia.com/gpu.present": "true"}}


def test_census_lists_chart_crds_the_namespace_and_the_labels_added_since() -> None:
    before = {"a": {"nvidia.com/gpu.present": "true"}}
    nodes = [
        _node("a", {"nvidia.com/gpu.present": "false", "nvidia.com/gpu.product": "NVIDIA-H200"}),
        _node("b", {"nvidia.com/gpu.deploy.device-plugin": "true"}),
    ]
    ns = {
        "metadata": {"name": "gpu-operator"},
        "status": {
            "phase": "Terminating",
            "conditions": [
                {
                    "type": "NamespaceFinalizersRemaining",
                    "status": "True",
                    "message": "Some content in the namespace has finalizers remaining: "
                    "nvidia.com/finalizer in 1 resource instances",
                }
            ],
        },
    }
    doc = lo.census(
        present_crds=["clusterpolicies.nvidia.com", "other.example.com"],
        chart_crds=CHART,
        namespace=ns,
        nodes=nodes,
        labels_before=before,
    )
    assert doc["crds"] == ["clusterpolicies.nvidia.com"]
    assert doc["namespace"]["phase"] == "Terminating" and "finalizers" in doc["namespace"]["fix"]
    # A label that was there before (even with another value now) is not the lab's.
    assert doc["labels"] == {"a": ["nvidia.com/gpu.product"], "b": ["nvidia.com/gpu.deploy.device-plugin"]}
    assert doc["leftovers"] == [
        "customresourcedefinition/clusterpolicies.nvidia.com",
        "namespace/gpu-operator",
        "node/a label nvidia.com/gpu.product",
        "node/b label nvidia.com/gpu.deploy.device-plugin",
    ]


def test_without_a_before_picture_labels_are_not_counted() -> None:
    doc = lo.census(
        present_crds=[],
        chart_crds=CHART,
        namespace=None,
        nodes=[_node("a", {"nvidia.com/gpu.present": "true"})],
        labels_before=None,
    )
    assert doc == {
        "crds": [],
        "namespace": None,
        "labels": {},
        "labelsBaseline": False,
        "leftovers": [],
        "untouched": None,
    }


# --- what the lab did not create, by UID ---------------------------------------------------

BEFORE = {"Namespace/gpu-operator": "u-ns", "ConfigMap/gpu-operator/team-config": "u-cm"}


def test_the_objects_the_lab_did_not_create_are_compared_by_uid_not_name() -> None:
    assert lo.untouched(BEFORE, dict(BEFORE)) == {"checked": 2, "missing": [], "replaced": []}
    # Deleted and made again under the same name: another UID, so not the object the lab found.
    now = {"Namespace/gpu-operator": "u-ns-2"}
    assert lo.untouched(BEFORE, now) == {
        "checked": 2,
        "missing": ["ConfigMap/gpu-operator/team-config"],
        "replaced": ["Namespace/gpu-operator"],
    }


def test_the_census_counts_them_only_with_a_record_from_before() -> None:
    doc = lo.census(
        present_crds=[],
        chart_crds=CHART,
        namespace=None,
        nodes=[],
        labels_before={},
        foreign_before=BEFORE,
        foreign_now={},
    )
    assert doc["untouched"] == {"checked": 2, "missing": sorted(BEFORE), "replaced": []}
