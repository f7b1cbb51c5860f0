"""End to end: the simulated labs with time-slicing (``stacks/sim-timeslicing.yaml`` and,
with the renamed resource, ``stacks/sim-timeslicing-shared.yaml``) go up, pass the checklist
and come down, through ``scripts/lab``.

The host is the capture ``h200-2gpu``; ``timeSlicingReplicas: 4`` puts the device plugin's
time-slicing config in the chart's ConfigMap, named (with its default key) in the
ClusterPolicy's ``spec.devicePlugin.config``; the kwok node advertises 2 x 4
``nvidia.com/gpu`` with GFD's sharing labels. The gate waits for 8, the smoke Pod asks for one
replica (a Pod's replicas need not be distinct GPUs), and ``pods-see-every-gpu`` is not tested.
With ``timeSlicingRename`` the config says ``renameByDefault: true`` (and
``failRequestsGreaterThanOne: true``), the node advertises ``nvidia.com/gpu.shared`` and no
``nvidia.com/gpu``, and every Pod of the lab asks for ``nvidia.com/gpu.shared``.
"""

from __future__ import annotations

import pytest
import yaml

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.sim

#: stack -> (profile, the whole-GPU resource, renamed)
STACKS = {
    "sim-timeslicing": ("gpu-lab-ts", "nvidia.com/gpu", False),
    "sim-timeslicing-shared": ("gpu-lab-tss", "nvidia.com/gpu.shared", True),
}


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_the_time_slicing_lab_goes_up_passes_and_comes_down(project: Project, stack: str) -> None:
    profile, resource, renamed = STACKS[stack]
    if shared_chart() is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    with project.round_trip(stack, profile):
        o = project.outputs(stack)
        assert o[out.HOST_GPU_COUNT] == 2 and o[out.ALLOCATABLE_GPUS] == 8
        assert o[out.GPU_RESOURCE_NAME] == resource and o[out.SMOKE_RESOURCE] == resource
        assert o[out.SMOKE_GPUS] == 1 and o[out.SMOKE_PHASE] == "Succeeded"
        items = checklist.evaluate(LabOutputs.from_json(o, time_slicing_replicas=4))
        by_id = {i.id: i for i in items}
        assert by_id["allocatable-matches-gpus"].status == "pass", by_id["allocatable-matches-gpus"]
        assert by_id["pods-see-every-gpu"].status == "not-tested", by_id["pods-see-every-gpu"]
        assert checklist.exit_code(items) == 0, [i.report() for i in items]
        _sharing_config_applied(project, stack, resource, renamed)


def _sharing_config_applied(project: Project, stack: str, resource: str, renamed: bool) -> None:
    from kubernetes import client

    api = project.kube_api(stack)
    policy = client.CustomObjectsApi(api).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
    )
    ref = policy["spec"]["devicePlugin"]["config"]
    assert ref == {"name": "time-slicing-config", "default": "any"}
    cm = client.CoreV1Api(api).read_namespaced_config_map(ref["name"], "gpu-operator")
    sharing = yaml.safe_load(cm.data[ref["default"]])["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert sharing.get("renameByDefault", False) is renamed
    assert sharing.get("failRequestsGreaterThanOne", False) is renamed
    [node] = client.CoreV1Api(api).list_node().items
    labels = node.metadata.labels
    assert (
        labels["nvidia.com/gpu.replicas"] == "4"
        and labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    )
    # GFD leaves -SHARED off the product when the resource name says it already.
    assert labels["nvidia.com/gpu.product"].endswith("-SHARED") is not renamed
    assert node.status.allocatable[resource] == "8"
    other = "nvidia.com/gpu" if renamed else "nvidia.com/gpu.shared"
    assert other not in node.status.allocatable
    pods = {p.metadata.name: p for p in client.CoreV1Api(api).list_namespaced_pod("default").items}
    for name in ("gpu-smoke", "gpu-compute"):
        for c in pods[name].spec.containers:
            assert c.resources.limits == {resource: "1"}, (name, c.name, c.resources.limits)
