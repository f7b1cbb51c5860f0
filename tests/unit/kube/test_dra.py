"""gpulab.kube.dra: the slices read per node, a claim's allocation resolved to the slice's UUIDs,
and the container's listing held against it."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.kube import dra
from gpulab.kube.client import GateError
from variants.sim.ctl.dra import resource_slice

UUIDS = ["GPU-a", "GPU-b"]


def _slices() -> list[dict[str, Any]]:
    mine = resource_slice(
        "node-a", [(0, "NVIDIA H200", UUIDS[0]), (1, "NVIDIA H200", UUIDS[1])], "580.1", "13.0", None
    )
    other = {"spec": {"driver": "example.com/other", "nodeName": "node-a", "devices": [{"name": "x"}]}}
    return [mine, other]


def _claim(*devices: str, driver: str = "gpu.nvidia.com") -> dict[str, Any]:
    results = [{"request": "gpus", "driver": driver, "pool": "node-a", "device": d} for d in devices]
    return {
        "metadata": {"name": "gpu-smoke-gpus-x1"},
        "status": {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"name": "gpu-smoke", "uid": "u1"}],
        },
    }


def test_slices_are_read_per_node_for_the_driver_only() -> None:
    rows = dra.slice_rows(_slices(), "gpu.nvidia.com")
    assert list(rows) == ["node-a"]
    assert [(d["name"], d["uuid"]) for d in rows["node-a"]["devices"]] == [
        ("gpu-0", "GPU-a"),
        ("gpu-1", "GPU-b"),
    ]
    assert rows["node-a"]["simulated"] is True
    assert dra.missing(rows, ["node-a", "node-b"]) == ["node-b: no ResourceSlice lists a GPU"]


def test_an_allocation_resolves_to_the_slices_uuids() -> None:
    rows = dra.slice_rows(_slices(), "gpu.nvidia.com")
    got = dra.allocated(_claim("gpu-1"), rows, "gpu.nvidia.com")
    assert got == [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-1", "uuid": "GPU-b"}
    ]
    with pytest.raises(GateError, match=r"no status\.allocation"):
        dra.allocated({"metadata": {"name": "c"}, "status": {}}, rows, "gpu.nvidia.com")
    with pytest.raises(GateError, match="which no ResourceSlice"):
        dra.allocated(_claim("gpu-7"), rows, "gpu.nvidia.com")


def test_the_container_must_list_exactly_the_allocated_devices() -> None:
    facts = {"claim": "c", "devices": [{"uuid": "GPU-b"}]}
    assert dra.compare(["GPU-b"], facts) == "match"
    with pytest.raises(
        GateError, match="saw \\['GPU-a', 'GPU-b'\\] but its claim c was allocated \\['GPU-b'\\]"
    ):
        dra.compare(["GPU-a", "GPU-b"], facts)
    with pytest.raises(GateError, match="listed no GPU"):
        dra.compare(None, facts)


def _owned(doc: dict[str, Any], uid: str = "u1") -> dict[str, Any]:
    doc["metadata"]["ownerReferences"] = [
        {"kind": "Pod", "name": "gpu-smoke", "uid": uid, "controller": True}
    ]
    return doc


def test_the_claim_must_be_the_one_the_pods_status_names(monkeypatch: pytest.MonkeyPatch) -> None:
    class Custom:
        def __init__(self, api: Any) -> None: ...

        def list_cluster_custom_object(self, *a: Any) -> dict[str, Any]:
            return {"items": _slices()}

    from kubernetes import client

    monkeypatch.setattr(client, "CustomObjectsApi", Custom)
    observed = _owned(_claim("gpu-0"))
    pod = {"metadata": {"name": "gpu-smoke", "uid": "u1"}, "status": {}}
    with pytest.raises(GateError, match="does not name the claim gpu-smoke-gpus-x1"):
        dra.claim_facts(None, "default", pod, observed, "gpu.nvidia.com", "gpus")
    pod["status"] = {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "gpu-smoke-gpus-x1"}]}
    facts = dra.claim_facts(None, "default", pod, observed, "gpu.nvidia.com", "gpus")
    assert facts["claim"] == "gpu-smoke-gpus-x1" and facts["reservedFor"] == ["gpu-smoke"]
    assert [d["uuid"] for d in facts["devices"]] == ["GPU-a"]


def test_a_claim_counts_only_allocated_reserved_and_owned_by_the_pod() -> None:
    doc = _owned(_claim("gpu-0"))
    assert dra._owned_by(doc, "u1") and dra._reserved_for(doc, "u1")
    assert not dra._owned_by(doc, "u2") and not dra._reserved_for(doc, "u2")
    doc["status"]["allocation"] = None
    assert not dra._reserved_for(doc, "u1")


def test_the_claim_is_watched_before_the_gate_is_lifted(monkeypatch: pytest.MonkeyPatch) -> None:
    """observe_claim lists, lifts the Pod's scheduling gate, then takes the claim from the watch
    the moment it is allocated and reserved for the Pod (a done Pod's claim is deleted)."""
    from types import SimpleNamespace

    from kubernetes import client, watch

    calls: list[str] = []
    gate = "gpulab.dev/claim-observed"
    pod = SimpleNamespace(
        metadata=SimpleNamespace(uid="u1"),
        spec=SimpleNamespace(scheduling_gates=[SimpleNamespace(name=gate)]),
        status=SimpleNamespace(conditions=[]),
    )

    class Core:
        def __init__(self, api: Any) -> None: ...

        def read_namespaced_pod(self, *a: Any) -> Any:
            return pod

        def patch_namespaced_pod(self, name: str, ns: str, body: Any) -> None:
            calls.append(f"patch {body}")

    class Custom:
        def __init__(self, api: Any) -> None: ...

        def list_namespaced_custom_object(self, *a: Any, **kw: Any) -> dict[str, Any]:
            calls.append("list")
            pending = _owned(_claim("gpu-0"))
            pending["status"] = {}
            return {"metadata": {"resourceVersion": "7"}, "items": [pending]}

    class Watch:
        def stream(self, fn: Any, *a: Any, **kw: Any) -> Any:
            calls.append(f"watch from {kw['resource_version']}")
            yield {"type": "MODIFIED", "object": _owned(_claim("gpu-0"), uid="other")}
            yield {"type": "MODIFIED", "object": _owned(_claim("gpu-1"))}

        def stop(self) -> None:
            calls.append("stop")

    monkeypatch.setattr(client, "CoreV1Api", Core)
    monkeypatch.setattr(client, "CustomObjectsApi", Custom)
    monkeypatch.setattr(watch, "Watch", Watch)
    got = dra.observe_claim(None, "default", "gpu-smoke", gate, 30)
    assert got["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-1"
    assert calls == [
        "list",
        "patch [{'op': 'replace', 'path': '/spec/schedulingGates', 'value': []}]",
        "watch from 7",
        "stop",
    ]
