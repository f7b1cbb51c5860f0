"""MicroK8s lifecycle for the lab: the snap installed and removed through commands, check-then-act.

Run by the variant's cluster command as ``python3 -m variants.microk8s.ctl up|down|preflight``,
as the user who runs ``make lab``. Only the steps that need root run as root
(:func:`variants.base.as_root`: directly when the helper is root, else ``sudo -n``, which never
prompts): ``snap install|refresh|remove``, ``microk8s status|config`` (the snap's wrappers refuse
users outside its ``microk8s`` group, which the lab does not join you to) and the marker.

``up --channel C``: when the installed snap already tracks C, nothing is installed (a re-run is
safe); else ``snap install microk8s --classic --channel=C`` (or ``snap refresh`` for the lab's
own install on another channel); a MicroK8s somebody else installed on another channel is left
alone and ``up`` fails saying so. The lab writes its marker in ``$SNAP_COMMON`` when it installs
the snap, so ``down`` removes (``snap remove --purge``: no automatic snapshot of the lab's data
is kept) only a MicroK8s it installed, and succeeds when the snap is already gone. Then ``up``
waits (``microk8s status --wait-ready``, then a Ready node), reads the kubeconfig into memory
(``microk8s config --use-loopback``: the API server at 127.0.0.1:16443, an address that does not
move with the host's default interface) and prints one JSON object: ``{"kubeconfig",
"kubernetesVersion", "channel", "installed": bool}``.

The channel is validated by config (:data:`variants.microk8s.CHANNEL`) and passed as one argv
element; no shell parses it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from gpulab.core.names import PROJECT
from gpulab.host import preflight
from gpulab.host.preflight import PreflightError
from variants.base import Action, ctl_main, ready_nodes
from variants.microk8s import (
    SNAP,
    as_root,
    check_sudo,
    host_findings,
    installed_tracking,
    marker_present,
    plan,
)

#: ``microk8s status --wait-ready`` is given this many seconds per try (the wait loops on it).
STATUS_TRY_SECONDS: Final = 60


# --------------------------------------------------------------------------- argv


def install_argv(channel: str) -> list[str]:
    """``snap install microk8s --classic --channel=C`` (the snap is classic: snapcraft.yaml)."""
    return ["snap", "install", SNAP.name, "--classic", f"--channel={channel}"]


def refresh_argv(channel: str) -> list[str]:
    """``snap refresh microk8s --channel=C``: the lab's own install moved to another channel."""
    return ["snap", "refresh", SNAP.name, f"--channel={channel}"]


def remove_argv() -> list[str]:
    """``snap remove --purge microk8s``: the snap and its data, no automatic snapshot kept."""
    return ["snap", "remove", "--purge", SNAP.name]


def status_argv(timeout: int) -> list[str]:
    """``microk8s status --wait-ready --timeout T``: exit 0 once ready, 1 when not in T s."""
    return [SNAP.command, "status", "--wait-ready", "--timeout", str(timeout)]


def config_argv() -> list[str]:
    """``microk8s config --use-loopback``: the admin kubeconfig with server 127.0.0.1."""
    return [SNAP.command, "config", "--use-loopback"]


# --------------------------------------------------------------------------- commands


class MicroK8sError(GpuLabError, RuntimeError):
    """A step failed; the message names what and the first fix. (A failed command raises
    :class:`gpulab.core.run.CommandError`, naming the command, its exit code and stderr.)"""


def _log(msg: str) -> None:
    print(f"[microk8s_ctl] {msg}", file=sys.stderr, flush=True)


def _run(argv: Sequence[str], timeout: float | None = None) -> str:
    """Run ``argv``; pass its stderr's tail on to ours; return its stdout.

    Raises:
        gpulab.core.run.CommandError: it failed, or is not there.
    """
    result = cmd.run(argv, timeout=timeout)
    sys.stderr.write(result.stderr[-4000:])
    if not result.ok:
        raise cmd.CommandError(argv, result.returncode, result.stderr, result.stdout)
    return result.stdout


def read_kubeconfig() -> str | None:
    """``microk8s config --use-loopback`` read as root into memory (never written to disk);
    None while it gives none."""
    result = cmd.run(as_root(config_argv()), timeout=60)
    return result.stdout if result.ok and "server:" in result.stdout else None


