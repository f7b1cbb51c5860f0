"""After an interrupted run: find what blocks the next one, and repair it (asking first).

A killed ``pulumi up`` (SIGKILL, a closed terminal, the machine's OOM killer) leaves:

* a **lock** whose process is gone (file backends): every later ``up``, ``destroy`` and
  ``stack import`` refuses to start ("the stack is currently locked"); the repair is
  ``pulumi cancel --yes``, which deletes the stack's lock files in a DIY backend
  (pulumi/pulumi v3.274.1 ``pkg/backend/diy/backend.go``: ``CancelCurrentUpdate``);
* **pending operations** in the checkpoint (the step the engine was in): ``up`` only warns
  and, for a pending create, makes the thing again next to the one that may exist; the repair
  is ``stack export`` then ``stack import`` of the same deployment, which clears them
  (``pkg/cmd/pulumi/stack/io.go``);
* **processes** the engine started and nobody waits for any more: its plugins (the
  Kubernetes and command providers, the language host) and the helper they were running (a
  cluster still being created); the repair stops them (SIGTERM, then SIGKILL after 10 s);
* a **Helm release record** the interrupted create left: Helm keeps each revision in a
  Secret ``sh.helm.release.v1.<name>.v<N>`` (labels ``owner=helm``, ``name``, ``status``),
  and ``helm install`` of a name with any record refuses ("cannot re-use a name that is still
  in use": helm v3.18.6 ``pkg/action/install.go``, ``availableName``; the version
  pulumi-kubernetes v4.25.0 builds in), as ``helm upgrade`` refuses a release whose last
  revision is ``pending-*`` ("another operation (install/upgrade/rollback) is in progress",
  ``pkg/action/upgrade.go``). The repair deletes the record the interrupted step made: the
  whole record of a release whose create was pending (the objects it made stay: the next
  install adopts objects that carry its ``meta.helm.sh/release-name`` annotation,
  ``existingResourceConflict`` in ``install.go``), or the one ``pending-*`` revision of a
  release the state holds (the deployed revision before it is current again). What ``helm
  uninstall`` would also delete (the objects) is left to the next ``make lab`` or ``make
  destroy``, which own them.

Each repair is printed before it runs; ``apply`` runs them only when asked (``--yes``, or a
``y`` at the prompt on a terminal). ``check`` prints them with the command that runs them as
printed (``GPULAB_STACK=<stack> make repair YES=1``).

The liveness check (``alive``) of ``make lab`` and ``make verify``: the cluster the stack
recorded (its ``clusterIdentity``) answers, is ready, and is that cluster; otherwise it says
which component did not answer, or names both clusters, and prints the fix. And it answers
where the stack recorded it: when the variant's own read (``Variant.kubeconfig``)
finds the recorded cluster at another API server endpoint, both endpoints and the variant's
fix are named and nothing runs (ops.endpoint).

``check --alive`` runs the liveness check after a check that found nothing to repair, on the
same read of the state (what ``make lab`` and ``make verify`` run first).

``python -m ops.repair check|apply|alive --stack S`` exit codes: 0 nothing to do (or
done), 1 something to repair or refused (the message names the cause and the fix), 2 usage.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from gpulab.config.lab import NAMESPACE, SCHEMA
from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError, os_error_fix
from gpulab.core.names import PROJECT
from gpulab.kube import client as kube
from gpulab.kube import identity
from ops import endpoint, stackstate
from variants import registry

#: Seconds an orphaned process gets between SIGTERM and SIGKILL.
GRACE: Final = 10.0


class RepairError(GpuLabError, RuntimeError):
    """A repair was refused or failed; the message names the cause and the first fix."""


@dataclass
class Stack:
    """One stack through the project's Pulumi CLI (``$GPULAB_PULUMI``) and backend."""

    name: str
    root: Path
    cli: str = field(default_factory=lambda: os.environ.get("GPULAB_PULUMI") or "pulumi")
    backend: str = field(default_factory=lambda: os.environ.get("GPULAB_BACKEND", ""))
    #: The exports read since the state last changed, by ``secrets``: a check and the liveness
    #: check after it (``check --alive``) read the state once.
    _exports: dict[bool, dict[str, Any]] = field(default_factory=dict, init=False, repr=False)

    def pulumi(self, *args: str, timeout: float = 300) -> str:
        """stdout of ``pulumi <args> --stack <name>``; raises CommandError on failure. Any
        command but ``stack export`` and ``config`` may change the state: the exports read
        before it are forgotten."""
        if args[:2] != ("stack", "export") and args[:1] != ("config",):
            self._exports.clear()
        return cmd.check([self.cli, *args, "--stack", self.name], cwd=self.root, timeout=timeout).stdout

    def export(self, secrets: bool = False) -> dict[str, Any]:
        """``pulumi stack export`` (``--show-secrets``: secrets in plaintext), read once until
        the state changes through this object."""
        if secrets not in self._exports:
            doc = json.loads(self.pulumi("stack", "export", *(["--show-secrets"] if secrets else [])) or "{}")
            self._exports[secrets] = doc if isinstance(doc, dict) else {}
        return self._exports[secrets]

    def config(self) -> dict[str, Any]:
        """``pulumi config --json`` (``{}`` when it cannot be read)."""
        try:
            doc = json.loads(self.pulumi("config", "--json") or "{}")
        except (GpuLabError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def import_deployment(self, exported: Mapping[str, Any]) -> None:
        """``pulumi stack import`` of ``exported`` (which clears every pending operation)."""
        (self.root / ".state").mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=self.root / ".state", delete=False) as f:
            json.dump(exported, f)
        try:
            self.pulumi("stack", "import", "--file", f.name)
        finally:
            os.unlink(f.name)


