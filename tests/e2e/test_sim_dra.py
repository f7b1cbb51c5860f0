"""End to end: DRA mode (``stacks/sim-dra.yaml``, ``gpuStack: dra``) on the simulated lab, through
``scripts/lab``.

One kwok node of two simulated H200s. The lab installs NVIDIA's DRA driver chart
(sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0's, from the Go module proxy: ``$GPULAB_DRA_CHART_PATH``)
as a real Helm release into the real Kubernetes v1.36.3 control plane: its DeviceClass
``gpu.nvidia.com`` is real. The sim publishes the node's ResourceSlice (driver ``gpu.nvidia.com``,
devices ``gpu-0``/``gpu-1`` with the capture's UUIDs, labelled simulated); the node advertises no
``nvidia.com/gpu``. The smoke Pod claims every GPU through a ResourceClaimTemplate; the real
scheduler allocates the claim and reserves it for the Pod, the resourceclaim controller records
it in the Pod's ``resourceClaimStatuses``, and the check compares the UUIDs the (simulated) log
lists with the allocated devices' UUIDs from the slice. The compute Pod claims one GPU per vectorAdd
container the same way. ``make destroy`` leaves nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.card.model import build_card
from tests.support.sandbox import Project

pytestmark = pytest.mark.sim

STACK = "sim-dra"
PROFILE = "gpu-lab-dra"
UUIDS = ["GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"]


def _chart() -> Path | None:
    p = os.environ.get("GPULAB_DRA_CHART_PATH", "")
    return Path(p) if p and (Path(p) / "Chart.yaml").is_file() else None


def test_dra_mode_allocates_the_smoke_pods_gpus_through_a_claim_and_comes_down(project: Project) -> None:
    chart = _chart()
    if chart is None:
        pytest.skip("no offline DRA driver chart: make toolchain-tests sets GPULAB_DRA_CHART_PATH")
    with project.round_trip(STACK, PROFILE):
        o = project.outputs(STACK)
        assert o[out.ALLOCATION_PATH] == "dra"
        assert o[out.GPU_STACK]["mode"] == "dra", o[out.GPU_STACK]
        assert o[out.CHART_VERSION] == yaml.safe_load((chart / "Chart.yaml").read_text())["version"]
        dra = o[out.DRA]
        assert dra["deviceClass"] == "gpu.nvidia.com" and dra["driver"] == "gpu.nvidia.com"
        (node,) = dra["slices"]
        assert node["simulated"] is True and node["pool"] == node["node"]
        assert [(d["name"], d["uuid"]) for d in node["devices"]] == [("gpu-0", UUIDS[0]), ("gpu-1", UUIDS[1])]
        claim = dra["claim"]
        assert claim["podClaim"] == "gpus" and claim["reservedForPod"] is True, claim
        assert claim["reservedFor"] == ["gpu-smoke"], claim
        assert sorted(d["uuid"] for d in claim["devices"]) == UUIDS, claim
        assert {d["driver"] for d in claim["devices"]} == {"gpu.nvidia.com"}
        assert claim["uuidsMatch"] == "match"
        assert sorted(o[out.SMOKE_GPU_UUIDS]) == UUIDS and o[out.SMOKE_PHASE] == "Succeeded"
        assert o[out.ALLOCATABLE_GPUS] == 2
        outputs = LabOutputs.from_json(o)
        card = build_card(outputs)
        assert card["smoke"]["allocationPath"]["value"] == "dra"
        sharing = next(r for r in card["capabilityBoundary"] if r["capability"].startswith("GPU sharing"))
        assert sharing["status"].startswith("have, measured (dra_support"), sharing
        assert "simulated" in sharing["status"]
        # The compute Pod: one request of one GPU per vectorAdd container, each saw its own.
        assert o[out.COMPUTE_RESULT] == "passed" and o[out.COMPUTE_GPUS] == 2, (
            o[out.COMPUTE_RESULT],
            o[out.COMPUTE_GPUS],
        )
        items = {i.id: i for i in checklist.evaluate(outputs)}
        assert items["gpu-allocated-through-dra"].status == "pass", items["gpu-allocated-through-dra"]
        assert items["device-plugin-stable"].status == "not-tested"
        assert checklist.exit_code(list(items.values())) == 0, [i.report() for i in items.values()]
        _the_cluster_holds_the_claim_and_no_counted_gpu(project, claim["claim"])


def _the_cluster_holds_the_claim_and_no_counted_gpu(project: Project, claim: str) -> None:
    """What the API server holds after the run: the smoke Pod's claim status naming the claim the
    check saw allocated, that claim deleted by the resourceclaim controller once the Pod was done
    (why the check watches it: gpulab.kube.dra.observe_claim), the Pod asking for no nvidia.com/gpu
    and no scheduling gate left, the node advertising none, the chart's DeviceClass."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = project.kube_api(STACK)
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    pod = core.read_namespaced_pod("gpu-smoke", "default")
    assert [(s.name, s.resource_claim_name) for s in pod.status.resource_claim_statuses] == [("gpus", claim)]
    assert (
        not pod.spec.scheduling_gates
        and pod.spec.resource_claims[0].resource_claim_template_name == "gpu-smoke-gpus"
    )
    limits = pod.spec.containers[0].resources.limits or {}
    assert "nvidia.com/gpu" not in limits, limits
    with pytest.raises(ApiException) as gone:
        custom.get_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", claim)
    assert gone.value.status == 404
    (node,) = core.list_node().items
    assert "nvidia.com/gpu" not in (node.status.allocatable or {}), node.status.allocatable
    classes = custom.list_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses")["items"]
    assert "gpu.nvidia.com" in [c["metadata"]["name"] for c in classes]
