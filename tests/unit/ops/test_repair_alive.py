"""ops.repair.alive: make lab's liveness check proves the cluster answers and is the
stack's own, and its message runs as printed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.kube import identity
from ops import repair

SECRET = "4dabf18193072939515e22adb298388d"


def kubeconfig(url: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
            "users": [{"name": "u", "user": {"token": "t"}}],
        }
    )


class FakeStack(repair.Stack):
    def __init__(self, root: Path, kc: str | None, recorded: dict[str, Any] | None, kind: str) -> None:
        super().__init__("sim", root, cli="pulumi", backend="file:///x")
        self.kc, self.recorded, self.kind = kc, recorded, kind

    def export(self, secrets: bool = False) -> dict[str, Any]:
        resources: list[dict[str, Any]] = []
        if self.kc:
            resources.append(
                {
                    "urn": "urn:pulumi:sim::gpu-lab::pulumi:providers:kubernetes::k8s",
                    "type": "pulumi:providers:kubernetes",
                    "inputs": {"kubeconfig": {SECRET: "x", "plaintext": json.dumps(self.kc)}},
                }
            )
        if self.recorded:
            resources.append(
                {
                    "urn": "urn:pulumi:sim::gpu-lab::command:local:Command::cluster-identity",
                    "type": "command:local:Command",
                    "outputs": {"stdout": json.dumps(self.recorded)},
                }
            )
        return {"deployment": {"resources": resources}}

    def config(self) -> dict[str, Any]:
        return {"gpu-lab:cluster": {"value": self.kind}, "gpu-lab:profile": {"value": "p"}}


@pytest.fixture
def silent() -> Iterator[str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    port = s.getsockname()[1]
    s.close()  # nothing listens: connection refused
    yield f"http://127.0.0.1:{port}"


def test_no_state_yet_is_fine(tmp_path: Path) -> None:
    assert repair.alive(FakeStack(tmp_path, None, None, "sim"), "lab") is None


def test_a_cluster_that_does_not_answer_is_named_with_the_rebuild_as_it_runs(
    tmp_path: Path, silent: str
) -> None:
    (tmp_path / ".state" / "sim" / "p").mkdir(parents=True)  # the sim cluster's directory: it exists
    msg = repair.alive(FakeStack(tmp_path, kubeconfig(silent), None, "sim"), "lab")
    assert msg is not None
    assert f"the sim lab's cluster does not answer: the API server at {silent} did not answer" in msg
    assert "Connection refused" in msg
    assert "fix: rebuild it: `GPULAB_STACK=sim make destroy && GPULAB_STACK=sim make lab`" in msg


def test_an_existing_cluster_that_does_not_answer_is_never_rebuilt(tmp_path: Path, silent: str) -> None:
    msg = repair.alive(FakeStack(tmp_path, kubeconfig(silent), None, "existing"), "lab")
    assert msg is not None and "make destroy FORGET=1" in msg and "rebuild" not in msg


def test_another_cluster_behind_the_same_kubeconfig_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpulab.kube import client as kube

    recorded = {"server": "https://127.0.0.1:32766", "caSha256": "a", "kubeSystemUid": "mine", "stack": "sim"}
    monkeypatch.setattr(kube, "ping", lambda api, timeout=5: {"kubernetesVersion": "v1.36.3"})
    monkeypatch.setattr(
        identity,
        "read",
        lambda kc, api=None, timeout=10: identity.Identity("https://127.0.0.1:32766", "a", "theirs"),
    )
    msg = repair.alive(FakeStack(tmp_path, kubeconfig("https://127.0.0.1:32766"), recorded, "sim"), "lab")
    assert msg is not None and "reaches another cluster" in msg
    assert "kube-system uid mine" in msg and "kube-system uid theirs" in msg
    assert "`GPULAB_STACK=sim make destroy FORGET=1`" in msg


def _fake_cli(tmp_path: Path, export: dict[str, Any], config: dict[str, Any]) -> tuple[str, Path]:
    """A `pulumi` that logs each call's arguments and answers `stack export` and `config --json`."""
    log = tmp_path / "calls.log"
    (tmp_path / "export.json").write_text(json.dumps(export))
    (tmp_path / "config.json").write_text(json.dumps(config))
    cli = tmp_path / "pulumi"
    cli.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        f'case "$1 $2" in "stack export") cat {tmp_path}/export.json ;;\n'
        f'  "config --json") cat {tmp_path}/config.json ;; esac\n'
    )
    cli.chmod(0o755)
    return str(cli), log


