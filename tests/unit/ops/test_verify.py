"""ops.verify: the URNs `make verify` replaces (gate, smoke Pod, compute Pod), nothing else."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from ops import verify

PREFIX = "urn:pulumi:sim::gpu-lab::gpulab:lab:Lab"
GATE = f"{PREFIX}$gpulab:gpu_operator:GpuOperator$command:local:Command::gpu-operator-gate"
SMOKE = f"{PREFIX}$gpulab:smoke:SmokeTest$kubernetes:core/v1:Pod::smoke-pod"
BENCH = f"{PREFIX}$gpulab:benchmark:TflopsBenchmark$kubernetes:core/v1:Pod::benchmark-pod"
OTHERS = (
    f"{PREFIX}$command:local:Command::cluster-identity",
    f"{PREFIX}$gpulab:smoke:SmokeTest$command:local:Command::smoke-check",
    f"{PREFIX}$gpulab:gpu_operator:GpuOperator$kubernetes:helm.sh/v3:Release::gpu-operator-release",
    f"{PREFIX}$gpulab:benchmark:TflopsBenchmark$kubernetes:core/v1:ConfigMap::benchmark-modules",
    f"{PREFIX}$gpulab:benchmark:TflopsBenchmark$command:local:Command::benchmark-result",
)


def deployment(*urns: str, deleted: tuple[str, ...] = ()) -> dict[str, Any]:
    resources = [{"urn": u, "type": u.rsplit("$", 1)[-1].split("::")[0]} for u in urns]
    resources += [{"urn": u, "delete": True} for u in deleted]
    return {"resources": resources}


def test_gate_and_smoke_pod_only() -> None:
    assert verify.targets(deployment(*OTHERS, GATE, SMOKE)) == {"gate": GATE, "smoke": SMOKE}


def test_compute_pods_when_the_stack_has_them() -> None:
    compute = f"{PREFIX}$gpulab:compute:ComputeCheck$kubernetes:core/v1:Pod::compute-pod"
    found = verify.targets(deployment(SMOKE, *OTHERS, BENCH, compute, GATE))
    assert found == {"gate": GATE, "smoke": SMOKE, "benchmark": BENCH, "compute": compute}
    assert list(found) == ["gate", "smoke", "benchmark", "compute"]
    assert verify.said("compute") == "the compute check (a fresh compute Pod)"


def test_a_resource_pending_deletion_is_not_the_lab() -> None:
    # A replaced-but-not-yet-deleted smoke Pod (``delete: true``) is not one to re-run.
    with pytest.raises(verify.NoLab, match="no smoke"):
        verify.targets(deployment(GATE, deleted=(SMOKE,)))


@pytest.mark.parametrize("urns", [(), (GATE,), (SMOKE,), OTHERS])
def test_no_lab_says_to_build_it(urns: tuple[str, ...]) -> None:
    with pytest.raises(verify.NoLab, match="make lab"):
        verify.targets(deployment(*urns))


def test_cli_prints_urns_and_what_it_reruns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"deployment": deployment(GATE, SMOKE, BENCH)})))
    assert verify.main(["targets"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [GATE, SMOKE, BENCH]
    assert (
        "re-running the readiness gate, the smoke test (a fresh smoke Pod) and the TFLOPS benchmark "
        "(a fresh benchmark Pod) against the running lab" in err
    )
    assert "nothing else is replaced" in err


@pytest.mark.parametrize(
    ("stdin", "message"),
    [("not json", "printed no JSON"), (json.dumps({"deployment": {}}), "make lab")],
)
def test_cli_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stdin: str, message: str
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert verify.main(["targets"]) == 2
    assert message in capsys.readouterr().err


def test_a_found_gpu_stacks_fleet_check_is_the_gate() -> None:
    chain = "gpulab:lab:Lab$gpulab:fleet:FoundGpuStack$command:local:Command"
    assert verify.role_of(f"urn:pulumi:s::gpu-lab::{chain}::gpu-stack-gate") == "gate"
    assert verify.role_of(f"urn:pulumi:s::gpu-lab::{chain}::gpu-stack-access") is None


def test_dra_modes_gate_is_the_gate() -> None:
    """The H200 run in DRA mode (2026-12-03 21:29, tests/data/device-h200-node/lab-dra): verify
    said "the stack has no gate resource" until the DRA driver's gate counted as one."""
    chain = "gpulab:lab:Lab$gpulab:dra:DraDriver$command:local:Command"
    assert verify.role_of(f"urn:pulumi:s::gpu-lab::{chain}::dra-gate") == "gate"
