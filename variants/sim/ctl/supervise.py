"""The simulated control plane as one supervised unit: a component that dies takes the lab down.

kwokctl starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the kwok
controller as detached processes (``Setsid``, ``pkg/utils/exec/cmd_other.go``, kwok v0.8.0)
and leaves them: when etcd dies, the API server keeps answering ``/version`` and retries
etcd's port, half a cluster. ``up`` therefore starts a supervisor next to them
(``python -m variants.sim.ctl supervise``, detached, its pid in ``<workdir>/supervisor.pid``,
its log ``<workdir>/logs/supervisor.log``). Every :data:`INTERVAL` seconds it reads the
components' pid files; when one has exited, it records which (``<workdir>/down.json``:
the component, its pid, when, and the state of every other component, e.g. ``etcd``
``stopped`` after a SIGSTOP), stops the others (SIGTERM, then SIGKILL after
:data:`GRACE` seconds) and exits. The lab is then down as a whole, its directory and its
ports kept (the ports stay reserved: :mod:`variants.sim.ctl.ports`) until ``down``.

A frozen component (stopped, state ``T``) is not dead: it is recorded in ``status``; when
etcd stays frozen, kube-controller-manager and kube-scheduler lose their leader lease and
exit within about 15 s (their ``--leader-elect`` default), and the supervisor takes the
rest down then.

``down`` stops the supervisor first (:func:`stop`; on SIGTERM it exits and touches nothing),
then the components.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

#: Seconds between two looks at the components.
INTERVAL: Final = 0.5
#: Seconds the others get between SIGTERM and SIGKILL when one died.
GRACE: Final = 5.0
PID_FILE: Final = "supervisor.pid"
DOWN_FILE: Final = "down.json"
LOG_FILE: Final = "supervisor.log"
#: The project root: ``python -m variants.sim.ctl`` runs from there.
ROOT: Final = Path(__file__).resolve().parents[3]

#: /proc state letters in words.
_STATES: Final = {
    "R": "running",
    "S": "running",
    "D": "running (disk wait)",
    "I": "running",
    "T": "stopped (SIGSTOP)",
    "t": "stopped (traced)",
    "Z": "exited",
    "X": "exited",
}


def proc_state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (``R``, ``S``, ``T``, ``Z``, ...), None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0]


def describe_state(state: str | None) -> str:
    """``running``, ``stopped (SIGSTOP)``, ``exited``, ... for a /proc state letter."""
    return "exited" if state is None else _STATES.get(state, f"state {state}")


def components(pid_dir: Path) -> dict[str, int]:
    """Component -> pid, from kwokctl's pid files (``pids/<component>.pid``)."""
    found: dict[str, int] = {}
    for f in sorted(pid_dir.glob("*.pid")) if pid_dir.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            found[f.stem] = int(f.read_text().strip())
    return found


def states(pid_dir: Path) -> dict[str, str]:
    """Component -> its state in words (:func:`describe_state`)."""
    return {name: describe_state(proc_state(pid)) for name, pid in components(pid_dir).items()}


def down_record(workdir: Path) -> dict[str, Any] | None:
    """What the supervisor wrote when it took the lab down, or None."""
    try:
        doc = json.loads((workdir / DOWN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def describe_down(record: Mapping[str, Any]) -> str:
    """One sentence from :func:`down_record`: ``its supervisor took it down at T: etcd
    (pid N) exited; then: kube-apiserver running, ...``."""
    others = ", ".join(f"{k} {v}" for k, v in (record.get("others") or {}).items())
    return (
        f"its supervisor took it down at {record.get('at')}: {record.get('component')} "
        f"(pid {record.get('pid')}) exited" + (f"; the others then: {others}" if others else "")
    )


def supervisor_pid(workdir: Path) -> int | None:
    """The running supervisor's pid, or None."""
    try:
        pid = int((workdir / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    state = proc_state(pid)
    return pid if state not in (None, "Z", "X") and "supervise" in _cmdline(pid) else None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def spawn(name: str, workdir: Path, cluster_dir: Path) -> int:
    """Start the supervisor of cluster ``name`` (detached: its own session, no inherited
    descriptors); returns its pid. ``cluster_dir`` is on its command line, so the cluster's
    process search (:func:`variants.sim.ctl.process._cluster_pids`) finds it."""
    (workdir / DOWN_FILE).unlink(missing_ok=True)
    log_dir = workdir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with (log_dir / LOG_FILE).open("a") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "variants.sim.ctl",
                "supervise",
                "--name",
                name,
                "--workdir",
                str(workdir),
                "--watch",
                str(cluster_dir),
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env={**os.environ, "TMPDIR": str(workdir / "tmp")},
        )
    (workdir / PID_FILE).write_text(f"{proc.pid}\n", encoding="utf-8")
    return proc.pid


def stop(workdir: Path, timeout: float = 5.0) -> None:
    """Stop the supervisor (it exits and leaves the components alone)."""
    pid = supervisor_pid(workdir)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while proc_state(pid) not in (None, "Z", "X") and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc_state(pid) not in (None, "Z", "X"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    (workdir / PID_FILE).unlink(missing_ok=True)


def _say(msg: str) -> None:
    with contextlib.suppress(OSError):
        print(f"{datetime.now(UTC).isoformat(timespec='seconds')} {msg}", flush=True)


def _bring_down(workdir: Path, pid_dir: Path, dead: str, pids: dict[str, int]) -> None:
    others = {n: describe_state(proc_state(p)) for n, p in pids.items() if n != dead}
    record = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "component": dead,
        "pid": pids[dead],
        "log": str(pid_dir.parent / "logs" / f"{dead}.log"),
        "others": others,
    }
    with contextlib.suppress(OSError):
        (workdir / DOWN_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    _say(f"{dead} (pid {pids[dead]}) exited; taking the lab down (others: {others})")
    alive = [p for n, p in pids.items() if n != dead and proc_state(p) not in (None, "Z", "X")]
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, GRACE)):
        for p in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, sig)
                if sig == signal.SIGTERM:
                    os.kill(p, signal.SIGCONT)  # a stopped process acts on SIGTERM only once continued
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(proc_state(p) not in (None, "Z", "X") for p in alive):
            time.sleep(0.1)
        alive = [p for p in alive if proc_state(p) not in (None, "Z", "X")]
        if not alive:
            break
    _say("the lab is down" if not alive else f"processes survived SIGKILL: {alive}")


def run(workdir: Path, cluster_dir: Path, interval: float = INTERVAL) -> int:
    """The supervisor's loop (see module docstring); returns its exit code."""
    stopping = False

    def on_term(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    pid_dir = cluster_dir / "pids"
    pids = components(pid_dir)
    _say(f"supervising {', '.join(f'{n} (pid {p})' for n, p in pids.items()) or 'nothing'}")
    while not stopping:
        if not cluster_dir.is_dir():
            _say(f"{cluster_dir} is gone; exiting")
            return 0
        # Components listed later (a pid file written after this supervisor started) count too.
        pids = {**pids, **components(pid_dir)}
        dead = next((n for n, p in pids.items() if proc_state(p) in (None, "Z", "X")), None)
        if dead is not None:
            _bring_down(workdir, pid_dir, dead, pids)
            return 0
        time.sleep(interval)
    _say("stopped (SIGTERM): leaving the components as they are")
    return 0