def test_the_state_is_read_once_until_a_command_may_change_it(tmp_path: Path) -> None:
    cli, log = _fake_cli(tmp_path, {"deployment": {"resources": []}}, {})
    stack = repair.Stack("sim", tmp_path, cli=cli, backend="")
    assert stack.export(secrets=True) == {"deployment": {"resources": []}}
    stack.export(secrets=True)
    stack.config()
    stack.export(secrets=True)
    assert log.read_text().splitlines() == [
        "stack export --show-secrets --stack sim",
        "config --json --stack sim",
    ]
    stack.pulumi("cancel", "--yes")  # may change the state: the next export reads it again
    stack.export(secrets=True)
    assert log.read_text().splitlines()[-1] == "stack export --show-secrets --stack sim"
    assert len(log.read_text().splitlines()) == 4


def test_check_alive_runs_the_liveness_check_on_the_same_state_read(
    tmp_path: Path, silent: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make lab`'s first step: nothing to repair, then the cluster does not answer (named,
    with the rebuild); one `stack export` for both. Without --alive the check alone passes."""
    state = FakeStack(tmp_path, kubeconfig(silent), None, "sim").export()
    config = {"gpu-lab:cluster": {"value": "sim"}, "gpu-lab:profile": {"value": "p"}}
    cli, log = _fake_cli(tmp_path, state, config)
    monkeypatch.setenv("GPULAB_PULUMI", cli)
    monkeypatch.setenv("GPULAB_BACKEND", "https://api.pulumi.com")  # no lock files to read
    monkeypatch.setenv("GPULAB_ROOT", str(tmp_path))
    monkeypatch.setattr(repair.stackstate, "orphaned_plugins", lambda root: [])

    assert repair.main(["check", "--stack", "sim"]) == 0
    assert capsys.readouterr().err == ""
    log.write_text("")
    assert repair.main(["check", "--alive", "--stack", "sim", "--action", "lab"]) == 1
    err = capsys.readouterr().err
    assert "the sim lab's cluster does not answer" in err, err
    assert "GPULAB_STACK=sim make destroy && GPULAB_STACK=sim make lab" in err, err
    calls = log.read_text().splitlines()
    assert calls.count("stack export --show-secrets --stack sim") == 1, calls


def _sim_kubeconfig_now(root: Path, url: str) -> None:
    """The sim cluster's own kubeconfig (its work dir's), naming ``url``: where it answers now."""
    workdir = root / ".state" / "sim" / "p"
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "kubeconfig.yaml").write_text(kubeconfig(url))


def test_the_recorded_cluster_at_another_endpoint_is_named_with_both_values_and_the_fix(
    tmp_path: Path, silent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stack's kubeconfig (read at create) no longer answers, and the variant's own read
    finds the same cluster (its kube-system UID) elsewhere: not "does not answer", but both
    endpoints and the variant's fix (``VariantSpec.endpoint_fix``)."""
    recorded = {"server": silent, "caSha256": None, "kubeSystemUid": "mine", "stack": "sim"}
    _sim_kubeconfig_now(tmp_path, "https://localhost:32766")
    asked: list[str] = []

    def read(kc: str, api: Any = None, timeout: float = 10) -> identity.Identity:
        server, _ = identity.from_kubeconfig(kc)
        asked.append(server)
        return identity.Identity(server, None, "mine")

    monkeypatch.setattr(identity, "read", read)
    msg = repair.alive(FakeStack(tmp_path, kubeconfig(silent), recorded, "sim"), "lab")
    assert msg is not None, "a moved endpoint must stop the run"
    assert asked == ["https://localhost:32766"]  # the live endpoint, asked once
    assert "no longer answers at the recorded address" in msg
    assert f"recorded: {silent}" in msg and "live:     https://localhost:32766" in msg
    assert "kube-system uid mine" in msg
    assert ".state/sim/p/kubeconfig.yaml) now names https://localhost:32766" in msg
    assert "`GPULAB_STACK=sim make destroy && GPULAB_STACK=sim make lab`" in msg
    assert "does not answer" not in msg


def test_a_live_endpoint_that_is_another_cluster_or_silent_is_not_called_moved(
    tmp_path: Path, silent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = {"server": silent, "caSha256": None, "kubeSystemUid": "mine", "stack": "sim"}
    _sim_kubeconfig_now(tmp_path, "https://localhost:32766")
    monkeypatch.setattr(
        identity,
        "read",
        lambda kc, api=None, timeout=10: identity.Identity("https://localhost:32766", None, "theirs"),
    )
    msg = repair.alive(FakeStack(tmp_path, kubeconfig(silent), recorded, "sim"), "lab")
    assert msg is not None and "does not answer" in msg and "live:" not in msg


def test_the_stack_s_kubeconfig_answering_while_the_variant_names_another_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The existing variant: the stack's kubeconfig still reaches the recorded endpoint, but
    the user's kubeconfig (what the next run would read) names another address of the same
    cluster: named before `pulumi up`, which would replace the provider and every object."""
    from gpulab.kube import client as kube

    recorded = {"server": "https://127.0.0.1:32766", "caSha256": None, "kubeSystemUid": "mine"}
    users = tmp_path / "users-kubeconfig.yaml"
    users.write_text(kubeconfig("https://localhost:32766"))
    monkeypatch.setattr(kube, "ping", lambda api, timeout=5: {"kubernetesVersion": "v1.36.3"})

    def read(kc: str, api: Any = None, timeout: float = 10) -> identity.Identity:
        return identity.Identity(identity.from_kubeconfig(kc)[0], None, "mine")

    monkeypatch.setattr(identity, "read", read)

    class ExistingStack(FakeStack):
        def config(self) -> dict[str, Any]:
            return {"gpu-lab:cluster": {"value": "existing"}, "gpu-lab:kubeconfigPath": {"value": str(users)}}

    stack = ExistingStack(tmp_path, kubeconfig("https://127.0.0.1:32766"), recorded, "existing")
    msg = repair.alive(stack, "lab")
    assert msg is not None
    assert "answers at another address than the one recorded" in msg
    assert "recorded: https://127.0.0.1:32766" in msg and "live:     https://localhost:32766" in msg
    assert "`kubectl config set-cluster <its cluster> --server=https://127.0.0.1:32766`" in msg
    # Pointed back: nothing to say.
    users.write_text(kubeconfig("https://127.0.0.1:32766"))
    assert repair.alive(stack, "lab") is None


def test_make_lab_names_a_smoke_node_that_is_gone_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from gpulab.kube import client as kube

    recorded = {"server": "https://127.0.0.1:32766", "caSha256": None, "kubeSystemUid": "mine"}
    monkeypatch.setattr(kube, "ping", lambda api, timeout=5: {"kubernetesVersion": "v1.36.3"})
    monkeypatch.setattr(kube, "node_names", lambda api, timeout=5: ["sim-node-1"])
    monkeypatch.setattr(
        identity,
        "read",
        lambda kc, api=None, timeout=10: identity.Identity("https://127.0.0.1:32766", None, "mine"),
    )

    class Measured(FakeStack):
        def export(self, secrets: bool = False) -> dict[str, Any]:
            doc = super().export(secrets)
            doc["deployment"]["resources"].append(
                {
                    "urn": "urn:pulumi:sim::gpu-lab::pulumi:pulumi:Stack::gpu-lab-sim",
                    "type": "pulumi:pulumi:Stack",
                    "outputs": {"smokeNode": "sim-node-0", "smokeMeasuredAt": "T1"},
                }
            )
            return doc

    stack = Measured(tmp_path, kubeconfig("https://127.0.0.1:32766"), recorded, "sim")
    assert repair.alive(stack, "lab") is None  # not a stop: make verify is the fix
    err = capsys.readouterr().err
    assert "smoke test ran on node sim-node-0 (measured T1), which is not in the cluster now" in err
    assert "(its nodes: sim-node-1)" in err and "`GPULAB_STACK=sim make verify`" in err
