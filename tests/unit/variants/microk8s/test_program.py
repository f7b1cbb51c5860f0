"""The MicroK8s lab under Pulumi mocks: its one cluster command, the operator's values for the
snap's containerd (and the policy that checks them), and the smoke Pod on the default runtime."""

from __future__ import annotations

import json

import pytest

import variants.base
import variants.microk8s
from gpulab.core import outputs as out
from policy import stack_context, validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden
from tests.unit import program_harness
from tests.unit.program_harness import Run, run_program

MICROK8S = {"cluster": "microk8s", "hostProbe": "capture"}
ORIGINAL_FAKE_STDOUT = program_harness.fake_stdout


def _fake_stdout(purpose: str, gpus: int = 1) -> str:
    if purpose == "microk8s-install":
        return json.dumps(
            {
                "kubeconfig": program_harness.KUBECONFIG,
                "kubernetesVersion": "v1.35.0",
                "channel": "1.35/stable",
                "installed": True,
            }
        )
    return ORIGINAL_FAKE_STDOUT(purpose, gpus)


@pytest.fixture(autouse=True)
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No host here has snapd or a GPU: the host checks are tested on recorded output elsewhere."""
    monkeypatch.setattr(program_harness, "fake_stdout", _fake_stdout)
    monkeypatch.setattr(variants.base, "missing_tools", lambda spec, *_: [])
    monkeypatch.setattr(variants.microk8s, "host_findings", lambda channel: [])
    monkeypatch.delenv("GPULAB_CHART_PATH", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)


def _argv(run: Run, name: str, which: str = "create") -> list[str]:
    return run.by_name(name).argv(which)


def test_the_lab_installs_and_removes_the_snap_through_one_command() -> None:
    run = run_program({**MICROK8S, "microk8sChannel": "1.36/stable"})
    assert run.error is None, run.error
    cl = run.by_name("microk8s-cluster")
    assert _argv(run, "microk8s-cluster") == [
        "python",
        "-m",
        "variants.microk8s.ctl",
        "up",
        "--channel",
        "1.36/stable",
        "--timeout",
        "600",
    ]
    assert _argv(run, "microk8s-cluster", "delete") == ["python", "-m", "variants.microk8s.ctl", "down"]
    assert cl.delete_before_replace is True and "stdout" in cl.secret_outputs
    assert run.outputs[out.CLUSTER_KIND] == "microk8s"


def test_the_toolkit_points_at_the_snap_s_containerd_and_the_policy_passes_it() -> None:
    run = run_program(MICROK8S)
    assert run.error is None, run.error
    rel = run.by_name("gpu-operator-release").inputs
    values = rel["values"]
    assert values["toolkit"]["enabled"] is True and values["cdi"] == {"enabled": True}
    assert {e["name"]: e["value"] for e in values["toolkit"]["env"]} == dict(variants.microk8s.TOOLKIT_ENV)
    assert "env" not in values["devicePlugin"]  # the chart's device list (CDI)
    assert "runtimeClassName" not in run.by_name("smoke-pod").inputs["spec"]
    ctx = StackContext(dry_run=False, config={"gpu-lab:cluster": "microk8s"})
    with stack_context_overridden(ctx):
        (finding,) = validators.check_toolkit_runtime(validators.T_RELEASE, rel, {}, stack_context.current())
    assert finding.status == validators.PASS, finding
    # The chart's defaults (stock containerd's paths) fail the same policy on MicroK8s.
    stock = {**rel, "values": {**values, "toolkit": {"enabled": True}}}
    with stack_context_overridden(ctx):
        (finding,) = validators.check_toolkit_runtime(
            validators.T_RELEASE, stock, {}, stack_context.current()
        )
    assert (
        finding.status == validators.FAIL and "/var/snap/microk8s/common/run/containerd.sock" in finding.fix
    )
