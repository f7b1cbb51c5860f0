"""The one subprocess runner (gpulab.core.run): results, the one error type, missing programs,
timeouts, and the host checks' convention. Runs only sh, cat and sleep."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError


def test_run_returns_the_result_whatever_the_exit_code() -> None:
    result = cmd.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert result == cmd.Result(3, "out\n", "err\n")
    rc, out, err = result
    assert (rc, out, err) == (3, "out\n", "err\n") and not result.ok


def test_input_env_and_cwd(tmp_path: Path) -> None:
    assert cmd.run(["cat"], input="fed\n").stdout == "fed\n"
    env = {"PATH": os.environ["PATH"], "GPULAB_X": "1"}
    assert cmd.run(["sh", "-c", "echo $GPULAB_X"], env=env).stdout == "1\n"
    assert cmd.run(["pwd"], cwd=tmp_path).stdout.strip() == str(tmp_path)


def test_stdin_is_empty_without_input() -> None:
    assert cmd.run(["cat"], timeout=10).stdout == ""


def test_check_raises_one_error_naming_command_exit_code_and_stderr_tail() -> None:
    with pytest.raises(cmd.CommandError) as err:
        cmd.check(["sh", "-c", "echo " + "x" * 3000 + " >&2; echo last >&2; exit 7"])
    exc = err.value
    assert isinstance(exc, GpuLabError) and isinstance(exc, RuntimeError)
    assert exc.returncode == 7 and exc.argv[0] == "sh"
    text = str(exc)
    assert text.startswith("`sh -c echo ") and "failed (exit 7)" in text
    assert text.endswith("last") and len(text) < cmd.TAIL_CHARS + 300


def test_check_quotes_stdout_when_stderr_is_empty() -> None:
    with pytest.raises(cmd.CommandError, match="only stdout"):
        cmd.check(["sh", "-c", "echo only stdout; exit 1"])


def test_check_returns_the_result_on_success() -> None:
    assert cmd.check(["sh", "-c", "echo ok"]).stdout == "ok\n"


def test_a_missing_program_is_a_clear_error_naming_it() -> None:
    with pytest.raises(cmd.ProgramNotFoundError) as err:
        cmd.run(["gpulab-no-such-program", "--flag"])
    assert str(err.value) == "gpulab-no-such-program not found on PATH"
    assert isinstance(err.value, cmd.CommandError) and isinstance(err.value, FileNotFoundError)
    assert err.value.returncode is None


def test_a_timeout_is_a_command_error() -> None:
    with pytest.raises(cmd.CommandTimeoutError, match=r"`sleep 5` timed out after 0.2s"):
        cmd.run(["sleep", "5"], timeout=0.2)


def test_no_shell_and_no_empty_argv() -> None:
    # The argument reaches the program as one string: no shell splits or expands it.
    assert (
        cmd.run([sys.executable, "-c", "import sys; print(sys.argv[1])", "$HOME; ls"]).stdout == "$HOME; ls\n"
    )
    with pytest.raises(ValueError):
        cmd.run([])


def test_probe_never_raises_for_the_programs_sake() -> None:
    assert cmd.probe(["gpulab-no-such-program"]) == (None, "", "gpulab-no-such-program: not found on PATH")
    assert cmd.probe(["sleep", "5"], timeout=0.2) == (124, "", "sleep timed out after 0.2s")
    assert cmd.probe(["sh", "-c", "echo a; exit 2"]) == (2, "a\n", "")
