"""End to end: the simulated lab with MIG (``stacks/sim-mig.yaml``) goes up, passes the
checklist and comes down, through ``scripts/lab`` (what ``GPULAB_STACK=sim-mig make lab`` and
``make destroy`` run: the policy pack, the card, the checklist's exit code).

The host is the constructed capture ``h200-1gpu-mig`` (one H200, MIG enabled, seven 1g.18gb
devices listed by ``nvidia-smi -L``); ``migStrategy mixed`` and the kwok node advertises
``nvidia.com/mig-1g.18gb: 7`` and ``nvidia.com/gpu: 0`` with GFD's MIG labels. The gate waits
for the seven MIG devices, the smoke Pod asks for one, nothing reads "0 GPUs".
"""

from __future__ import annotations

import pytest

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project, kube_api, shared_chart

pytestmark = pytest.mark.sim

MIG = "nvidia.com/mig-1g.18gb"


def test_the_mig_lab_goes_up_passes_the_checklist_and_comes_down(project: Project) -> None:
    if shared_chart() is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    with project.round_trip("sim-mig", "gpu-lab-mig") as up:
        # Preflight's MIG line for the GPU (gpulab.config.mig.mig_findings), shown by pulumi up.
        assert "GPU 0 (NVIDIA H200): MIG mode Enabled, migStrategy mixed; MIG devices: 1g.18gb=7" in up.stdout
        _check(project, up.stdout)


def _check(project: Project, card_stdout: str) -> None:
    o = project.outputs("sim-mig")
    assert o[out.MIG_STRATEGY] == "mixed"
    assert o[out.MIG_RESOURCES] == {MIG: 7}
    assert o[out.EXPECTED_MIG_RESOURCES] == {MIG: 7}
    assert o[out.SMOKE_RESOURCE] == MIG and o[out.SMOKE_PHASE] == "Succeeded"
    assert o[out.ALLOCATABLE_GPUS] == 0 and o[out.HOST_PROBE_SOURCE] == "capture:h200-1gpu-mig"
    assert [g["migMode"] for g in o[out.HOST_GPUS]] == ["Enabled"]
    items = checklist.evaluate(LabOutputs.from_json(o))
    by_id = {i.id: i for i in items}
    assert by_id["allocatable-matches-gpus"].status == "pass", by_id["allocatable-matches-gpus"]
    assert "nvidia.com/mig-1g.18gb=7" in by_id["allocatable-matches-gpus"].observed
    assert checklist.exit_code(items) == 0, [i.report() for i in items]
    assert (project.dir / "baseline-card.json").is_file()

    kubeconfig = project.secret_outputs("sim-mig")[out.KUBECONFIG]
    from kubernetes import client

    core = client.CoreV1Api(kube_api(kubeconfig))
    smoke = core.read_namespaced_pod("gpu-smoke", "default")
    assert smoke.spec.containers[0].resources.limits == {MIG: "1"}
    [node] = core.list_node().items
    assert node.status.allocatable[MIG] == "7" and node.status.allocatable["nvidia.com/gpu"] == "0"
    assert node.metadata.labels["nvidia.com/mig.strategy"] == "mixed"
    assert node.metadata.labels[f"{MIG}.count"] == "7"
