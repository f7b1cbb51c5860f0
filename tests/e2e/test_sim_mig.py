"""End to end: the simulated lab with MIG (``stacks/sim-mig.yaml``) goes up, passes the
checklist and comes down, through ``scripts/lab`` (what ``GPULAB_STACK=sim-mig make lab`` and
``make destroy`` run: the policy pack, the card, the checklist's exit code).

The host is the constructed capture ``h200-1gpu-mig`` (one H200, MIG enabled, seven 1g.18gb
devices listed by ``nvidia-smi -L``); ``migStrategy mixed`` and the kwok node advertises
``nvidia.com/mig-1g.18gb: 7`` and ``nvidia.com/gpu: 0`` with GFD's MIG labels. The gate waits
for the seven MIG devices, the smoke Pod asks for one, nothing reads "0 GPUs".
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

MIG = "nvidia.com/mig-1g.18gb"


def _api(kubeconfig: str) -> Any:
    from kubernetes import client, config

    conf = client.Configuration()
    config.load_kube_config_from_dict(yaml.safe_load(kubeconfig), client_configuration=conf)
    return client.ApiClient(conf)


def test_the_mig_lab_goes_up_passes_the_checklist_and_comes_down(project: Project) -> None:
    if shared_chart() is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    try:
        t0 = time.monotonic()
        up = project.lab("up", stack="sim-mig")
        up_s = time.monotonic() - t0
        assert up.returncode == 0, f"{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
        # Preflight's MIG line for the GPU (gpulab.mig.mig_findings), shown by pulumi up.
        assert "GPU 0 (NVIDIA H200): MIG mode Enabled, migStrategy mixed; MIG devices: 1g.18gb=7" in up.stdout
        _check(project, up.stdout)
    finally:
        t1 = time.monotonic()
        down = project.lab("destroy", stack="sim-mig")
        down_s = time.monotonic() - t1
    assert down.returncode == 0, down.stderr[-3000:]
    export = json.loads(project.pulumi("stack", "export", "--stack", "sim-mig").stdout)
    assert not export["deployment"].get("resources")
    assert not (project.dir / ".state" / "sim" / "gpu-lab-mig").exists()
    print(f"\ntimings: make lab {up_s:.1f}s, make destroy {down_s:.1f}s")


def _check(project: Project, card_stdout: str) -> None:
    o = project.outputs("sim-mig")
    assert o[out.MIG_STRATEGY] == "mixed"
    assert o[out.MIG_RESOURCES] == {MIG: 7}
    assert o[out.EXPECTED_MIG_RESOURCES] == {MIG: 7}
    assert o[out.SMOKE_RESOURCE] == MIG and o[out.SMOKE_PHASE] == "Succeeded"
    assert o[out.ALLOCATABLE_GPUS] == 0 and o[out.HOST_PROBE_SOURCE] == "capture:h200-1gpu-mig"
    assert [g["migMode"] for g in o[out.HOST_GPUS]] == ["Enabled"]
    items = checklist.evaluate(o)
    by_id = {i.id: i for i in items}
    assert by_id["allocatable-matches-gpus"].status == "pass", by_id["allocatable-matches-gpus"]
    assert "nvidia.com/mig-1g.18gb=7" in by_id["allocatable-matches-gpus"].observed
    assert checklist.exit_code(items) == 0, [i.report() for i in items]
    assert (project.dir / "baseline-card.json").is_file()

    kubeconfig = json.loads(
        project.pulumi("stack", "output", "--json", "--show-secrets", "--stack", "sim-mig").stdout
    )[out.KUBECONFIG]
    from kubernetes import client

    core = client.CoreV1Api(_api(kubeconfig))
    smoke = core.read_namespaced_pod("gpu-smoke", "default")
    assert smoke.spec.containers[0].resources.limits == {MIG: "1"}
    [node] = core.list_node().items
    assert node.status.allocatable[MIG] == "7" and node.status.allocatable["nvidia.com/gpu"] == "0"
    assert node.metadata.labels["nvidia.com/mig.strategy"] == "mixed"
    assert node.metadata.labels[f"{MIG}.count"] == "7"