def config_value(config: Mapping[str, Any], key: str) -> str:
    """A ``gpu-lab:`` key from ``pulumi config --json``, else its default."""
    entry = config.get(f"{NAMESPACE}:{key}")
    if isinstance(entry, dict) and "value" in entry:
        return str(entry["value"])
    return str(SCHEMA[key][1])


# --- the repairs ----------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One repair: what it does (printed before it runs), and ``run()`` (returns what it did)."""

    what: str
    run: Callable[[], str]


def _lock_steps(stack: Stack) -> tuple[list[Step], list[str]]:
    """Stale locks -> one ``pulumi cancel`` step; a live lock -> a blocker (another run)."""
    root = stackstate.backend_dir(stack.backend)
    if root is None:
        return [], []  # the Pulumi Cloud and other services keep their locks themselves
    found = stackstate.locks(root, PROJECT, stack.name)
    live = [lk for lk in found if not stackstate.stale(lk)]
    if live:
        return [], [
            f"another run holds the {stack.name} stack: {', '.join(lk.describe() for lk in live)}; "
            "wait for it to finish"
        ]
    if not found:
        return [], []
    held = ", ".join(lk.describe() for lk in found)

    def cancel() -> str:
        stack.pulumi("cancel", "--yes")
        return f"removed the stale lock(s) with `pulumi cancel --yes` ({held})"

    return [Step(f"remove the lock left by a run that is gone ({held}): `pulumi cancel --yes`", cancel)], []


def _orphan_step(root: Path) -> list[Step]:
    orphans = stackstate.orphaned_plugins(root)
    if not orphans:
        return []
    shown = "; ".join(f"pid {p.pid} {stackstate.short(p.cmd, 60)}" for p in orphans[:6])
    more = f" (+{len(orphans) - 6} more)" if len(orphans) > 6 else ""

    def stop() -> str:
        stop_processes([p.pid for p in orphans])
        return f"stopped {len(orphans)} process(es) the killed engine left"

    return [Step(f"stop {len(orphans)} process(es) a killed engine left running: {shown}{more}", stop)]


