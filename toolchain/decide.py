"""Which Pulumi toolchain `make lab` / `make toolchain` use, and what must be built for it.

One decision, made the same way by the Makefile, the scripts and the tests:

* **user**: a ``pulumi`` v3 CLI on PATH at or above ``PULUMI_CLI_FLOOR``
  (toolchain/versions.env). It is used as it is, with its own bundled language host;
  plugins come the standard way (the engine downloads the versions the SDKs pin).
  Nothing is compiled for the GPU stacks.
* **offline**: no usable CLI on PATH, or ``GPULAB_OFFLINE=1``. The CLI, the Kubernetes
  provider and this project's stand-ins (Python language host, ``command`` provider) are
  built or installed from Go modules and PyPI (hack/offline/build-pulumi.sh); needs ``go``.

Independently of the mode, the simulated control plane is set up only for the ``sim``
stacks and for the tests (``--for tests``): toolchain/sim/fetch.py downloads the pinned
release binaries where the release servers answer (no ``go``), and otherwise, or with
``GPULAB_OFFLINE=1``, toolchain/sim/build.sh builds them from Go modules (needs ``go``
unless that build is cached).

Run as ``python3 toolchain/decide.py --stack STACK [--for lab|tests] [--shell]``: prints
the decision as JSON, or with ``--shell`` as ``KEY=value`` lines for ``eval``. Exit codes:
0 decided, 1 no toolchain can be had here (the message names the first fix), 2 usage.
Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VERSIONS = HERE / "versions.env"
_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")
INSTALL_PULUMI = "install the Pulumi CLI (https://www.pulumi.com/docs/iac/download-install/)"
INSTALL_GO = "install Go >= 1.26 (https://go.dev/doc/install)"


class ToolchainError(RuntimeError):
    """No toolchain can be had on this machine; the message names the cause and the first fix."""


@dataclass(frozen=True)
class Decision:
    """What to use and what to build.

    Attributes:
        mode: ``"user"`` (the CLI found on PATH) or ``"offline"`` (built from Go modules).
        cli: path of the CLI the user mode runs; None in offline mode (it is built into
            ``$GPULAB_CACHE/bin/pulumi``).
        cli_version: that CLI's version (``"v3.280.0"``), or the pinned offline version.
        reason: one sentence for the first lines of ``make lab``.
        build: what must be built or installed, in order: ``"pulumi"`` (CLI, Kubernetes
            provider, language host and command stand-ins) and/or ``"sim"``.
        needs_go: whether ``build`` surely compiles something (the sim control plane may
            still be compiled when its download fails: toolchain/sim/fetch.py says so).
    """

    mode: str
    cli: str | None
    cli_version: str
    reason: str
    build: list[str] = field(default_factory=list)
    needs_go: bool = False


def read_versions(path: Path = VERSIONS) -> dict[str, str]:
    """``KEY=value`` lines of toolchain/versions.env (comments and blanks skipped)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``"v3.274.1"`` (or ``"3.274.1-dev.0"``) -> ``(3, 274, 1)``; None if it is no version."""
    m = _VERSION_RE.match(text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def cli_version(path: str) -> str | None:
    """What ``<path> version`` prints (first line), or None when it fails or hangs (10 s)."""
    try:
        p = subprocess.run([path, "version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (p.stdout or "").strip().splitlines()
    return first[0].strip() if p.returncode == 0 and first else None


def decide(
    stack: str,
    purpose: str,
    env: Mapping[str, str],
    which: Callable[[str], str | None],
    version_of: Callable[[str], str | None],
    versions: Mapping[str, str],
    own_bin: str | None = None,
    offline_built: bool = False,
    sim_built: bool = False,
    euid: int | None = None,
) -> Decision:
    """Choose the toolchain for ``stack`` (``purpose``: ``"lab"`` or ``"tests"``).

    Args:
        stack: the stack the lab builds (``sim``, ``minikube``, ``kind``, ``k3s``, ``existing``).
        purpose: ``"tests"`` also builds the simulated control plane, whatever the stack.
        env: the environment (``GPULAB_OFFLINE``).
        which: PATH lookup (``shutil.which``).
        version_of: runs ``<cli> version`` (:func:`cli_version`).
        versions: toolchain/versions.env (``PULUMI_CLI_FLOOR``, ``PULUMI_VERSION``).
        own_bin: the offline build's CLI path; a ``pulumi`` on PATH that is this one is not
            the user's.
        offline_built: the offline build is complete in the cache (no ``go`` needed to use it).
        sim_built: the Go build of the simulated control plane is complete in the cache
            (toolchain/sim/buildcache.py ``cached_build``).
        euid: this process's effective uid (None: not checked).

    Raises:
        ToolchainError: nothing usable and no ``go`` to build with; or the sim control
            plane is needed, ``GPULAB_OFFLINE`` forbids downloading it, it is not built and
            there is no ``go`` (without ``GPULAB_OFFLINE`` it may be downloaded: whether
            that works is only known by asking, which toolchain/sim/fetch.py does); or the
            lab runs as root through sudo (``SUDO_USER`` set, ``euid`` 0): sudo's
            ``secure_path`` replaced the user's PATH, so their ``pulumi`` would look missing
            and the offline build would start for no reason (and the checkout's
            ``.venv``/``.state`` would become root's).
    """
    sudo_user = env.get("SUDO_USER")
    if euid == 0 and sudo_user:
        raise ToolchainError(
            f"gpu-lab runs as you, not through sudo (SUDO_USER={sudo_user}): sudo's secure_path replaced "
            "your PATH, so your pulumi would look missing, and .venv and .state would become root's; run "
            f"it as {sudo_user} (the k3s lab asks `sudo -n` for its own root steps); if an earlier sudo run "
            f"left root-owned files: sudo chown -R {sudo_user}: .venv .state stacks"
        )
    floor = versions["PULUMI_CLI_FLOOR"]
    pinned = "v" + versions["PULUMI_VERSION"]
    need_sim = stack == "sim" or stack.startswith("sim-") or purpose == "tests"
    have_go = which("go") is not None
    build: list[str] = []
    offline_flag = env.get("GPULAB_OFFLINE", "") not in ("", "0")
    user_cli = which("pulumi")
    if user_cli and own_bin and os.path.realpath(user_cli) == os.path.realpath(own_bin):
        user_cli = None
    found = version_of(user_cli) if user_cli else None
    parsed = parse_version(found) if found else None
    floor_v = parse_version(floor)
    assert floor_v is not None, f"PULUMI_CLI_FLOOR={floor!r} in versions.env is not a version"
    mode = "offline"
    cli: str | None = None
    version = pinned
    if offline_flag:
        reason = f"offline build of pulumi {pinned} (GPULAB_OFFLINE={env['GPULAB_OFFLINE']})"
    elif user_cli and parsed and parsed[0] == 3 and parsed >= floor_v:
        mode, cli, version = "user", user_cli, found or ""
        reason = (
            f"your pulumi {found} at {user_cli} (>= the floor {floor}); the engine fetches the "
            "plugins the SDKs pin (kubernetes, and the real pulumi-command provider) as usual"
        )
    elif user_cli and found:
        why = "not a v3 CLI" if not parsed or parsed[0] != 3 else f"older than the floor {floor}"
        reason = f"offline build of pulumi {pinned}: the pulumi {found} at {user_cli} is {why}"
        if not have_go and not offline_built:
            raise ToolchainError(
                f"the pulumi {found} at {user_cli} is {why} (toolchain/versions.env says why) and "
                f"there is no go to build {pinned}: upgrade pulumi (`pulumi self upgrade`, or "
                f"{INSTALL_PULUMI}), or {INSTALL_GO} for the offline build"
            )
    else:
        what = (
            f"the pulumi at {user_cli} does not answer `pulumi version`" if user_cli else "no pulumi on PATH"
        )
        reason = f"offline build of pulumi {pinned}: {what}"
        if not have_go and not offline_built:
            raise ToolchainError(f"{what} and no go to build one: {INSTALL_PULUMI}, or {INSTALL_GO}")
    if mode == "offline":
        build.append("pulumi")
    if need_sim:
        if offline_flag and not have_go and not sim_built:
            raise ToolchainError(
                f"GPULAB_OFFLINE={env['GPULAB_OFFLINE']}: the simulated control plane (kube-apiserver, "
                f"etcd, kwok) is built from Go modules and there is no go: {INSTALL_GO}, or unset "
                "GPULAB_OFFLINE to download its release binaries (no Go needed)"
            )
        build.append("sim")
    sim_needs_go = "sim" in build and offline_flag and not sim_built
    needs_go = ("pulumi" in build and not offline_built) or sim_needs_go
    return Decision(mode, cli, version, reason, build, needs_go=needs_go)


BUILDCACHE = HERE / "sim" / "buildcache.py"


def load_buildcache() -> Any | None:
    """toolchain/sim/buildcache.py as a module, loaded by path once (this directory is no
    package) under the one name fetch.py's re-export uses too; that module, not fetch.py, so
    no download machinery is loaded. None where the file is absent (a partial copy of the
    project)."""
    name = "gpulab_sim_buildcache"
    if name not in sys.modules:
        if not BUILDCACHE.is_file():
            return None
        spec = importlib.util.spec_from_file_location(name, BUILDCACHE)
        assert spec and spec.loader
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def sim_built(cache: Path, versions: Mapping[str, str]) -> bool:
    """toolchain/sim/buildcache.py's ``cached_build`` (:func:`load_buildcache`); False where
    that file is absent."""
    module = load_buildcache()
    return module is not None and bool(module.cached_build(cache, versions))


def main(argv: list[str] | None = None) -> int:
    """CLI: print the decision (JSON, or ``KEY=value`` lines with ``--shell``)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack", required=True)
    ap.add_argument("--for", dest="purpose", choices=("lab", "tests"), default="lab")
    ap.add_argument("--shell", action="store_true")
    args = ap.parse_args(argv)
    cache = os.environ.get("GPULAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpu-lab"
    )
    versions = read_versions()
    pv, kv = versions["PULUMI_VERSION"], versions["PULUMI_KUBERNETES_VERSION"]
    offline_built = all(
        os.path.exists(os.path.join(cache, "pulumi", d, ".complete"))
        for d in (f"pulumi-v{pv}", f"pulumi-resource-kubernetes-v{kv}")
    )
    try:
        d = decide(
            args.stack,
            args.purpose,
            os.environ,
            shutil.which,
            cli_version,
            versions,
            own_bin=os.path.join(cache, "bin", "pulumi"),
            offline_built=offline_built,
            sim_built=sim_built(Path(cache), versions),
            euid=os.geteuid(),
        )
    except ToolchainError as exc:
        print(f"gpu-lab: toolchain: {exc}", file=sys.stderr)
        return 1
    if args.shell:
        for k, v in asdict(d).items():
            if isinstance(v, list):
                text = " ".join(v)
            elif isinstance(v, bool):
                text = str(v).lower()
            else:
                text = "" if v is None else str(v)
            print(f"GPULAB_TOOLCHAIN_{k.upper()}={shlex.quote(text)}")
    else:
        print(json.dumps(asdict(d)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
