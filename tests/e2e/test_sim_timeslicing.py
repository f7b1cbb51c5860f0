"""End to end: the simulated lab with time-slicing (``stacks/sim-timeslicing.yaml``) goes up,
passes the checklist and comes down, through ``scripts/lab``.

The host is the capture ``h200-2gpu``; ``timeSlicingReplicas: 4`` puts the device plugin's
time-slicing config in the chart's ConfigMap, named (with its default key) in the
ClusterPolicy's ``spec.devicePlugin.config``; the kwok node advertises 2 x 4
``nvidia.com/gpu`` with GFD's sharing labels. The gate waits for 8, the smoke Pod asks for one
replica (a Pod's replicas need not be distinct GPUs), and ``pods-see-every-gpu`` is not tested.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from gpulab import checklist
from gpulab import outputs as out
from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.sim

STACK = "sim-timeslicing"


def _api(kubeconfig: str) -> Any:
    from kubernetes import client, config

    conf = client.Configuration()
    config.load_kube_config_from_dict(yaml.safe_load(kubeconfig), client_configuration=conf)
    return client.ApiClient(conf)


def test_the_time_slicing_lab_goes_up_passes_and_comes_down(project: Project) -> None:
    if shared_chart() is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    try:
        t0 = time.monotonic()
        up = project.lab("up", stack=STACK)
        up_s = time.monotonic() - t0
        assert up.returncode == 0, f"{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        o = project.outputs(STACK)
        assert o[out.HOST_GPU_COUNT] == 2 and o[out.ALLOCATABLE_GPUS] == 8
        assert o[out.SMOKE_GPUS] == 1 and o[out.SMOKE_PHASE] == "Succeeded"
        items = checklist.evaluate(o, time_slicing_replicas=4)
        by_id = {i.id: i for i in items}
        assert by_id["allocatable-matches-gpus"].status == "pass", by_id["allocatable-matches-gpus"]
        assert by_id["pods-see-every-gpu"].status == "not-tested", by_id["pods-see-every-gpu"]
        assert checklist.exit_code(items) == 0, [i.report() for i in items]
        _sharing_config_applied(project)
    finally:
        t1 = time.monotonic()
        down = project.lab("destroy", stack=STACK)
        down_s = time.monotonic() - t1
    assert down.returncode == 0, down.stderr[-3000:]
    export = json.loads(project.pulumi("stack", "export", "--stack", STACK).stdout)
    assert not export["deployment"].get("resources")
    assert not (project.dir / ".state" / "sim" / "gpu-lab-ts").exists()
    print(f"\ntimings: make lab {up_s:.1f}s, make destroy {down_s:.1f}s")


def _sharing_config_applied(project: Project) -> None:
    from kubernetes import client

    kubeconfig = json.loads(
        project.pulumi("stack", "output", "--json", "--show-secrets", "--stack", STACK).stdout
    )[out.KUBECONFIG]
    api = _api(kubeconfig)
    policy = client.CustomObjectsApi(api).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
    )
    ref = policy["spec"]["devicePlugin"]["config"]
    assert ref == {"name": "time-slicing-config", "default": "any"}
    cm = client.CoreV1Api(api).read_namespaced_config_map(ref["name"], "gpu-operator")
    sharing = yaml.safe_load(cm.data[ref["default"]])["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    [node] = client.CoreV1Api(api).list_node().items
    labels = node.metadata.labels
    assert (
        labels["nvidia.com/gpu.replicas"] == "4"
        and labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    )
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
