"""The one way the lab runs a program: an argv (never a shell), output captured as text.

* :func:`run` returns a :class:`Result` ``(returncode, stdout, stderr)`` whatever the exit
  code; a program that is not there raises :class:`ProgramNotFoundError` naming it, and one
  that outlives ``timeout`` raises :class:`CommandTimeoutError`.
* :func:`check` is :func:`run` that also raises :class:`CommandError` on a non-zero exit;
  the message names the command, the exit code and the tail of stderr (stdout when stderr
  is empty).
* :func:`probe` is the convention the host checks read (:mod:`gpulab.host.preflight`): a tuple
  whose return code is None when the program is missing, 124 on a timeout; it never raises.

stdin is ``/dev/null`` unless ``input`` is given, so a program that would prompt fails
instead of hanging a ``pulumi up``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from gpulab.core.errors import GpuLabError

__all__ = [
    "CommandError",
    "CommandTimeoutError",
    "Probe",
    "ProgramNotFoundError",
    "Result",
    "check",
    "probe",
    "run",
]

#: How much of stderr an error message quotes (characters, from the end).
TAIL_CHARS = 2000


class Result(NamedTuple):
    """A finished program: exit code, stdout and stderr as text.

    A tuple, so ``rc, out, err = run(argv)`` works; the attribute names are those of
    ``subprocess.CompletedProcess``.
    """

    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """True when the exit code is 0."""
        return self.returncode == 0


def _shown(argv: Sequence[str], words: int = 6, limit: int = 200) -> str:
    """The command for a message: its first ``words`` words, at most ``limit`` characters (an
    inline script is cut)."""
    head = " ".join(argv[:words])
    if len(head) > limit:
        return head[: limit - 4] + " ..."
    return head + " ..." if len(argv) > words else head


class CommandError(GpuLabError, RuntimeError):
    """A program failed: ``argv``, ``returncode`` (None when it did not run to an exit) and
    ``stderr``; ``str()`` names the command, the exit code and stderr's tail."""

    def __init__(
        self, argv: Sequence[str], returncode: int | None, stderr: str, stdout: str = "", why: str = ""
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        self.stdout = stdout
        tail = (stderr.strip() or stdout.strip())[-TAIL_CHARS:]
        why = why or f"failed (exit {returncode})"
        super().__init__(f"`{_shown(argv)}` {why}" + (f":\n{tail}" if tail else ""))

    @property
    def output(self) -> str:
        """What the program said: stderr, or stdout when stderr is empty (stripped)."""
        return self.stderr.strip() or self.stdout.strip()


class ProgramNotFoundError(CommandError, FileNotFoundError):
    """The program is not on ``PATH`` (or the path given does not exist); names it."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.program = argv[0]
        CommandError.__init__(self, argv, None, f"{argv[0]}: not found on PATH", why="did not run")

    def __str__(self) -> str:
        return f"{self.program} not found on PATH"


class CommandTimeoutError(CommandError, TimeoutError):
    """The program ran longer than its ``timeout`` (seconds) and was killed."""

    def __init__(self, argv: Sequence[str], timeout: float, stderr: str = "") -> None:
        self.timeout = timeout
        CommandError.__init__(self, argv, None, stderr, why=f"timed out after {timeout:g}s")


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Result:
    """Run ``argv`` (no shell) and return its :class:`Result`, whatever its exit code.

    Args:
        argv: the program and its arguments; ``argv[0]`` is looked up on ``PATH`` (``env``'s
            when given) unless it contains a ``/``.
        env: the whole environment of the program (default: this process's).
        timeout: seconds before the program is killed (default: no limit).
        input: text written to its stdin (default: stdin is ``/dev/null``).
        cwd: the directory it runs in (default: this process's).

    Raises:
        ProgramNotFoundError: the program does not exist.
        CommandTimeoutError: it ran past ``timeout``.
    """
    argv = [str(a) for a in argv]
    if not argv:
        raise ValueError("run: empty argv")
    try:
        proc = subprocess.run(
            argv,
            env=dict(env) if env is not None else None,
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            check=False,
        )
    except FileNotFoundError as exc:
        if cwd is not None and not os.path.isdir(cwd):
            raise
        raise ProgramNotFoundError(argv) from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandTimeoutError(argv, timeout or 0, _text(exc.stderr)) from exc
    return Result(proc.returncode, proc.stdout, proc.stderr)


def check(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Result:
    """:func:`run`, raising :class:`CommandError` when the exit code is not 0.

    Raises:
        CommandError: a non-zero exit (the message names the command, the exit code and
            stderr's tail); :class:`ProgramNotFoundError` and :class:`CommandTimeoutError` as
            for :func:`run` (both are :class:`CommandError`).
    """
    result = run(argv, env=env, timeout=timeout, input=input, cwd=cwd)
    if result.returncode != 0:
        raise CommandError(argv, result.returncode, result.stderr, result.stdout)
    return result


#: ``(argv) -> (returncode or None when the program is missing, stdout, stderr)``: what the
#: host checks read (:func:`probe`, or a fake in tests).
Probe = Callable[[Sequence[str]], tuple[int | None, str, str]]


def probe(argv: Sequence[str], timeout: float = 60) -> tuple[int | None, str, str]:
    """Run ``argv`` for a host check; never raises for the program's sake.

    Returns ``(returncode, stdout, stderr)``; ``(None, "", "<program>: not found on PATH")``
    when the program is missing, ``(124, "", "<program> timed out after <timeout>s")`` when it
    ran past ``timeout`` seconds (124 as coreutils' ``timeout`` exits).
    """
    try:
        rc, out, err = run(argv, timeout=timeout)
    except ProgramNotFoundError:
        return None, "", f"{argv[0]}: not found on PATH"
    except CommandTimeoutError:
        return 124, "", f"{argv[0]} timed out after {timeout:g}s"
    return rc, out, err