def _wait_ready(timeout: float) -> tuple[str, str]:
    """Wait for ``microk8s status --wait-ready``, the kubeconfig and a Ready node; return
    ``(kubeconfig, server gitVersion)``."""
    from kubernetes import client

    from gpulab.kube.client import load_clients

    deadline = time.monotonic() + timeout
    last = "not ready yet"
    while time.monotonic() < deadline:
        wait = max(1, min(STATUS_TRY_SECONDS, int(deadline - time.monotonic())))
        status = cmd.run(as_root(status_argv(wait)), timeout=wait + 30)
        text = read_kubeconfig() if status.ok else None
        if text is None:
            said = (status.stdout + status.stderr).strip().splitlines()
            last = said[-1] if said else "microk8s is not ready"
        else:
            try:
                api = load_clients(text)
                nodes = [api.sanitize_for_serialization(n) for n in client.CoreV1Api(api).list_node().items]
                if ready_nodes(nodes):
                    return text, str(client.VersionApi(api).get_code().git_version)
                last = "no node Ready yet"
            except Exception as exc:  # the API server is still starting
                last = str(exc).splitlines()[0]
        time.sleep(2)
    raise MicroK8sError(
        f"MicroK8s did not become ready in {timeout:.0f}s ({last})\n"
        "  fix: sudo microk8s inspect; sudo microk8s status; "
        "journalctl -u snap.microk8s.daemon-kubelite -n 100"
    )


@dataclass(frozen=True)
class UpSpec:
    """``channel`` (validated ``1.MINOR/RISK``), ``timeout`` in seconds for the install and for
    the node to be Ready."""

    channel: str
    timeout: int = 600


def up(spec: UpSpec) -> dict[str, Any]:
    """Install (or refresh) the snap if needed, wait for it, return its kubeconfig (module
    docstring)."""
    failed = [f for f in host_findings(spec.channel) if not f.ok]
    if failed:
        raise PreflightError(failed)
    action = plan(installed_tracking(), marker_present(), spec.channel)
    if action == "reuse":
        _log(f"microk8s tracks {spec.channel}; not installing")
    else:
        argv = as_root(install_argv(spec.channel) if action == "install" else refresh_argv(spec.channel))
        _log(f"$ {' '.join(argv)}  ({action})")
        _run(argv, timeout=spec.timeout)
        with tempfile.TemporaryDirectory(prefix="gpulab-microk8s-") as tmp:
            marker = Path(tmp) / "gpulab-installed.json"
            marker.write_text(json.dumps({"channel": spec.channel, "installedBy": PROJECT}) + "\n")
            _run(as_root(["install", "-m", "0644", str(marker), SNAP.marker]), timeout=60)
    kubeconfig, server = _wait_ready(spec.timeout)
    return {
        "kubeconfig": kubeconfig,
        "kubernetesVersion": server,
        "channel": spec.channel,
        "installed": action != "reuse",
    }


def down() -> dict[str, Any]:
    """Remove the snap if gpu-lab installed it; a snap already gone is success."""
    if not Path(SNAP.mount).exists():
        _log("microk8s is already gone")
        return {"removed": False, "reason": "absent"}
    sudo = check_sudo(os.geteuid())
    if not sudo.ok:
        raise PreflightError([sudo])
    if not marker_present():
        _log(f"microk8s was not installed by gpu-lab ({SNAP.marker} is absent); leaving it installed")
        return {"removed": False, "reason": "not installed by gpu-lab"}
    _run(as_root(remove_argv()), timeout=600)
    return {"removed": True}


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints one JSON object; exit 0 ok, 1 failure, 2 usage."""
    ap = argparse.ArgumentParser(prog="python3 -m variants.microk8s.ctl")
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--channel", required=True)
    u.add_argument("--timeout", type=int, default=600)
    sub.add_parser("down")
    p = sub.add_parser("preflight", help="the host checks, as JSON; exit 1 when one fails")
    p.add_argument("--channel", required=True)
    args = ap.parse_args(argv)
    actions: dict[str, Action] = {
        "up": lambda: (up(UpSpec(args.channel, args.timeout)), 0),
        "down": lambda: (down(), 0),
        "preflight": lambda: preflight.report(host_findings(args.channel)),
    }
    return ctl_main("microk8s_ctl", actions[args.cmd])


if __name__ == "__main__":
    sys.exit(main())
