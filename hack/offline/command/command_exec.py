"""Running one command for gpu-lab's offline stand-in for pulumi-command (no gRPC here).

The shape of a run follows upstream pulumi-command v1.2.1 (``provider/pkg/provider/local/
commandOutputs.go``): argv is the interpreter plus the command as one argument, stdout and
stderr are captured apart and together, each line of the logged streams is handed to a
callback while the command runs, one trailing newline is trimmed, and a failure reads
``exit status N: running "<command>":\\n<output>``. Deliberate differences say "Divergence".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping

from command_logic import argv_for, trim_newline

#: Divergence: upstream puts the whole combined output into the error; we keep its tail.
MAX_ERROR_OUTPUT = 32 * 1024
#: Divergence: upstream's line scanner stops (and the command then hangs) on a line over
#: 64 KiB; we log such a line in pieces of this size.
MAX_LOG_LINE = 64 * 1024


class CommandFailed(Exception):
    """A command that could not start or did not succeed; ``str()`` is the engine's error text."""


def go_quote(s: str) -> str:
    """``s`` quoted like Go's ``%q`` (how upstream's error text shows the command)."""
    esc = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n"}
    esc |= {"\r": "\\r", "\t": "\\t", "\v": "\\v"}
    out = []
    for c in s:
        if c in esc:
            out.append(esc[c])
        elif c == " " or c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def exit_description(returncode: int) -> str:
    """Go's ``ExitError`` text: ``exit status N``, or ``signal: killed`` for a signal."""
    if returncode >= 0:
        return f"exit status {returncode}"
    try:
        name = signal.strsignal(-returncode) or f"signal {-returncode}"
    except ValueError:
        name = f"signal {-returncode}"
    return f"signal: {name[:1].lower()}{name[1:]}"


def failure_text(cause: str, command: str, combined: bytes) -> str:
    """Upstream's error: ``<cause>: running "<command>":\\n<combined stdout+stderr>`` (its tail)."""
    head = ""
    if len(combined) > MAX_ERROR_OUTPUT:
        head = f"[... {len(combined) - MAX_ERROR_OUTPUT} bytes of output omitted ...]\n"
        combined = combined[-MAX_ERROR_OUTPUT:]
    return f"{cause}: running {go_quote(command)}:\n{head}{combined.decode(errors='replace')}"


