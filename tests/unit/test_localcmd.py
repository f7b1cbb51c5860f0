"""LocalCommand's dynamic provider: replacement rules and command execution."""

from __future__ import annotations

import sys

import pytest

from components.localcmd import CommandError, _LocalCommandProvider, run_argv

OLD = {
    "name": "c",
    "create": ["minikube-ctl", "up", "--cpus", "4"],
    "delete": ["minikube-ctl", "down"],
    "environment": None,
    "triggers": None,
    "deleteBeforeReplace": True,
    "stdout": "{}",
}


def test_changed_create_replaces_delete_first() -> None:
    new = {**OLD, "create": ["minikube-ctl", "up", "--cpus", "6"]}
    d = _LocalCommandProvider().diff("id", OLD, new)
    assert d.changes is True
    assert d.replaces == ["create"]
    assert d.delete_before_replace is True


def test_changed_trigger_replaces() -> None:
    d = _LocalCommandProvider().diff("id", {**OLD, "triggers": [1]}, {**OLD, "triggers": [2]})
    assert d.replaces == ["triggers"]


def test_changed_delete_only_updates_in_place_without_running() -> None:
    new = {**OLD, "delete": ["minikube-ctl", "down", "--purge"]}
    p = _LocalCommandProvider()
    d = p.diff("id", OLD, new)
    assert d.changes is True and d.replaces == []
    # update keeps the create's stdout and runs nothing (the argv would fail if run).
    assert p.update("id", OLD, new).outs["stdout"] == "{}"


def test_no_change_is_a_no_op() -> None:
    d = _LocalCommandProvider().diff("id", OLD, dict(OLD))
    assert d.changes is False and d.replaces == []


def test_create_captures_stdout_and_passes_environment() -> None:
    props = {
        "name": "x",
        "create": [sys.executable, "-c", "import os; print(os.environ['LAB_SECRET'][::-1])"],
        "environment": {"LAB_SECRET": "abc"},
    }
    res = _LocalCommandProvider().create(props)
    assert res.outs["stdout"].strip() == "cba"
    assert res.id == "x"


def test_failure_names_command_code_and_stderr_tail() -> None:
    with pytest.raises(CommandError) as err:
        run_argv(
            [sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"], None, None, 30
        )
    assert "exited 3" in str(err.value) and "boom" in str(err.value)


def test_missing_program_is_reported() -> None:
    with pytest.raises(CommandError, match="not found"):
        run_argv(["definitely-not-a-program-gpulab"], None, None, 5)


def test_timeout_is_reported() -> None:
    with pytest.raises(CommandError, match="timed out after 1s"):
        run_argv([sys.executable, "-c", "import time; time.sleep(5)"], None, None, 1)
