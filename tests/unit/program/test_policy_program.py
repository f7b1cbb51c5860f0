"""The lab's own program satisfies its policy pack: every resource the real ``__main__.py``
registers (under the mock harness of test_program.py) goes through every resource policy,
and the stack policies that run at preview see what they need. No engine."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import PolicyResource

from gpulab.core import outputs as out
from gpulab.core.argv import decode, encode
from policy import validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden
from tests.unit.policy.harness import Outcome, _opts, check_resource, check_stack
from tests.unit.program_harness import Run, run_program

pytestmark = pytest.mark.usefixtures("no_host_tools")


@pytest.fixture(autouse=True)
def fresh_ledger() -> Any:
    validators.LEDGER.clear()
    yield
    validators.LEDGER.clear()


def resource_outcomes(run: Run, ctx: StackContext) -> dict[tuple[str, str], Outcome]:
    """Every resource policy on every registered resource, under stack context ``ctx``."""
    assert run.error is None, run.error
    results = {}
    with stack_context_overridden(ctx):
        for reg in run.registrations:
            for spec in validators.SPECS:
                if spec.kind == "resource":
                    results[(spec.name, reg.name)] = check_resource(spec.name, reg.typ, reg.inputs)
    return results


def stack_resources(run: Run) -> list[PolicyResource]:
    """The registrations as stack-validation resources (inputs standing in for state), plus
    the stack resource with the program's known exports."""
    from pulumi_policy.proxy import unknown_checking_proxy

    resources = [
        PolicyResource(
            r.typ, unknown_checking_proxy(dict(r.inputs)), r.urn, r.name, _opts(), None, None, [], {}
        )
        for r in run.registrations
    ]
    stack_urn = "urn:pulumi:test::gpu-lab::pulumi:pulumi:Stack::gpu-lab-test"
    resources.append(
        PolicyResource(
            validators.T_STACK,
            unknown_checking_proxy(dict(run.outputs)),
            stack_urn,
            "s",
            _opts(),
            None,
            None,
            [],
            {},
        )
    )
    return resources


def test_minikube_lab_passes_every_resource_policy() -> None:
    run = run_program({"cluster": "minikube", "hostProbe": "capture"}, preview=True)
    ctx = StackContext(
        dry_run=True,
        config={"gpu-lab:cluster": "minikube", "gpu-lab:hostProbe": "capture"},
    )
    results = resource_outcomes(run, ctx)
    failed = {k: o.text for k, o in results.items() if o.violations}
    assert failed == {}
    # The policies did look at the lab's resources (not vacuous passes).
    names = {r.name for r in run.registrations}
    assert {"minikube-cluster", "gpu-operator-release", "smoke-pod"} <= names
    kinds = {(r.typ, r.name) for r in run.registrations}
    assert (validators.T_COMMAND, "minikube-cluster") in kinds


def test_sim_lab_passes_every_resource_policy(chart: str) -> None:
    run = run_program({"cluster": "sim", "chartPath": chart}, preview=True)
    results = resource_outcomes(run, StackContext(dry_run=True, config={"gpu-lab:cluster": "sim"}))
    assert {k: o.text for k, o in results.items() if o.violations} == {}


def test_minikube_lab_with_a_too_small_node_is_refused_at_preview() -> None:
    # gpulab.config.lab refuses cpus < 4 before any resource exists; the policy is the second
    # line for a program that builds the command some other way.
    run = run_program({"cluster": "minikube", "hostProbe": "capture"}, preview=True)
    cmd = dict(run.by_name("minikube-cluster").inputs)
    create = decode(cmd["create"])
    create[create.index("--cpus") + 1] = "2"
    cmd["create"] = encode(create)
    assert "--cpus=2" in check_resource("minikube-start-resources", validators.T_COMMAND, cmd).text


def test_stack_policies_at_preview_pass_on_owner_and_cuda(chart: str) -> None:
    run = run_program({"cluster": "sim", "chartPath": chart}, preview=True)
    resources = stack_resources(run)
    with stack_context_overridden(StackContext(dry_run=True, config={"gpu-lab:cluster": "sim"})):
        assert check_stack("single-device-plugin-owner", resources).passed
        assert check_stack("smoke-image-cuda-fits-host", resources).passed


def test_a_cuda_131_image_on_the_130_capture_fails_at_preview(chart: str) -> None:
    image = "nvidia/cuda:13.1.0-base-ubuntu24.04"
    run = run_program({"cluster": "sim", "chartPath": chart, "smokeImage": image}, preview=True)
    with stack_context_overridden(StackContext(dry_run=True, config={"gpu-lab:cluster": "sim"})):
        o = check_stack("smoke-image-cuda-fits-host", stack_resources(run))
    assert "needs CUDA 13.1" in o.text and "13.0 at most" in o.text
    assert "nvidia/cuda:13.0.2-base-ubuntu24.04" in o.text


def test_minikube_lab_owner_is_the_operator_with_the_addon_disabled() -> None:
    run = run_program({"cluster": "minikube", "hostProbe": "capture"}, preview=True)
    with stack_context_overridden(StackContext(dry_run=True, config={"gpu-lab:cluster": "minikube"})):
        assert check_stack("single-device-plugin-owner", stack_resources(run), {"owner": "operator"}).passed


def test_checklist_after_a_mocked_up_of_the_sim_lab(chart: str) -> None:
    run = run_program({"cluster": "sim", "chartPath": chart}, preview=False)
    assert run.outputs[out.SIMULATED] is True
    resources = stack_resources(run)
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "sim"})):
        outcomes = {
            item: check_stack(item, resources)
            for item in (
                "device-plugin-stable",
                "allocatable-matches-gpus",
                "driver-version-matches",
                "events-scheduled-and-pulled",
                "baseline-card-complete",
            )
        }
    assert {k: o.text for k, o in outcomes.items() if o.violations} == {}
    # The harness's fake smoke events include Pulled, but the sim lab cannot pull: not observable.
    assert outcomes["events-scheduled-and-pulled"].not_applicable is not None
    assert "not observable in the simulated lab" in outcomes["events-scheduled-and-pulled"].not_applicable


def test_the_dra_lab_passes_every_policy_at_preview(
    chart: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """gpuStack dra: the smoke and compute Pods claim their GPUs (no nvidia.com/gpu), and the
    resource and stack policies that run at preview accept them."""
    (tmp_path / "Chart.yaml").write_text('apiVersion: v2\nname: dra-driver-nvidia-gpu\nversion: "0.5.0"\n')
    monkeypatch.setenv("GPULAB_DRA_CHART_PATH", str(tmp_path))
    config = {"cluster": "sim", "chartPath": chart, "gpuStack": "dra", "simGpus": 2}
    run = run_program(config, preview=True)
    ctx = StackContext(dry_run=True, config={"gpu-lab:cluster": "sim", "gpu-lab:gpuStack": "dra"})
    results = resource_outcomes(run, ctx)
    assert {k: o.text for k, o in results.items() if o.violations} == {}
    assert results[("smoke-pod-dra-claim", "smoke-pod")].passed
    assert results[("smoke-pod-dra-claim", "smoke-claim-template")].passed
    resources = stack_resources(run)
    with stack_context_overridden(ctx):
        failed = {
            s.name: check_stack(s.name, resources).text
            for s in validators.SPECS
            if s.kind == "stack" and check_stack(s.name, resources).violations
        }
    assert failed == {}