class LineSplitter:
    """Takes bytes; calls ``emit`` once per complete line (``\\n`` and a final ``\\r`` removed)."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
        self.buf = b""

    def feed(self, data: bytes) -> None:
        """Add output and emit every line it completes (a very long line in pieces)."""
        self.buf += data
        while True:
            nl = self.buf.find(b"\n")
            if nl < 0:
                while len(self.buf) >= MAX_LOG_LINE:
                    self._emit(self.buf[:MAX_LOG_LINE])
                    self.buf = self.buf[MAX_LOG_LINE:]
                return
            line, self.buf = self.buf[:nl], self.buf[nl + 1 :]
            while len(line) > MAX_LOG_LINE:
                self._emit(line[:MAX_LOG_LINE])
                line = line[MAX_LOG_LINE:]
            self._emit(line)

    def close(self) -> None:
        """Emit the last, unterminated line if there is one (as Go's ``bufio.Scanner``)."""
        if self.buf:
            self._emit(self.buf)
            self.buf = b""

    def _emit(self, raw: bytes) -> None:
        self.emit(raw.removesuffix(b"\r").decode(errors="replace"))


def resolve_program(name: str, path: str | None = None) -> str | None:
    """Where ``name`` runs from: itself when it holds a ``/``, else a lookup on the provider's
    own PATH (as Go's ``exec.Command`` does; not a PATH given in ``environment``)."""
    if "/" in name:
        return name
    return shutil.which(name, path=os.environ.get("PATH", "") if path is None else path)


def start_error(argv0: str, exc: OSError) -> str:
    """Go's text for a failed start, e.g. ``fork/exec /bin/shx: no such file or directory``."""
    msg = os.strerror(exc.errno) if exc.errno else str(exc)
    return f"fork/exec {argv0}: {msg[:1].lower()}{msg[1:]}"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group that ``proc`` leads: the command and whatever it started."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


class Runs:
    """The commands running now, so that Cancel and shutdown can kill them."""

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        """Track a started command."""
        with self._lock:
            self._procs.add(proc)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        """Forget a finished command."""
        with self._lock:
            self._procs.discard(proc)

    def kill_all(self) -> None:
        """Kill every running command's process group (upstream: the contexts are cancelled)."""
        with self._lock:
            procs = list(self._procs)
        for p in procs:
            kill_group(p)


def _pump(
    fd: int, buf: bytearray, combined: bytearray, lock: threading.Lock, log: LineSplitter | None
) -> None:
    while chunk := os.read(fd, 65536):
        buf += chunk
        with lock:
            combined.extend(chunk)
        if log is not None:
            log.feed(chunk)
    if log is not None:
        log.close()


def _feed_stdin(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def run_command(
    command: str,
    *,
    interpreter: list[str] | None,
    env: Mapping[str, str],
    cwd: str,
    stdin: str | None = None,
    timeout: float = 0,
    log: Callable[[str], None] | None = None,
    log_stdout: bool = True,
    log_stderr: bool = True,
    runs: Runs | None = None,
) -> tuple[str, str]:
    """Run ``command`` and return its ``(stdout, stderr)``, each without one trailing newline.

    ``log`` gets each line of the selected streams while the command runs. ``timeout``
    (seconds, 0 = none) kills the command's whole process group when it expires
    (Divergence: Go's ``CommandContext`` kills only the direct child).

    Raises:
        CommandFailed: the command did not start or exited non-zero, with upstream's text.
    """
    argv = argv_for(interpreter, command)
    if not os.path.isdir(cwd):
        why = "not a directory" if os.path.exists(cwd) else "no such file or directory"
        raise CommandFailed(failure_text(f"chdir {cwd}: {why}", command, b""))
    exe = resolve_program(argv[0])
    if exe is None:
        raise CommandFailed(
            failure_text(f'exec: "{argv[0]}": executable file not found in $PATH', command, b"")
        )
    try:
        proc = subprocess.Popen(
            argv,
            executable=exe,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, killed as a whole on timeout
        )
    except OSError as exc:
        raise CommandFailed(failure_text(start_error(exe, exc), command, b"")) from None
    except ValueError:  # a NUL in an argument or the environment
        raise CommandFailed(failure_text(f"fork/exec {exe}: invalid argument", command, b"")) from None
    if runs is not None:
        runs.add(proc)
    out, err, combined = bytearray(), bytearray(), bytearray()
    lock = threading.Lock()
    assert proc.stdout is not None and proc.stderr is not None
    threads = [
        threading.Thread(
            target=_pump,
            args=(fd, buf, combined, lock, LineSplitter(log) if (log and logged) else None),
            daemon=True,
        )
        for fd, buf, logged in (
            (proc.stdout.fileno(), out, log_stdout),
            (proc.stderr.fileno(), err, log_stderr),
        )
    ]
    if stdin:
        threads.append(threading.Thread(target=_feed_stdin, args=(proc, stdin.encode()), daemon=True))
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
    timed_out = False
    try:
        try:
            proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc)
            proc.wait()
        # Like Go with WaitDelay unset: read until every holder of the pipes has closed them.
        for t in threads:
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                timed_out = True
                kill_group(proc)
                t.join(5)
    finally:
        if runs is not None:
            runs.discard(proc)
        proc.stdout.close()
        proc.stderr.close()
    if proc.returncode != 0 or timed_out:
        cause = exit_description(proc.returncode)
        if timed_out:
            # Divergence: Go says only "signal: killed"; we add why.
            cause += f" (the {timeout:g}s timeout expired)"
        raise CommandFailed(failure_text(cause, command, bytes(combined)))
    return trim_newline(out.decode(errors="replace")), trim_newline(err.decode(errors="replace"))
