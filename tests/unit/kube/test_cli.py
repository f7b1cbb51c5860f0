"""gpulab.kube.cli: the subcommand table, what main prints and returns, and that every
``python -m gpulab.kube`` command the program writes parses with it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import variants.sim
from gpulab.core.errors import GpuLabError
from gpulab.kube import cli, fleet, identity
from gpulab.kube.results import FleetResult, GateResult, PingResult
from tests.unit import program_harness
from tests.unit.program_harness import COMMAND, MINIKUBE, run_program, sim


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that is never used, of a cluster whose identity is not checked."""
    monkeypatch.setattr(cli, "load_clients", lambda: object())
    monkeypatch.setattr(identity, "check_identity", lambda api, kubeconfig: None)


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    """The parser's subparsers by name, in their order."""
    group = cli.parser()._subparsers
    assert group is not None
    choices = group._group_actions[0].choices
    assert isinstance(choices, dict)
    return dict(choices)


def _options(cmd: str) -> set[str]:
    """Every option string of subcommand ``cmd``."""
    return {o for a in _subparsers()[cmd]._actions for o in a.option_strings}


def test_the_subcommands_are_the_tables_in_its_order() -> None:
    names = list(_subparsers())
    assert names == list(cli.SUBCOMMANDS)
    assert names[:2] == ["gate", "smoke"] and "ping" in names and "fleet" in names


def test_main_prints_the_subcommands_facts_as_sorted_json(
    cluster: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = PingResult(kubernetes_version="v1.36.3", kube_system_uid="uid-1")
    monkeypatch.setattr(cli, "ping", lambda api: answer)
    assert cli.main(["ping"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed) == {"kubernetesVersion": "v1.36.3", "kubeSystemUid": "uid-1"}
    # Sorted, not in the record's field order.
    assert printed.index('"kubeSystemUid"') < printed.index('"kubernetesVersion"')


def test_fleet_prints_the_node_table_on_stderr_and_the_facts_on_stdout(
    cluster: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    got: list[fleet.FleetSpec] = []

    def run_fleet(api: Any, spec: fleet.FleetSpec) -> FleetResult:
        got.append(spec)
        return FleetResult(nodes=[{"node": "gpu-a"}], allocatable_gpus=8)

    monkeypatch.setattr(fleet, "run_fleet", run_fleet)
    monkeypatch.setattr(fleet, "table", lambda rows: f"TABLE of {len(rows)}")
    argv = ["fleet", "--namespace", "team", "--smoke-image", "img", "--pool-gpus", "h200=8", "--wait", "-3"]
    assert cli.main(argv) == 0
    io = capsys.readouterr()
    assert io.err.strip() == "TABLE of 1"
    assert json.loads(io.out)["allocatableGpus"] == 8
    assert got[0].namespace == "team" and got[0].pool_gpus == {"h200": 8} and got[0].wait == 0.0


def test_a_failed_check_prints_its_cause_and_returns_1(
    cluster: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(api: Any, state: str, timeout: float) -> None:
        raise GpuLabError(f"ClusterPolicy not set to {state}")

    def gate_never(*a: Any) -> Any:
        raise AssertionError("the gate ran although the simulated status was not written")

    monkeypatch.setattr(cli.simulated, "simulate_clusterpolicy", refuse)
    monkeypatch.setattr(cli.gate, "gate", gate_never)
    assert cli.main(["gate", "--simulate-clusterpolicy", "notReady"]) == 1
    io = capsys.readouterr()
    assert io.err.strip() == "ClusterPolicy not set to notReady" and io.out == ""


def test_the_sim_gate_writes_the_clusterpolicy_status_before_it_waits(
    cluster: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(
        cli.simulated,
        "simulate_clusterpolicy",
        lambda api, state, timeout: calls.append(f"status {state} {timeout}"),
    )
    monkeypatch.setattr(
        cli.gate, "gate", lambda api, spec, ctx: calls.append("gate") or GateResult(allocatable_gpus=1)
    )
    assert cli.main(["gate", "--timeout", "42", "--simulate-clusterpolicy", "ready"]) == 0
    assert calls == ["status ready 42.0", "gate"]
    assert json.loads(capsys.readouterr().out)["allocatableGpus"] == 1
    calls.clear()
    assert cli.main(["gate"]) == 0
    assert calls == ["gate"]


def test_a_missing_required_option_is_a_usage_error(cluster: None) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["queues", "--namespace", "lab"])
    assert exit_.value.code == 2


@pytest.mark.usefixtures("no_host_tools")
def test_every_check_the_program_writes_parses(
    chart: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``python -m gpulab.kube`` argv (create and delete) of four labs that together write
    every subcommand but ``ping`` (ops/ runs that one) parses, with the options the component
    gave it."""
    monkeypatch.setattr(variants.sim.Sim, "preflight", lambda self, cfg: [])  # Kueue not built here
    fake = program_harness.fake_stdout
    # The fleet gate's facts: the queue's quota is its allocatable.
    monkeypatch.setattr(
        program_harness,
        "fake_stdout",
        lambda step, gpus=1: (
            json.dumps({"allocatableGpus": 1}) if step == "fleet-check" else fake(step, gpus)
        ),
    )
    for name, version in (("kueue", "0.19.0"), ("nvidia-device-plugin", "0.20.0"), ("dra", "25.12.0")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "Chart.yaml").write_text(f"name: {name}\nversion: {version}\n")
    labs = [
        {**MINIKUBE, "dcgmExporter": True, "benchmarkPod": True},
        sim(chart),
        sim(
            chart,
            gpuStack="device-plugin",
            devicePluginChartPath=str(tmp_path / "nvidia-device-plugin"),
            queues=True,
            kueueChartPath=str(tmp_path / "kueue"),
        ),
        sim(chart, gpuStack="dra", draChartPath=str(tmp_path / "dra"), simGpus=2),
    ]
    seen: dict[str, list[str]] = {}
    for config in labs:
        run = run_program(config)
        assert run.error is None, run.error
        for r in run.registrations:
            for key in ("create", "delete"):
                argv = r.argv(key) if r.typ == COMMAND and r.inputs.get(key) else []
                if argv[1:3] == ["-m", "gpulab.kube"]:
                    args = cli.parser().parse_args(argv[3:])
                    # Each option by its whole name (argparse would take a prefix of one).
                    assert {t for t in argv[4:] if t.startswith("--")} <= _options(args.cmd), argv
                    seen[args.cmd] = argv[3:]
    assert set(seen) == set(cli.SUBCOMMANDS) - {"ping"}, sorted(seen)
    assert "--installed-in" in seen["fleet"] and "--dra-claim" in seen["smoke"]
