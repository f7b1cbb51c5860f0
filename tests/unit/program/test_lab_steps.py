"""The Lab's steps (program/lab.py) under Pulumi mocks: each child's URN (type and name, under
its parent) and what it is ordered after. A renamed or re-parented resource would make
Pulumi replace a user's lab, so these are the addresses as users' stacks hold them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import variants.sim
from tests.unit import program_harness
from tests.unit.program_harness import MINIKUBE, Run, run_program, sim

pytestmark = pytest.mark.usefixtures("no_host_tools")

LAB = "gpulab:lab:Lab"


@pytest.fixture
def charts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The device plugin, DRA and Kueue charts as local directories; Kueue's controller taken
    as built; the fleet gate's facts (the queue's quota is its allocatable)."""
    monkeypatch.setattr(variants.sim.Sim, "preflight", lambda self, cfg: [])
    for name, version in (("kueue", "0.19.0"), ("nvidia-device-plugin", "0.20.0"), ("dra", "25.12.0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Chart.yaml").write_text(f"name: {name}\nversion: {version}\n")
    fake = program_harness.fake_stdout
    monkeypatch.setattr(
        program_harness,
        "fake_stdout",
        lambda step, gpus=1: (
            json.dumps({"allocatableGpus": 2}) if step == "fleet-check" else fake(step, gpus)
        ),
    )
    return tmp_path


def _children(run: Run, parent: str) -> dict[str, list[str]]:
    """``parent``'s children: ``type::name`` -> the names of what it depends on, sorted; each
    child's URN names it under its parent's type (``...<parent type>$<type>::<name>``)."""
    assert run.error is None, run.error
    names = {r.urn: r.name for r in run.registrations}
    parent_type = run.by_name(parent).typ
    got = {}
    for r in run.registrations:
        if names.get(r.parent) == parent:
            assert r.urn.endswith(f"{parent_type}${r.typ}::{r.name}"), r.urn
            got[f"{r.typ}::{r.name}"] = sorted(names[d] for d in r.dependencies)
    return got


def test_the_operator_lab_in_order(chart: str) -> None:
    run = run_program({**MINIKUBE, "dcgmExporter": True, "benchmarkPod": True})
    assert _children(run, "gpu-lab") == {
        "gpulab:host_probe:HostProbe::host": [],
        "gpulab:minikube:MinikubeCluster::minikube": [],
        "command:local:Command::cluster-identity": ["minikube-cluster", "minikube-device-plugin-addon"],
        "pulumi:providers:kubernetes::k8s": ["cluster-identity", "minikube-cluster"],
        "gpulab:gpu_operator:GpuOperator::gpu-operator": [],
        "gpulab:smoke:SmokeTest::smoke": ["gpu-operator-gate"],
        "gpulab:compute:ComputeCheck::compute": ["smoke-check"],
        # Beside the compute check, not after it.
        "gpulab:dcgm:DcgmMetrics::dcgm": ["smoke-check"],
        "gpulab:benchmark:TflopsBenchmark::benchmark": ["compute-check"],
    }
    assert run.by_name("gpu-lab").typ == LAB


def test_the_device_plugin_lab_with_queues(chart: str, charts: Path) -> None:
    run = run_program(
        sim(
            chart,
            gpuStack="device-plugin",
            devicePluginChartPath=str(charts / "nvidia-device-plugin"),
            queues=True,
            kueueChartPath=str(charts / "kueue"),
        )
    )
    assert _children(run, "gpu-lab") == {
        "gpulab:host_probe:HostProbe::host": [],
        "gpulab:sim:SimCluster::sim": [],
        "command:local:Command::cluster-identity": ["sim-cluster"],
        "pulumi:providers:kubernetes::k8s": ["cluster-identity", "sim-cluster"],
        "gpulab:device_plugin:DevicePluginChartRelease::device-plugin": [],
        "gpulab:fleet:FoundGpuStack::gpu-stack": [],
        "gpulab:smoke:SmokeTest::smoke": ["gpu-stack-gate"],
        "gpulab:compute:ComputeCheck::compute": ["smoke-check"],
        "gpulab:queues:QueueLayer::queues": ["gpu-stack-gate"],
    }
    identity = ["cluster-identity", "sim-cluster"]  # every check runs after the cluster's identity
    assert "--then" not in run.by_name("cluster-identity").argv()  # the operator's CRD check: not here
    assert _children(run, "gpu-stack") == {
        "command:local:Command::gpu-stack-access": identity,
        "kubernetes:core/v1:Namespace::gpu-stack-namespace": ["gpu-stack-access"],
        "command:local:Command::gpu-stack-gate": sorted(
            ["device-plugin-release", "gpu-stack-namespace", *identity]
        ),
    }
    kueue = "kubernetes:kueue.x-k8s.io/v1beta2"
    assert _children(run, "queues") == {
        "kubernetes:core/v1:Namespace::queues-namespace": [],
        "command:local:Command::queues-sweep": identity,
        "kubernetes:helm.sh/v3:Release::queues-release": ["queues-namespace", "queues-sweep"],
        "command:local:Command::queues-controller": ["queues-release"],
        f"{kueue}:ResourceFlavor::queues-flavor": ["queues-controller"],
        f"{kueue}:ClusterQueue::queues-cluster-queue": [
            "gpu-stack-gate",
            "queues-controller",
            "queues-flavor",
        ],
        f"{kueue}:LocalQueue::queues-local-queue": ["queues-cluster-queue", "queues-controller"],
        # After the last GPU Pod's check.
        "command:local:Command::queues-proof": sorted(
            ["compute-check", "gpu-stack-gate", "queues-cluster-queue", "queues-local-queue", *identity]
        ),
    }
    quota: Any = run.by_name("queues-cluster-queue").inputs["spec"]
    assert json.dumps(quota).count('"nominalQuota": 2') == 1, quota


def test_the_dra_lab(chart: str, charts: Path) -> None:
    run = run_program(sim(chart, gpuStack="dra", draChartPath=str(charts / "dra"), simGpus=2))
    children = _children(run, "gpu-lab")
    assert children["gpulab:dra:DraDriver::dra"] == []
    assert children["gpulab:smoke:SmokeTest::smoke"] == ["dra-gate"]
    assert "gpulab:gpu_operator:GpuOperator::gpu-operator" not in children
    assert "gpulab:fleet:FoundGpuStack::gpu-stack" not in children