def stop_processes(pids: Sequence[int], grace: float = GRACE) -> None:
    """SIGTERM ``pids`` (children first), then SIGKILL those left after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in reversed(pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_running(p) for p in pids):
            time.sleep(0.2)
        if not any(_running(p) for p in pids):
            return


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _pending_step(stack: Stack, deployment: Mapping[str, Any]) -> list[Step]:
    pending = stackstate.pending_operations(deployment)
    if not pending:
        return []
    shown = ", ".join(f"{kind} {urn.rsplit('::', 1)[-1]}" for kind, urn in pending)

    def clear() -> str:
        exported = stack.export()
        stack.import_deployment(exported)
        return (
            f"cleared {len(pending)} pending operation(s) ({shown}) with `pulumi stack export | stack import`"
        )

    return [
        Step(
            f"clear {len(pending)} pending operation(s) of the interrupted run ({shown}): the next "
            "`make lab` makes or checks them again (`pulumi stack export`, then `stack import`)",
            clear,
        )
    ]


def helm_records(api: Any, namespace: str, name: str) -> list[dict[str, Any]]:
    """Helm's storage Secrets of release ``name`` in ``namespace``: ``[{"secret", "revision",
    "status"}]`` by revision (labels ``owner=helm,name=<name>``; Helm's Secret driver)."""
    from kubernetes import client

    items = (
        client.CoreV1Api(api)
        .list_namespaced_secret(namespace, label_selector=f"owner=helm,name={name}", _request_timeout=(5, 15))
        .items
    )
    found = []
    for s in items:
        meta = s.metadata
        labels = (meta.labels if meta else None) or {}
        found.append(
            {
                "secret": meta.name if meta else "?",
                "revision": int(labels.get("version") or 0),
                "status": labels.get("status") or _status_of(s),
            }
        )
    return sorted(found, key=lambda r: r["revision"])


def _status_of(secret: Any) -> str:
    raw = (secret.data or {}).get("release")
    if not raw:
        return "?"
    blob = base64.b64decode(base64.b64decode(raw))
    doc = json.loads(gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob)
    return str((doc.get("info") or {}).get("status") or "?")


def helm_plan(records: Sequence[Mapping[str, Any]], create_pending: bool) -> tuple[list[str], str] | None:
    """Which of a release's records to delete, and why; None when there is nothing to repair.

    ``create_pending``: the state's create of the Release was interrupted (the release is not
    the state's): every record goes. Otherwise only a last revision ``pending-*`` goes.
    """
    if not records:
        return None
    if create_pending:
        states = ", ".join(f"v{r['revision']} {r['status']}" for r in records)
        return [str(r["secret"]) for r in records], f"left by the interrupted install ({states})"
    last = records[-1]
    if str(last["status"]).startswith("pending-"):
        return [str(last["secret"])], f"revision {last['revision']} is stuck {last['status']}"
    return None


def _helm_step(deployment: Mapping[str, Any], kubeconfig: str | None) -> tuple[list[Step], list[str]]:
    pending = stackstate.pending_release(deployment)
    where = pending or stackstate.release_in_state(deployment)
    if where is None or not kubeconfig:
        return [], []
    namespace, name = where
    try:
        api = kube.load_clients(kubeconfig)
        records = helm_records(api, namespace, name)
    except Exception as exc:  # the cluster does not answer: nothing to read, say so
        return [], [
            f"Helm's record of {namespace}/{name} could not be read ({str(exc).splitlines()[0][:200]})"
        ]
    decided = helm_plan(records, create_pending=pending is not None)
    if decided is None:
        return [], []
    secrets, why = decided

    def delete() -> str:
        from kubernetes import client

        core = client.CoreV1Api(api)
        for s in secrets:
            with contextlib.suppress(Exception):
                core.delete_namespaced_secret(s, namespace, _request_timeout=(5, 15))
        return f"deleted Helm's record {', '.join(secrets)} in {namespace}"

    return [
        Step(
            f"delete Helm's record of release {namespace}/{name} {why}: Secret(s) "
            f"{', '.join(secrets)} (the release's objects stay; the next install adopts them)",
            delete,
        )
    ], []


def plan(stack: Stack, for_destroy: bool = False) -> tuple[list[Step], list[str]]:
    """The repairs the stack needs before ``up`` (or ``destroy``), and what blocks them.

    Returns (steps in the order they must run, blockers: each a sentence with the fix).
    """
    steps: list[Step] = []
    blockers: list[str] = []
    lock_steps, lock_blockers = _lock_steps(stack)
    blockers += lock_blockers
    steps += _orphan_step(stack.root)
    steps += lock_steps
    try:
        deployment = stack.export(secrets=True).get("deployment") or {}
    except GpuLabError as exc:
        blockers.append(f"the {stack.name} stack's state could not be read: {str(exc).splitlines()[0]}")
        return steps, blockers
    if not for_destroy:  # destroy deletes the release anyway
        helm_steps, helm_blockers = _helm_step(deployment, stackstate.kubeconfig_of(deployment))
        steps += helm_steps
        blockers += helm_blockers
    steps += _pending_step(stack, deployment)
    return steps, blockers


def repair_command(stack: str) -> str:
    """The printed repair, run as printed from the checkout."""
    return f"GPULAB_STACK={stack} make repair YES=1"


def _say(text: str) -> None:
    print(f"gpu-lab: {text}", file=sys.stderr, flush=True)


def _confirm(prompt: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{prompt} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def apply(steps: Sequence[Step]) -> None:
    """Run ``steps`` in order, saying each result."""
    for step in steps:
        _say(step.run())


# --- liveness: the recorded cluster answers and is the stack's own ------------------------


def alive(stack: Stack, action: str) -> str | None:
    """None when the stack has no cluster yet, or its recorded cluster answers and is its
    own; else the message (cause and fix) for ``make <action>``."""
    try:
        deployment = stack.export(secrets=True).get("deployment") or {}
    except GpuLabError:
        return None  # no stack state yet: nothing to ask
    kubeconfig = stackstate.kubeconfig_of(deployment)
    if not kubeconfig:
        return None
    recorded = stackstate.identity_of(deployment)
    config = stack.config()
    kind, profile = config_value(config, "cluster"), config_value(config, "profile")
    variant = registry.get(kind)
    env = f"GPULAB_STACK={stack.name}"

    # Where the variant says its cluster answers now, against the endpoint recorded at create.
    def endpoint_moved() -> identity.EndpointChangedError | None:
        return endpoint.moved(
            variant, profile, stack.root, lambda key: config_value(config, key), recorded, stack.name
        )

    try:
        api = kube.load_clients(kubeconfig)
        kube.ping(api, timeout=5)
        if recorded:
            before, now = identity.Identity.from_json(recorded), identity.read(kubeconfig, api)
            identity.verify(
                before,
                now,
                f"the stack's objects are in the recorded cluster, which this kubeconfig no longer "
                f"reaches; remove the stack's records without touching either cluster with "
                f"`{env} make destroy FORGET=1`, then `{env} make lab`",
                variant.spec.moved_fix(profile, stack.name, before.server, now.server),
            )
    except identity.IdentityMismatchError as exc:
        return f"the {stack.name} lab's kubeconfig reaches another cluster: {exc}"
    except identity.EndpointChangedError as exc:
        return f"the {stack.name} lab: {exc}"
    except GpuLabError as exc:
        moved = endpoint_moved()
        if moved is not None:
            return f"the {stack.name} lab's cluster no longer answers at the recorded address: {moved}"
        why = str(exc).splitlines()[0]
        status = variant.status(profile, stack.root)
        if status.note:
            why = f"{why}; {status.note}"
        if variant.spec.owns_cluster:
            fix = f"rebuild it: `{env} make destroy && {env} make lab`"
            if status.gone is False:  # present, only not answering: the variant says what else to do
                fix += f" (the cluster still exists: {variant.spec.hint(profile)})"
        else:
            fix = (
                "make it answer again and rerun, or drop the release from the stack's state (it stays "
                f"in the cluster) with `{env} make destroy FORGET=1`"
            )
        return f"the {stack.name} lab's cluster does not answer: {why}.\n  fix: {fix}"
    moved = endpoint_moved()
    if moved is not None:
        return f"the {stack.name} lab's cluster answers at another address than the one recorded: {moved}"
    # Not a stop: `make verify` is the fix, and `make lab` may change what the smoke test ran on.
    node = endpoint.node_gone(api, stackstate.outputs_of(deployment), stack.name)
    if node is not None:
        _say(node)
    return None


def _alive_exit(stack: Stack, action: str) -> int:
    """:func:`alive`'s answer as an exit code (1, after saying the problem; else 0)."""
    problem = alive(stack, action)
    if problem:
        _say(problem)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (see module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m ops.repair")
    ap.add_argument("command", choices=("check", "apply", "alive"))
    ap.add_argument("--stack", required=True)
    ap.add_argument("--yes", action="store_true", help="apply without asking")
    ap.add_argument("--for-destroy", action="store_true", help="only what blocks a destroy")
    ap.add_argument("--action", default="lab", help="the make target the message is for")
    ap.add_argument(
        "--alive", action="store_true", help="check: then the liveness check, on the same state read"
    )
    args = ap.parse_args(argv)
    stack = Stack(args.stack, Path(os.environ.get("GPULAB_ROOT") or Path.cwd()))
    try:
        if args.command == "alive":
            return _alive_exit(stack, args.action)
        steps, blockers = plan(stack, for_destroy=args.for_destroy)
        for b in blockers:
            _say(b)
        if any("another run holds" in b for b in blockers):
            return 1
        if not steps:
            if args.command == "apply":
                _say(f"the {args.stack} stack needs no repair")
            return _alive_exit(stack, args.action) if args.command == "check" and args.alive else 0
        _say(f"the {args.stack} stack's last run did not finish; repairs needed:")
        for i, step in enumerate(steps, 1):
            print(f"  {i}. {step.what}", file=sys.stderr)
        if args.command == "check" and not args.yes:
            if _confirm("Run these repairs now?"):
                apply(steps)
                return _alive_exit(stack, args.action) if args.alive else 0
            _say(
                f"run them with `{repair_command(args.stack)}` (or `GPULAB_STACK={args.stack} make repair`, "
                f"which asks first), then `GPULAB_STACK={args.stack} make {args.action}` again"
            )
            return 1
        if not args.yes and not _confirm("Run these repairs now?"):
            _say(f"nothing was changed; to run them without the question: `{repair_command(args.stack)}`")
            return 1
        apply(steps)
    except GpuLabError as exc:
        _say(str(exc))
        return 1
    except OSError as exc:
        _say(f"{exc}\n  fix: {os_error_fix(exc)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
