"""pulumi-command's ``local.Command`` through the real engine: the behaviour the lab relies on.

By default this runs against gpu-lab's offline stand-in (hack/offline/command), installed by
``hack/offline/command/install.sh`` into a plugin cache of this module's own. With
``GPULAB_COMMAND_PROVIDER=upstream`` nothing is installed and automatic plugin acquisition
is allowed, so a connected machine runs the same tests against the real provider the
engine downloads (pulumi-command 1.2.1): both must pass the same suite.

The program is tests/engine/command_parity (resources described by stack config).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.sandbox import ROOT, run_pulumi, toolchain_env

# Each test has its own stack; the module's one fixture (a PULUMI_HOME with the provider) is cheap
# to make per worker, so the tests spread over the workers (no xdist_group).
pytestmark = pytest.mark.engine

UPSTREAM = os.environ.get("GPULAB_COMMAND_PROVIDER") == "upstream"
PROGRAM = Path(__file__).resolve().parent / "command_parity"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def _share_plugins(src_home: Path, dst_home: Path) -> None:
    """Make the plugins of ``src_home`` (but no ``command`` provider) usable from ``dst_home``,
    file by file through symlinks, so the engine finds e.g. the Kubernetes provider there."""
    plugins = src_home / "plugins"
    for d in sorted(plugins.iterdir()) if plugins.is_dir() else []:
        if not d.is_dir() or d.name.startswith("resource-command-") or Path(f"{d}.partial").exists():
            continue
        (dst_home / "plugins" / d.name).mkdir(parents=True)
        for f in d.iterdir():
            (dst_home / "plugins" / d.name / f.name).symlink_to(f)


@pytest.fixture(scope="module")
def engine_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """scripts/env.sh's environment with a PULUMI_HOME of this module's own: the stand-in
    installed there by install.sh, or (upstream) no command provider, so the engine gets one."""
    env = toolchain_env("none")
    cli = env.get("GPULAB_PULUMI") or shutil.which("pulumi", path=env["PATH"])
    if not cli or not os.access(cli, os.X_OK):
        pytest.skip(env.get("GPULAB_TOOLCHAIN_ERROR") or "no pulumi CLI: run `make toolchain-tests`")
    env["GPULAB_PULUMI"] = cli
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    env.update(PULUMI_SKIP_UPDATE_CHECK="true", PULUMI_CONFIG_PASSPHRASE="test", PULUMI_DEBUG_COMMANDS="true")
    home = tmp_path_factory.mktemp("pulumi-home")
    _share_plugins(Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi"), home)
    env["PULUMI_HOME"] = str(home)
    if UPSTREAM:
        # Let the engine fetch the real provider.
        env.pop("PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION", None)
        env.pop("PULUMI_DISABLE_REGISTRY_RESOLVE", None)
    else:
        env["PULUMI_IGNORE_AMBIENT_PLUGINS"] = "true"  # never a pulumi-resource-command on PATH
        p = subprocess.run(
            [str(ROOT / "hack" / "offline" / "command" / "install.sh"), cli],
            env=env,
            capture_output=True,
            text=True,
        )
        assert p.returncode == 0, p.stderr
    return env


class Stack:
    """A copy of the parity program with its own file backend and one stack, ``parity``."""

    def __init__(self, base: Path, env: dict[str, str]) -> None:
        self.dir = base / "prog"
        shutil.copytree(PROGRAM, self.dir, ignore=shutil.ignore_patterns("__pycache__"))
        (self.dir / ".venv").symlink_to(ROOT / ".venv")
        (base / "backend").mkdir()
        self.env = {**env, "PULUMI_BACKEND_URL": f"file://{base / 'backend'}"}
        self.events = base / "events.jsonl"
        self.pulumi("stack", "init", "parity", "--secrets-provider", "passphrase")

    def pulumi(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run the CLI in the program (tests.support.sandbox.run_pulumi)."""
        return run_pulumi(self.dir, self.env, *args, check=check, timeout=timeout)

    def set(self, **resources: dict[str, Any]) -> None:
        """Describe the program's resources (see command_parity/__main__.py)."""
        self.pulumi("config", "set", "resources", json.dumps(resources))

    def up(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``pulumi up --yes`` with an event log (see :meth:`logged`)."""
        self.events.unlink(missing_ok=True)
        return self.pulumi("up", "--yes", "--event-log", str(self.events), *args, check=check)

    def logged(self) -> list[dict[str, Any]]:
        """The events of the last up/preview/destroy."""
        return [json.loads(line) for line in self.events.read_text().splitlines() if line.strip()]

    def ops(self) -> list[tuple[str, str]]:
        """``(op, resource name)`` of the last run's steps on Command resources, in order."""
        return [
            (m["op"], m["urn"].split("::")[-1])
            for e in self.logged()
            if (m := e.get("resourcePreEvent", {}).get("metadata")) and m["type"] == "command:local:Command"
        ]

    def outputs(self, secrets: bool = False) -> dict[str, Any]:
        """``pulumi stack output --json`` (optionally with secrets shown)."""
        args = ["stack", "output", "--json", *(["--show-secrets"] if secrets else [])]
        return json.loads(self.pulumi(*args).stdout)  # type: ignore[no-any-return]

    def state(self) -> dict[str, dict[str, Any]]:
        """The Command resources of ``pulumi stack export``, by name."""
        d = json.loads(self.pulumi("stack", "export").stdout)
        return {
            r["urn"].split("::")[-1]: r
            for r in d["deployment"].get("resources") or []
            if r["type"] == "command:local:Command"
        }


@pytest.fixture
def stack(engine_env: dict[str, str], tmp_path: Path) -> Stack:
    """A fresh stack of the parity program."""
    return Stack(tmp_path, engine_env)


def lines(p: Path) -> list[str]:
    """The lines of a file the commands append to (none when it does not exist)."""
    return p.read_text().splitlines() if p.exists() else []


def test_the_engine_runs_the_provider_under_test(stack: Stack) -> None:
    stack.set(a={"create": "echo hi"})
    stack.up()
    plugin = Path(stack.env["PULUMI_HOME"]) / "plugins" / "resource-command-v1.2.1"
    is_standin = (plugin / "pulumi_resource_command.py").exists()
    assert is_standin != UPSTREAM, sorted(p.name for p in plugin.iterdir())


def test_create_runs_once_and_stdout_stderr_are_outputs(stack: Stack, tmp_path: Path) -> None:
    rec = tmp_path / "ran"
    stack.set(a={"create": f"echo ran >> {rec}; echo hello; echo; echo oops >&2"})
    stack.up()
    assert lines(rec) == ["ran"]
    assert stack.outputs() == {"a_stdout": "hello\n"}  # exactly one trailing newline trimmed
    assert stack.state()["a"]["outputs"]["stderr"] == "oops"
    stack.up()  # no change: nothing runs again
    assert lines(rec) == ["ran"]
    assert stack.ops() == [("same", "a")]


def test_refresh_runs_nothing_and_keeps_the_outputs(stack: Stack, tmp_path: Path) -> None:
    rec = tmp_path / "ran"
    stack.set(a={"create": f"echo ran >> {rec}; echo kept", "delete": f"echo deleted >> {rec}"})
    stack.up()
    before = stack.state()["a"]
    stack.pulumi("refresh", "--yes")
    after = stack.state()["a"]
    assert lines(rec) == ["ran"]
    assert after["outputs"] == before["outputs"] and after["outputs"]["stdout"] == "kept"
    stack.up()
    assert stack.ops() == [("same", "a")] and lines(rec) == ["ran"]


def test_triggers_replace_other_changes_update_in_place(stack: Stack, tmp_path: Path) -> None:
    rec = tmp_path / "rec"
    base = {"delete": f"echo delete >> {rec}", "triggers": [1]}
    stack.set(a={**base, "create": f'echo "create1 [$PULUMI_COMMAND_STDOUT]" >> {rec}; echo out1'})
    stack.up()
    first_id = stack.state()["a"]["id"]
    # create changed, no update command: an in-place update that re-runs create with the old stdout
    stack.set(a={**base, "create": f'echo "create2 [$PULUMI_COMMAND_STDOUT]" >> {rec}; echo out2'})
    stack.up()
    assert stack.ops() == [("update", "a")]
    assert lines(rec) == ["create1 []", "create2 [out1]"]
    assert stack.state()["a"]["id"] == first_id
    # with an update command, an environment change runs update (not create)
    upd = f'echo "update $V [$PULUMI_COMMAND_STDOUT]" >> {rec}; echo out3'
    stack.set(a={**base, "create": "echo unused", "update": upd, "environment": {"V": "v"}})
    stack.up()
    assert stack.ops() == [("update", "a")]
    assert lines(rec)[2:] == ["update v [out2]"]
    # a trigger change replaces: new create (without PULUMI_COMMAND_*) then the old delete
    stack.set(a={**base, "create": f'echo "create4 [$PULUMI_COMMAND_STDOUT]" >> {rec}', "triggers": [2]})
    stack.up()
    assert ("create-replacement", "a") in stack.ops() and ("update", "a") not in stack.ops()
    assert lines(rec)[3:] == ["create4 []", "delete"]
    assert stack.state()["a"]["id"] != first_id


def test_a_resource_in_triggers_replaces_the_dependent_when_it_is_replaced(
    stack: Stack, tmp_path: Path
) -> None:
    rec = tmp_path / "rec"
    spec_b = {"create": f"echo b >> {rec}", "trigger_resources": ["a"]}
    stack.set(a={"create": f"echo a >> {rec}", "triggers": [1]}, b=spec_b)
    stack.up()
    assert stack.state()["b"]["inputs"]["triggers"][0]["urn"].endswith("::a")  # kept as a reference
    stack.set(a={"create": f"echo a2 >> {rec}", "triggers": [1]}, b=spec_b)  # a updates: b stays
    stack.up()
    assert lines(rec) == ["a", "b", "a2"]
    stack.set(a={"create": f"echo a3 >> {rec}", "triggers": [2]}, b=spec_b)  # a replaced: so is b
    stack.up()
    assert lines(rec) == ["a", "b", "a2", "a3", "b"]
    assert ("create-replacement", "b") in stack.ops()


@pytest.mark.parametrize("dbr", [False, True], ids=["create-before-delete", "delete-before-replace"])
def test_replacement_order_and_the_old_delete_uses_the_old_environment(
    stack: Stack, tmp_path: Path, dbr: bool
) -> None:
    rec = tmp_path / "order"
    spec = {"create": f'echo "create $TAG" >> {rec}', "delete": f'echo "delete $TAG" >> {rec}'}
    stack.set(a={**spec, "environment": {"TAG": "1"}, "triggers": ["1"], "delete_before_replace": dbr})
    stack.up()
    stack.set(a={**spec, "environment": {"TAG": "2"}, "triggers": ["2"], "delete_before_replace": dbr})
    stack.up()
    expected = ["create 1", "delete 1", "create 2"] if dbr else ["create 1", "create 2", "delete 1"]
    assert lines(rec) == expected


def test_delete_runs_from_the_stored_state(stack: Stack, tmp_path: Path) -> None:
    rec = tmp_path / "deleted"
    stack.set(
        a={
            "create": "echo created-out",
            "delete": f'echo "$MARK $SMARK [$PULUMI_COMMAND_STDOUT]" > {rec}',
            "environment": {"MARK": "old"},
            "secret_environment": {"SMARK": "sold"},
        }
    )
    stack.up()
    # The program now says otherwise, but destroy runs the last applied delete and environment.
    stack.set(a={"create": "echo x", "delete": f"echo new-command > {rec}", "environment": {"MARK": "new"}})
    stack.pulumi("destroy", "--yes")
    assert lines(rec) == ["old sold [created-out]"]
    assert stack.state() == {}


def test_a_failing_command_reports_exit_status_and_output_tail(stack: Stack) -> None:
    noisy = "for i in $(seq 1 40); do echo noise-$i >&2; done"
    stack.set(a={"create": f"echo to-stdout; {noisy}; echo last-words >&2; exit 7"})
    p = stack.up(check=False)
    text = p.stdout + p.stderr
    assert p.returncode != 0
    assert 'exit status 7: running "echo to-stdout;' in text, text
    assert "last-words" in text and "noise-40" in text, text
    assert "a" not in stack.state()  # a failed create keeps no state


def test_custom_timeout_kills_the_command(stack: Stack, tmp_path: Path) -> None:
    stack.set(a={"create": f"sleep 30; touch {tmp_path}/late", "timeout": "2s"})
    t0 = time.monotonic()
    p = stack.up(check=False)
    assert p.returncode != 0, p.stdout
    # The event, not the clock: past the 30 s the command would sleep, its file never appeared
    # (a loaded machine may take long to run `up` itself; that is not what this checks).
    time.sleep(max(0.0, t0 + 32 - time.monotonic()))
    assert not (tmp_path / "late").exists()
    assert "a" not in stack.state()


def test_secret_stdout_and_environment_never_show_in_plaintext(stack: Stack) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    # logging "none": upstream logs output lines unredacted (pulumi-command#401), by design
    spec = {"create": 'echo "$TOKEN"', "secret_environment": {"TOKEN": token}, "logging": "none"}
    stack.set(s={**spec, "secret_stdout": True})
    texts = [stack.pulumi("preview", "--diff"), stack.up("--diff", "--skip-preview")]
    stack.set(s={**spec, "create": 'echo "$TOKEN"; echo "$TOKEN-2"', "secret_stdout": True})
    texts += [stack.pulumi("preview", "--diff"), stack.up("--diff")]
    for p in texts:
        assert token not in p.stdout + p.stderr, p.stdout
    assert "[secret]" in texts[-1].stdout
    export = stack.pulumi("stack", "export").stdout
    assert token not in export
    s = stack.state()["s"]["outputs"]
    assert "ciphertext" in s["stdout"] and "ciphertext" in s["environment"]["TOKEN"]
    assert stack.outputs() == {"s_stdout": "[secret]"}
    assert stack.outputs(secrets=True) == {"s_stdout": f"{token}\n{token}-2"}  # it did run


def test_output_lines_reach_the_engine_while_the_command_runs(stack: Stack) -> None:
    stack.set(a={"create": "echo first-line; sleep 3; echo second-line >&2"})
    stack.events.unlink(missing_ok=True)
    log_flag = ("--event-log", str(stack.events))
    proc = subprocess.Popen(
        [stack.env["GPULAB_PULUMI"], "up", "--yes", "--skip-preview", "--non-interactive", *log_flag],
        cwd=stack.dir,
        env=stack.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    seen: list[tuple[float, str]] = []
    t0 = time.monotonic()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: seen.extend((time.monotonic() - t0, ln) for ln in proc.stdout))
    reader.start()
    assert proc.wait(120) == 0, "".join(ln for _, ln in seen)
    reader.join()

    def when(word: str) -> float:
        return next(t for t, ln in seen if word in ln)

    out = "".join(ln for _, ln in seen)
    assert "first-line" in out and "second-line" in out, out
    assert when("second-line") - when("first-line") >= 2.0, seen  # streamed, not at the end
    diags = [e["diagnosticEvent"] for e in stack.logged() if "diagnosticEvent" in e]
    ours = [d for d in diags if d.get("urn", "").endswith("::a") and "-line" in d["message"]]
    assert [(d["message"].strip(), d["severity"], d.get("ephemeral")) for d in ours] == [
        ("first-line", "info", True),
        ("second-line", "info", True),
    ]


def test_logging_selects_the_streams(stack: Stack) -> None:
    both = "echo to-out; echo to-err >&2"
    stack.set(o={"create": both, "logging": "stdout"}, e={"create": both, "logging": "stderr"})
    stack.up()
    diags = [e["diagnosticEvent"] for e in stack.logged() if "diagnosticEvent" in e]
    got = sorted((d["urn"].split("::")[-1], d["message"].strip()) for d in diags if "to-" in d["message"])
    assert got == [("e", "to-err"), ("o", "to-out")]
    assert stack.state()["o"]["outputs"]["stderr"] == "to-err"  # logging never changes capture


def test_preview_with_unknown_inputs_runs_nothing(stack: Stack, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    stack.set(
        a={"create": f"echo a >> {ran}; echo a-out", "triggers": [1]},
        b={"create_from": {"resource": "a", "template": f"echo b >> {ran}; echo 'b got {{}}'"}},
    )

    def preview_outputs() -> dict[str, dict[str, Any]]:
        stack.events.unlink(missing_ok=True)
        stack.pulumi("preview", "--event-log", str(stack.events))
        return {
            m["urn"].split("::")[-1]: m["new"]
            for e in stack.logged()
            if (m := e.get("resOutputsEvent", {}).get("metadata")) and m["type"] == "command:local:Command"
        }

    new = preview_outputs()
    assert new["a"]["outputs"]["stdout"] == UNKNOWN and new["b"]["outputs"]["stdout"] == UNKNOWN
    assert new["b"]["inputs"]["create"] == UNKNOWN
    assert not ran.exists()
    stack.up()
    assert lines(ran) == ["a", "b"] and stack.outputs()["b_stdout"] == "b got a-out"
    # a will be replaced, so b's create is unknown again: b is planned, stdout unknown, nothing runs
    stack.set(
        a={"create": f"echo a >> {ran}; echo a-out", "triggers": [2]},
        b={"create_from": {"resource": "a", "template": f"echo b >> {ran}; echo 'b got {{}}'"}},
    )
    new = preview_outputs()
    assert new["b"]["inputs"]["create"] == UNKNOWN and new["b"]["outputs"]["stdout"] == UNKNOWN
    assert lines(ran) == ["a", "b"]


def test_hostile_values_reach_the_command_verbatim(stack: Stack, tmp_path: Path) -> None:
    hostile = (
        f"a  b; echo pwned $(touch {tmp_path}/pwned1) `touch {tmp_path}/pwned2` "
        "'single' \"double\" $HOME \\back\nsecond line\ttab && exit 3 | cat"
    )
    via_env, via_argv = tmp_path / "env-out", tmp_path / "argv-out"
    write_argv1 = f"import pathlib, sys; pathlib.Path({str(via_argv)!r}).write_text(sys.argv[1])"
    stack.set(
        e={
            "create": f'printf "%s" "$HOSTILE" > {via_env}; printf "%s" "$HOSTILE"',
            "environment": {"HOSTILE": hostile},
        },
        i={"create": hostile, "interpreter": [sys.executable, "-c", write_argv1]},
    )
    stack.up()
    assert via_env.read_text() == hostile
    assert via_argv.read_text() == hostile
    assert stack.outputs(secrets=True)["e_stdout"] == hostile
    assert not (tmp_path / "pwned1").exists() and not (tmp_path / "pwned2").exists()


def test_dir_and_stdin(stack: Stack, tmp_path: Path) -> None:
    work = tmp_path / "work dir"
    work.mkdir()
    stack.set(a={"create": "pwd; cat", "dir": str(work), "stdin": "from stdin"})
    stack.up()
    assert stack.outputs()["a_stdout"] == f"{work}\nfrom stdin"


@pytest.mark.skipif(UPSTREAM, reason="the real provider implements assetPaths")
def test_standin_refuses_what_it_does_not_implement(stack: Stack) -> None:
    stack.set(a={"create": "echo x > f.txt", "asset_paths": ["*.txt"]})
    p = stack.pulumi("preview", check=False)
    assert p.returncode != 0
    assert "assetPaths" in p.stdout + p.stderr
    assert "offline stand-in for pulumi-command (gpu-lab toolchain)" in p.stdout + p.stderr
