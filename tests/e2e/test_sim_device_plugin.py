"""End to end: NVIDIA's device plugin chart installed alone (``stacks/sim-device-plugin.yaml``,
``gpuStack: device-plugin``) on the simulated lab, through ``scripts/lab``.

Two kwok nodes of one simulated GPU each, time-slicing 4 replicas. The lab installs NVIDIA's
``nvidia-device-plugin`` chart (NVIDIA/k8s-device-plugin v0.19.0's, from the Go module proxy:
``$GPULAB_DEVICE_PLUGIN_CHART_PATH``) as a real Helm release into the real control plane: its
device-plugin and GFD DaemonSets, the NFD subchart, the config ConfigMap and RBAC are real
objects, scheduled by the real DaemonSet controller and scheduler onto the kwok nodes (kwok
runs their Pods); the nodes' GFD labels and allocatable are simulated. The gate (the fleet check
with ``--installed-in``) requires the chart's device-plugin Pod and GFD's labels on each node;
each node then passes its smoke and compute Pods; the checklist passes. Then, on the same lab,
``devicePluginImage`` under the reserved registry ``registry.invalid`` (the sim's pull-refused
Stage: ErrImagePull, as containerd reports a missing image) upgrades the release, and ``make lab``
fails at the gate within its grace, naming the chart's Pod and why. ``make destroy`` removes the
release with the cluster. Whether NVIDIA's binaries register GPUs is not observable here:
that is the real node's (tests/data/real-runs.json).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from gpulab.config.time_slicing import CONFIG_KEY
from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project

pytestmark = pytest.mark.sim

STACK = "sim-device-plugin"
PROFILE = "gpu-lab-dp"
NAMESPACE = "nvidia-device-plugin"


def _chart() -> Path | None:
    p = os.environ.get("GPULAB_DEVICE_PLUGIN_CHART_PATH", "")
    return Path(p) if p and (Path(p) / "Chart.yaml").is_file() else None


def test_the_device_plugin_chart_goes_up_gates_every_node_and_comes_down(project: Project) -> None:
    chart = _chart()
    if chart is None:
        pytest.skip(
            "no offline device plugin chart: make toolchain-tests sets GPULAB_DEVICE_PLUGIN_CHART_PATH"
        )
    with project.round_trip(STACK, PROFILE):
        o = project.outputs(STACK)
        stack = o[out.GPU_STACK]
        assert stack["mode"] == "device-plugin" and stack["release"] == f"{NAMESPACE}/nvidia-device-plugin"
        assert stack["devicePlugin"] == [f"{NAMESPACE}/nvidia-device-plugin"], stack
        version = yaml.safe_load((chart / "Chart.yaml").read_text())["version"]
        assert o[out.CHART_VERSION] == version and o[out.CHART_SOURCE] == f"local:{chart}"
        assert o[out.OPERATOR_COMPONENTS]["devicePluginChart"] is True
        assert o[out.OPERATOR_COMPONENTS]["timeSlicingReplicas"] == 4
        assert o[out.HOST_GPU_COUNT] == 2 and o[out.ALLOCATABLE_GPUS] == 8
        rows = {r["node"]: r for r in o[out.NODES]}
        assert sorted(rows) == ["gpu-a", "gpu-b"]
        for row in rows.values():
            assert row["expectedSource"] == "gfd:nvidia.com/gpu.count=1 x nvidia.com/gpu.replicas=4", row
            assert row["status"] == "pass" and row["gate"] == row["smoke"] == row["compute"] == "pass", row
        assert o[out.SMOKE_GPUS] == 1 and o[out.SMOKE_PHASE] == "Succeeded"
        items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}
        assert items["every-gpu-node-passes"].status == "pass", items["every-gpu-node-passes"]
        assert items["allocatable-matches-gpus"].status == "pass", items["allocatable-matches-gpus"]
        assert checklist.exit_code(list(items.values())) == 0, [i.report() for i in items.values()]
        _the_release_is_nvidias_chart_with_the_labs_values(project)
        _an_image_the_registry_refuses_fails_the_gate_naming_the_pod(project)


def _the_release_is_nvidias_chart_with_the_labs_values(project: Project) -> None:
    """What Helm made from NVIDIA's chart: the device plugin's and GFD's DaemonSets with one Pod
    on each GPU node, the config-manager sidecar reading the chart's ConfigMap (time-slicing,
    4 replicas), NFD's master; nothing of the GPU Operator."""
    from kubernetes import client

    api = project.kube_api(STACK)
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    dss = {d.metadata.name: d for d in apps.list_namespaced_daemon_set(NAMESPACE).items}
    plugin = dss["nvidia-device-plugin"]
    assert plugin.metadata.labels["app.kubernetes.io/managed-by"] == "Helm"
    names = [c.name for c in plugin.spec.template.spec.containers]
    assert names == ["nvidia-device-plugin-sidecar", "nvidia-device-plugin-ctr"], names
    gfd = [d for n, d in dss.items() if "gpu-feature-discovery" in n]
    assert gfd, sorted(dss)
    # GFD's Pods share the plugin's labels (the chart's templateLabels): one of each per node.
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="app.kubernetes.io/name=nvidia-device-plugin")
    by_owner: dict[str, list[str]] = {}
    for p in pods.items:
        by_owner.setdefault(p.metadata.owner_references[0].name, []).append(p.spec.node_name)
    assert {k: sorted(v) for k, v in by_owner.items()} == {
        "nvidia-device-plugin": ["gpu-a", "gpu-b"],
        "nvidia-device-plugin-gpu-feature-discovery": ["gpu-a", "gpu-b"],
    }
    cm = core.read_namespaced_config_map("nvidia-device-plugin-configs", NAMESPACE)
    sharing = yaml.safe_load(cm.data[CONFIG_KEY])["sharing"]["timeSlicing"]
    assert sharing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    deployments = [d.metadata.name for d in apps.list_namespaced_deployment(NAMESPACE).items]
    assert any("master" in d for d in deployments), deployments
    assert "gpu-operator" not in [n.metadata.name for n in core.list_namespace().items]
    assert json.dumps(plugin.spec.template.spec.affinity.to_dict()).count("pci-10de") == 1


def _an_image_the_registry_refuses_fails_the_gate_naming_the_pod(project: Project) -> None:
    """The release upgraded to an image nobody can pull: the DaemonSet rolls its Pods onto it,
    they wait in ErrImagePull, and the gate stops once one has for gpuGraceSeconds (10 s here),
    not at operatorTimeoutSeconds (600 s), with the chart's Pods and their states."""
    project.pulumi(
        "config",
        "set",
        "--stack",
        STACK,
        "gpu-lab:devicePluginImage",
        "registry.invalid/k8s-device-plugin:v0.19.0",
    )
    t0 = time.monotonic()
    up = project.lab("up", stack=STACK)
    took = time.monotonic() - t0
    said = up.stdout + up.stderr
    assert up.returncode != 0, said[-3000:]
    # The DaemonSet rolls one node at a time: that node's row names its Pod and why.
    assert "is not Ready (ErrImagePull)" in said and f"{NAMESPACE}/nvidia-device-plugin-" in said, said[
        -4000:
    ]
    assert took < 300, f"make lab took {took:.0f}s: the gate waited past the grace for a stuck Pod"
