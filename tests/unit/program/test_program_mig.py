"""The program under mocks with MIG and with the GPU-less simulated node: what the gate
expects, what the smoke Pod asks for, the operator's mig.strategy, the MIG outputs."""

from __future__ import annotations

import pytest

from gpulab.core import outputs as out
from gpulab.host.preflight import PreflightError
from tests.unit.program_harness import run_program

pytestmark = pytest.mark.usefixtures("no_host_tools")


def sim_mig(chart: str) -> dict[str, str]:
    """stacks/sim-mig.yaml's settings."""
    return {
        "cluster": "sim",
        "chartPath": chart,
        "capture": "h200-1gpu-mig",
        "migStrategy": "mixed",
        "simMigDevices": "1g.18gb=7",
        "gpuGraceSeconds": "10",
    }


def test_sim_mig_expects_the_probes_mig_devices_and_the_smoke_pod_asks_for_one(chart: str) -> None:
    run = run_program(sim_mig(chart))
    assert run.error is None, run.error
    gate = run.by_name("gpu-operator-gate").argv()
    assert gate[gate.index("--mig-strategy") + 1] == "mixed"
    assert gate[gate.index("--expected-mig") + 1] == "1g.18gb=7"
    assert gate[gate.index("--grace") + 1] == "10" and gate[gate.index("--expected-gpus") + 1] == "0"
    limits = run.by_name("smoke-pod").inputs["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/mig-1g.18gb": "1"}
    assert run.by_name("gpu-operator-release").inputs["values"]["mig"] == {"strategy": "mixed"}
    up = run.by_name("sim-cluster").argv()
    assert up[up.index("--mig") + 1] == "1g.18gb=7" and up[up.index("--capture") + 1] == "h200-1gpu-mig"
    assert run.outputs[out.MIG_STRATEGY] == "mixed"
    assert run.outputs[out.EXPECTED_MIG_RESOURCES] == {"nvidia.com/mig-1g.18gb": 7}
    assert run.outputs[out.SMOKE_RESOURCE] == "nvidia.com/mig-1g.18gb"
    assert out.MIG_RESOURCES in run.exported


def test_a_mig_enabled_host_with_strategy_none_stops_in_preflight(chart: str) -> None:
    run = run_program({**sim_mig(chart), "migStrategy": "none", "simMigDevices": ""})
    assert isinstance(run.error, PreflightError), run.error
    assert "mig-mode" in str(run.error) and "gpu-operator#637" in str(run.error)
    assert not run.registrations


def test_the_gpu_less_sim_node_is_made_and_the_gate_still_expects_the_hosts_gpu(chart: str) -> None:
    run = run_program({"cluster": "sim", "chartPath": chart, "simGpus": "0"})
    assert run.error is None, run.error
    up = run.by_name("sim-cluster").argv()
    assert up[up.index("--gpus") + 1] == "0" and "--capture" not in up
    gate = run.by_name("gpu-operator-gate").argv()
    assert gate[gate.index("--expected-gpus") + 1] == "1" and "--mig-strategy" not in gate
    # The smoke Pod waits on the gate, so a failed gate never creates it.
    assert run.urn_of("gpu-operator-gate") in run.by_name("smoke").dependencies
