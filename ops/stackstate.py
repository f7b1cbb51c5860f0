"""What a stack's state says after a run that did not finish: its locks, its pending
operations, the processes the engine left, the kubeconfig and identity it recorded.

Pure readers of Pulumi's own formats, each checked in pulumi/pulumi v3.274.1 (``pkg/``):

* **Locks** of a DIY (file) backend: ``<backend>/.pulumi/locks/<org>/<project>/<stack>/<uuid>.json``
  (``organization/gpu-lab/sim`` for a project-scoped stack; ``<stack>/`` for a legacy one),
  holding ``{"pid", "username", "hostname", "timestamp"}`` of the process that took it
  (``backend/diy/lock.go``: ``lockContent``, ``lockPath``). ``pulumi cancel`` deletes every
  lock file of the stack (``backend/diy/backend.go``: ``CancelCurrentUpdate``); every update,
  destroy and ``stack import`` takes the lock first (``ImportDeployment``), so a lock whose
  process is gone blocks them all. A lock is **stale** when it was taken on this host and its
  pid no longer runs a ``pulumi`` process.
* **Pending operations**: the checkpoint's ``pending_operations`` (``[{"resource": {...},
  "type": "creating"|"updating"|"deleting"|...}]``), left by an engine killed mid-step; ``up``
  only warns about them (``resource/deploy/deployment_executor.go``:
  ``printPendingOperationsWarning``), and ``pulumi stack import`` clears them all
  (``cmd/pulumi/stack/io.go``: "Explicitly clear-out any pending operations").
* **Orphaned plugins**: the engine's plugin processes (``pulumi-resource-*``,
  ``pulumi-language-*``, ``pulumi-analyzer-*``, this project's stand-ins) whose engine is gone
  (their parent is no ``pulumi`` process), running in the project directory, and their
  children (a helper command still running, e.g. ``variants.sim.ctl up``).

No Pulumi import, no subprocess: the callers (ops.repair, ops.teardown) run the CLI.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: Names of the engine's plugin executables (and this project's stand-ins for two of them).
PLUGIN_MARKS: Final = (
    "pulumi-resource-",
    "pulumi-language-",
    "pulumi-analyzer-",
    "pulumi_resource_command.py",
    "pulumi_language_python.py",
)
#: pulumi-kubernetes' Helm Release type token.
HELM_RELEASE: Final = "kubernetes:helm.sh/v3:Release"
#: pulumi-command's type token (the lab's cluster commands and checks).
COMMAND: Final = "command:local:Command"
#: The Kubernetes provider's type token (its inputs hold the kubeconfig, a secret).
K8S_PROVIDER: Final = "pulumi:providers:kubernetes"
#: The root resource of every stack; its outputs are the stack's outputs.
STACK: Final = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Lock:
    """One lock file of a DIY backend (``backend/diy/lock.go``'s ``lockContent``)."""

    path: Path
    pid: int
    username: str
    hostname: str
    timestamp: str

    def describe(self) -> str:
        """``pid 4242 (root@host, since 2026-12-01T10:00:00Z)``."""
        return f"pid {self.pid} ({self.username}@{self.hostname}, since {self.timestamp})"


def backend_dir(url: str) -> Path | None:
    """The directory of a ``file://`` backend URL (None for any other backend)."""
    if not url.startswith("file://"):
        return None
    path = urllib.parse.unquote(url[len("file://") :].split("?", 1)[0])
    return Path(os.path.expanduser(path or "~"))


def lock_dirs(root: Path, project: str, stack: str) -> list[Path]:
    """Where the locks of ``stack`` live in the backend directory ``root`` (project-scoped,
    then the legacy layout)."""
    base = root / ".pulumi" / "locks"
    return [base / "organization" / project / stack, base / stack]


def locks(root: Path, project: str, stack: str) -> list[Lock]:
    """The lock files of ``stack`` (unreadable ones with pid 0)."""
    found: list[Lock] = []
    for d in lock_dirs(root, project, stack):
        for f in sorted(d.glob("*.json")) if d.is_dir() else []:
            try:
                doc = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                doc = {}
            found.append(
                Lock(
                    f,
                    int(doc.get("pid") or 0),
                    str(doc.get("username") or "?"),
                    str(doc.get("hostname") or "?"),
                    str(doc.get("timestamp") or "?"),
                )
            )
    return found


def cmdline(pid: int) -> str:
    """``/proc/<pid>/cmdline`` with spaces for NULs ("" when gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def is_engine(pid: int, cmd: Callable[[int], str] = cmdline, alive: Callable[[int], bool] = _alive) -> bool:
    """True when ``pid`` runs a ``pulumi`` CLI (an engine)."""
    if pid <= 0 or not alive(pid):
        return False
    argv0 = cmd(pid).split(" ", 1)[0]
    return os.path.basename(argv0) == "pulumi"


def stale(lock: Lock, host: str | None = None, engine: Callable[[int], bool] = is_engine) -> bool:
    """True when ``lock`` was taken on this host by a process that no longer runs an engine."""
    return lock.hostname == (host or socket.gethostname()) and not engine(lock.pid)


def pending_operations(deployment: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``[(operation type, URN)]`` of the checkpoint's pending operations."""
    out = []
    for op in deployment.get("pending_operations") or []:
        res = op.get("resource") or {}
        out.append((str(op.get("type") or "?"), str(res.get("urn") or "?")))
    return out


def pending_release(deployment: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(namespace, name)`` of a Helm Release whose create the interrupted run left pending."""
    for op in deployment.get("pending_operations") or []:
        res = op.get("resource") or {}
        if res.get("type") == HELM_RELEASE and op.get("type") == "creating":
            inputs = res.get("inputs") or {}
            return str(inputs.get("namespace") or "default"), str(inputs.get("name") or "")
    return None


def release_in_state(deployment: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(namespace, name)`` of the Helm Release the state holds, or None."""
    for r in deployment.get("resources") or []:
        if r.get("type") == HELM_RELEASE:
            outs = r.get("outputs") or r.get("inputs") or {}
            return str(outs.get("namespace") or "default"), str(outs.get("name") or "")
    return None


def _plain(value: Any) -> Any:
    """A value from ``stack export --show-secrets``: secrets are ``{"4dabf18193072939515e22adb298388d":
    sig, "plaintext": "<JSON>"}``."""
    if isinstance(value, Mapping) and "plaintext" in value:
        try:
            return json.loads(value["plaintext"])
        except (TypeError, ValueError):
            return value["plaintext"]
    return value


def kubeconfig_of(deployment: Mapping[str, Any]) -> str | None:
    """The kubeconfig the stack's Kubernetes provider was given (needs ``stack export
    --show-secrets``), else the one a cluster command printed; None when neither is there
    (a first run interrupted before its cluster answered)."""
    for r in deployment.get("resources") or []:
        if r.get("type") == K8S_PROVIDER:
            kc = _plain((r.get("inputs") or {}).get("kubeconfig"))
            if isinstance(kc, str) and kc.strip():
                return kc
    for r in deployment.get("resources") or []:
        if r.get("type") == COMMAND and str(r.get("urn", "")).endswith("-cluster"):
            out = _plain((r.get("outputs") or {}).get("stdout"))
            try:
                kc = json.loads(str(out).strip().splitlines()[-1]).get("kubeconfig")
            except (ValueError, IndexError, AttributeError):
                continue
            if isinstance(kc, str) and kc.strip():
                return kc
    return None


def outputs_of(deployment: Mapping[str, Any]) -> dict[str, Any]:
    """The stack's outputs (those of its root ``pulumi:pulumi:Stack`` resource; secrets in
    plaintext when exported with ``--show-secrets``), ``{}`` when it has none yet."""
    for r in deployment.get("resources") or []:
        if r.get("type") == STACK:
            return {k: _plain(v) for k, v in (r.get("outputs") or {}).items()}
    return {}


def identity_of(deployment: Mapping[str, Any]) -> dict[str, Any] | None:
    """The identity the stack's ``cluster-identity`` command recorded (its stdout), or None."""
    for r in deployment.get("resources") or []:
        if r.get("type") == COMMAND and str(r.get("urn", "")).endswith("::cluster-identity"):
            out = _plain((r.get("outputs") or {}).get("stdout"))
            try:
                doc = json.loads(str(out).strip().splitlines()[-1])
            except (ValueError, IndexError):
                return None
            return doc if isinstance(doc, dict) else None
    return None


@dataclass(frozen=True)
class Proc:
    """A process: pid, parent pid, working directory, command line."""

    pid: int
    ppid: int
    cwd: str
    cmd: str


def processes() -> list[Proc]:
    """Every process this user can see (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[-1].split()[1])
            cwd = os.readlink(entry / "cwd")
        except (OSError, ValueError, IndexError):
            continue
        out.append(Proc(int(entry.name), ppid, cwd, cmdline(int(entry.name))))
    return out


def orphaned_plugins(root: Path, procs: Sequence[Proc] | None = None) -> list[Proc]:
    """Plugin processes running in ``root`` whose engine is gone, and all their descendants
    (see module docstring), parents first."""
    procs = processes() if procs is None else list(procs)
    by_pid = {p.pid: p for p in procs}
    here = str(root.resolve())

    def engine_parent(p: Proc) -> bool:
        parent = by_pid.get(p.ppid)
        return parent is not None and os.path.basename(parent.cmd.split(" ", 1)[0]) == "pulumi"

    tops = [
        p
        for p in procs
        if (p.cwd == here or p.cwd.startswith(here + os.sep))
        and any(mark in p.cmd for mark in PLUGIN_MARKS)
        and not engine_parent(p)
        and not any(mark in by_pid[p.ppid].cmd for mark in PLUGIN_MARKS if p.ppid in by_pid)
    ]
    found: list[Proc] = []
    todo = list(tops)
    while todo:
        p = todo.pop(0)
        if p in found:
            continue
        found.append(p)
        todo += [c for c in procs if c.ppid == p.pid]
    return found


def short(cmd: str, width: int = 80) -> str:
    """A command line cut for a message."""
    return cmd if len(cmd) <= width else cmd[: width - 3] + "..."


def names(urns: Iterable[str]) -> str:
    """The resource names of URNs, comma-separated."""
    return ", ".join(u.rsplit("::", 1)[-1] for u in urns)
