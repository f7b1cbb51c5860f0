"""k3s lifecycle for the lab: install and uninstall through commands, check-then-act.

Run by the K3sCluster component as ``python3 -m variants.k3s.ctl up|down|preflight``, as
the user who runs ``make lab``. Only the steps that need root run as root (:func:`variants.base.as_root`:
directly when the helper is root, else through ``sudo -n``, which never prompts): the
installer (it writes ``/usr/local/bin`` and a systemd unit), the uninstaller, the marker in
``/etc/rancher/k3s`` and reading ``/etc/rancher/k3s/k3s.yaml`` (mode 0600, root's: k3s
``--write-kubeconfig-mode`` would open it to every user, which the lab does not do).
Preflight checks that ``sudo -n`` works and that the lab itself is not run through sudo
(sudo's ``secure_path`` would drop the user's PATH, so their ``pulumi`` would look missing,
and the checkout's ``.venv`` and ``.state`` would become root's).

``up --version V``: when ``k3s --version`` already reports V, nothing is installed (a
re-run is safe); otherwise the official install script (``https://get.k3s.io``) is
downloaded to a temporary file and run as ``sh <script>`` with ``INSTALL_K3S_VERSION=V``
in its environment (:func:`install_command`, run as root with ``env``: sudo resets the
environment; the version is validated by config, and no shell pipes a download). A k3s
of another version that gpu-lab did not install is left alone and ``up`` fails saying so.
The lab writes :data:`MARKER` when it installs k3s, so ``down`` uninstalls
(``k3s-uninstall.sh``) only a k3s it installed, and succeeds when k3s is already gone.
Then ``up`` waits for the node to be Ready and prints one JSON object: ``{"kubeconfig",
"kubernetesVersion", "version", "installed": bool}``.

GPUs (docs.k3s.io, "Alternative Container Runtime Support"): k3s adds an ``nvidia``
runtime handler to its containerd config when it finds ``nvidia-container-runtime`` at
start (also under ``/usr/local/nvidia/toolkit``, where the GPU Operator's toolkit installs
it) and ships a ``nvidia`` RuntimeClass; runc stays the default, so GPU Pods set
``runtimeClassName: nvidia``. The operator's toolkit is pointed at k3s's containerd config
and socket (variants/k3s/node.py: ``CONTAINERD_CONFIG``, ``CONTAINERD_SOCKET``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from gpulab.core.names import PROJECT
from gpulab.host import preflight
from gpulab.host.preflight import Finding, PreflightError, raise_on_failures
from gpulab.kube.client import load_clients
from variants.base import Action, RootSteps, as_root, ctl_main, ready_nodes

INSTALL_SCRIPT_URL: Final = "https://get.k3s.io"
K3S_BIN: Final = Path("/usr/local/bin/k3s")
UNINSTALL_SCRIPT: Final = Path("/usr/local/bin/k3s-uninstall.sh")
KUBECONFIG: Final = Path("/etc/rancher/k3s/k3s.yaml")
#: Written when the lab installs k3s; k3s-uninstall.sh removes /etc/rancher/k3s with it.
MARKER: Final = Path("/etc/rancher/k3s/gpulab-installed.json")
CHECK_SUDO: Final = "k3s-sudo"
CHECK_NOT_UNDER_SUDO: Final = "k3s-not-under-sudo"
#: Proxy settings the installer's downloads need, passed on through sudo's reset environment.
PROXY_VARS: Final = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy")
CHECK_INIT: Final = "k3s-systemd"
CHECK_INSTALLED: Final = "k3s-installed"
_VERSION_RE: Final = re.compile(r"k3s version (v\d+\.\d+\.\d+\+k3s\d+)")


# --------------------------------------------------------------------------- pure helpers


def install_command(script: str, version: str) -> tuple[list[str], dict[str, str]]:
    """``(argv, extra environment)`` that installs k3s ``version`` with the downloaded script.

    The installer reads its options from the environment (``INSTALL_K3S_VERSION``); argv
    carries only the script's path. No option disables the server's defaults: this is a
    single-node server with the bundled containerd.
    """
    return ["sh", script], {"INSTALL_K3S_VERSION": version}


def uninstall_argv() -> list[str]:
    """The uninstall script the k3s installer wrote."""
    return [str(UNINSTALL_SCRIPT)]


def version_argv() -> list[str]:
    """``k3s --version`` of the installed binary."""
    return [str(K3S_BIN), "--version"]


def parse_version(output: str) -> str | None:
    """``k3s --version`` output -> ``"v1.34.1+k3s1"``; None when it names no release."""
    m = _VERSION_RE.search(output)
    return m.group(1) if m else None


def plan(installed: str | None, ours: bool, wanted: str) -> str:
    """What ``up`` does: ``install`` (none there), ``reuse`` (the wanted version is there),
    ``upgrade`` (another version that gpu-lab installed) or ``refuse`` (another version
    somebody else installed: the lab does not take over a k3s it did not make)."""
    if installed is None:
        return "install"
    if installed == wanted:
        return "reuse"
    return "upgrade" if ours else "refuse"


def root_env_argv(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """``argv`` with ``env`` set through ``env K=V ...`` (sudo resets the environment, so
    variables are passed on the command line of ``env``, never through a shell)."""
    return ["env", *(f"{k}={v}" for k, v in env.items()), *argv]


#: The installer, the uninstaller, the marker and k3s.yaml: the steps run as root.
ROOT_STEPS: Final = RootSteps(
    stack="k3s",
    steps=f"the installer, the uninstaller, the marker and reading {KUBECONFIG}",
    why_root=f"the k3s installer writes /usr/local/bin and a systemd unit, and {KUBECONFIG} is "
    "readable by root only",
    sudo_check=CHECK_SUDO,
    not_under_sudo_check=CHECK_NOT_UNDER_SUDO,
)
check_sudo = ROOT_STEPS.check_sudo
check_not_under_sudo = ROOT_STEPS.check_not_under_sudo


def check_init(systemd: bool, openrc: bool) -> Finding:
    """Check an init system (systemd or openrc) runs, for the k3s service."""
    if systemd or openrc:
        return Finding(CHECK_INIT, True, "systemd" if systemd else "openrc")
    return Finding(
        CHECK_INIT,
        False,
        "neither systemd nor openrc runs here: the k3s installer needs one to run k3s as a service",
        "use a host booted with systemd (containers and WSL without systemd cannot run the k3s lab)",
    )


def check_installed(installed: str | None, ours: bool, wanted: str) -> Finding:
    """Check the k3s there (``installed``, gpu-lab's when ``ours``) may become ``wanted``."""
    action = plan(installed, ours, wanted)
    if action != "refuse":
        what = {"install": "not installed; will install", "reuse": "installed at that version"}
        return Finding(
            CHECK_INSTALLED, True, f"k3s {wanted}: {what.get(action, f'upgrade from {installed}')}"
        )
    return Finding(
        CHECK_INSTALLED,
        False,
        f"k3s {installed} is installed and gpu-lab did not install it; the lab would change its version "
        f"to {wanted}",
        f"use it as it is (scripts/pulumi config set gpu-lab:k3sVersion {installed}), or uninstall it first "
        f"({UNINSTALL_SCRIPT})",
    )


def marker_present(run: cmd.Probe = cmd.probe, euid: int | None = None, marker: Path | None = None) -> bool:
    """Whether the lab's :data:`MARKER` exists (asked as root: ``/etc/rancher/k3s`` need not
    be readable by the user)."""
    rc, _, _ = run(as_root(["test", "-e", str(marker or MARKER)], euid))
    return rc == 0


def installed_version(run: cmd.Probe = cmd.probe) -> str | None:
    """The k3s release installed at :data:`K3S_BIN` (``v1.34.1+k3s1``); None when none is."""
    if not K3S_BIN.exists():
        return None
    rc, out, err = run(version_argv())
    return parse_version(out + err) if rc == 0 else None


def host_findings(
    wanted: str,
    run: cmd.Probe = cmd.probe,
    euid: Callable[[], int] = os.geteuid,
    env: Mapping[str, str] = os.environ,
) -> list[Finding]:
    """Every host check the k3s lab needs (passing ones included), in order: not run through
    sudo, root steps possible without a prompt, an init system, no foreign k3s of another
    version (the marker is asked only when sudo works)."""
    uid = euid()
    found = [check_not_under_sudo(uid, env.get("SUDO_USER")), check_sudo(uid, run)]
    found.append(check_init(Path("/run/systemd/system").is_dir(), Path("/sbin/openrc-run").exists()))
    ours = marker_present(run, uid) if found[1].ok else False
    found.append(check_installed(installed_version(run), ours, wanted))
    return found


# --------------------------------------------------------------------------- commands


class K3sError(GpuLabError, RuntimeError):
    """A step failed; the message names what and the first fix. (A failed command raises
    :class:`gpulab.core.run.CommandError`, naming the command, its exit code and stderr.)"""


def _log(msg: str) -> None:
    print(f"[k3s_ctl] {msg}", file=sys.stderr, flush=True)


def _run(argv: Sequence[str], env: dict[str, str] | None = None, timeout: float | None = None) -> str:
    """Run ``argv`` with ``env`` added to this environment; pass its stderr's tail on to ours
    (the installer's progress); return its stdout.

    Raises:
        gpulab.core.run.CommandError: it failed, or is not there.
    """
    result = cmd.run(argv, env={**os.environ, **(env or {})}, timeout=timeout)
    sys.stderr.write(result.stderr[-4000:])
    if not result.ok:
        raise cmd.CommandError(argv, result.returncode, result.stderr, result.stdout)
    return result.stdout


def _download(url: str, dest: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:  # a fixed https URL
            dest.write_bytes(resp.read())
    except OSError as exc:
        raise K3sError(f"downloading the k3s installer from {url} failed: {exc}") from exc


@dataclass(frozen=True)
class UpSpec:
    """``version`` (validated ``v1.x.y+k3sN``), ``timeout`` in seconds for the node to be Ready."""

    version: str
    timeout: int = 600


def read_kubeconfig() -> str | None:
    """``/etc/rancher/k3s/k3s.yaml`` (root's, mode 0600), read as root into memory; None
    while k3s has not written it. It is never copied anywhere on disk."""
    result = cmd.run(as_root(["cat", str(KUBECONFIG)]), timeout=30)
    return result.stdout if result.ok and result.stdout.strip() else None


def _wait_ready(timeout: float) -> tuple[str, str]:
    """Wait for k3s.yaml and a Ready node; return ``(kubeconfig, server gitVersion)``."""
    from kubernetes import client

    deadline = time.monotonic() + timeout
    last = "k3s.yaml not written yet"
    while time.monotonic() < deadline:
        text = read_kubeconfig()
        if text is not None:
            try:
                api = load_clients(text)
                nodes = [api.sanitize_for_serialization(n) for n in client.CoreV1Api(api).list_node().items]
                if ready_nodes(nodes):
                    return text, str(client.VersionApi(api).get_code().git_version)
                last = "no node Ready yet"
            except Exception as exc:  # the API server is still starting
                last = str(exc).splitlines()[0]
        time.sleep(2)
    raise K3sError(
        f"k3s did not become ready in {timeout:.0f}s ({last})\n"
        "  fix: journalctl -u k3s -n 100; systemctl status k3s"
    )


def up(spec: UpSpec) -> dict[str, Any]:
    """Install k3s if needed, wait for it, return its kubeconfig (module docstring)."""
    raise_on_failures(host_findings(spec.version))
    action = plan(installed_version(), marker_present(), spec.version)
    if action == "reuse":
        _log(f"k3s {spec.version} is installed; not installing")
    else:
        with tempfile.TemporaryDirectory(prefix="gpulab-k3s-") as tmp:
            script = Path(tmp) / "install.sh"
            _download(INSTALL_SCRIPT_URL, script)
            argv, env = install_command(str(script), spec.version)
            env.update({k: os.environ[k] for k in PROXY_VARS if os.environ.get(k)})
            root_argv = as_root(root_env_argv(argv, env))
            _log(f"$ {' '.join(root_argv)}  ({action})")
            _run(root_argv, timeout=spec.timeout)
            marker = Path(tmp) / "gpulab-installed.json"
            marker.write_text(json.dumps({"version": spec.version, "installedBy": PROJECT}) + "\n")
            _run(as_root(["install", "-m", "0644", str(marker), str(MARKER)]), timeout=60)
    kubeconfig, server = _wait_ready(spec.timeout)
    return {
        "kubeconfig": kubeconfig,
        "kubernetesVersion": server,
        "version": spec.version,
        "installed": action != "reuse",
    }


def down() -> dict[str, Any]:
    """Uninstall k3s if gpu-lab installed it; a k3s already gone is success."""
    if not UNINSTALL_SCRIPT.exists():
        _log("k3s is already gone")
        return {"uninstalled": False, "reason": "absent"}
    sudo = check_sudo(os.geteuid())
    if not sudo.ok:
        raise PreflightError([sudo])
    if not marker_present():
        _log(f"k3s was not installed by gpu-lab ({MARKER} is absent); leaving it installed")
        return {"uninstalled": False, "reason": "not installed by gpu-lab"}
    _run(as_root(uninstall_argv()), timeout=600)
    return {"uninstalled": True}


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints one JSON object; exit 0 ok, 1 failure, 2 usage."""
    ap = argparse.ArgumentParser(prog="python3 -m variants.k3s.ctl")
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--version", required=True)
    u.add_argument("--timeout", type=int, default=600)
    sub.add_parser("down")
    p = sub.add_parser("preflight", help="the host checks, as JSON; exit 1 when one fails")
    p.add_argument("--version", required=True)
    args = ap.parse_args(argv)
    actions: dict[str, Action] = {
        "up": lambda: (up(UpSpec(args.version, args.timeout)), 0),
        "down": lambda: (down(), 0),
        "preflight": lambda: preflight.report(host_findings(args.version)),
    }
    return ctl_main("k3s_ctl", actions[args.cmd])


if __name__ == "__main__":
    sys.exit(main())
