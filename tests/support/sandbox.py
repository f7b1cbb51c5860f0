"""Throwaway copies of the project with their own Pulumi backend (engine tests, benchmark).

A :class:`Project` is a copy of the program's files in a temporary directory that shares
the checkout's ``.venv``, with its own file backend, ``PULUMI_HOME`` (its ``plugins`` the
user's, read only by name), passphrase and ``TMPDIR``, so nothing it does touches the
checkout's state, stack files, /tmp, or the user's login and backend (no ``credentials.json``,
no access token).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
COPY = (
    "Pulumi.yaml",
    "__main__.py",
    "components",
    "program",
    "gpulab",
    "variants",
    "stacks",
    "policy",
    "ops",
    "requirements.txt",
    # What `scripts/lab` (make lab / verify / debug-bundle / destroy) runs in the copy, and the
    # Makefile, so a printed `make ...` fix runs there as printed.
    "scripts",
    "Makefile",
    "requirements-dev.txt",
    # `make lab` in the copy runs toolchain/setup.sh (finding the cached build, it builds nothing),
    # which in offline mode runs hack/offline/build-pulumi.sh (it refreshes the stand-ins).
    "toolchain",
    "hack/offline",
)


def toolchain_env(stack: str = "sim", base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment scripts/env.sh sets up for ``stack``, as a dict (from ``base``, default
    this process's environment)."""
    env = dict(os.environ if base is None else base)
    env["GPULAB_STACK"] = stack
    out = subprocess.run(
        ["bash", "-c", f". {ROOT}/scripts/env.sh && env -0"], capture_output=True, check=True, env=env
    ).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


def missing_toolchain(env: dict[str, str]) -> str | None:
    """Why the engine cannot run with ``env`` (a missing binary and the fix), or None."""
    if env.get("GPULAB_TOOLCHAIN_ERROR"):
        return env["GPULAB_TOOLCHAIN_ERROR"]
    cli = env.get("GPULAB_PULUMI") or ""
    if not cli or not os.access(cli, os.X_OK):
        return f"pulumi not built ({env.get('GPULAB_TOOLCHAIN_REASON')}): run `make toolchain-tests`"
    if env.get("GPULAB_TOOLCHAIN_MODE") != "offline":
        return None  # the user's CLI fetches its plugins the standard way
    versions = dict(
        line.split("=", 1)
        for line in (ROOT / "toolchain" / "versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    home = Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi")
    plugin = home / "plugins" / f"resource-kubernetes-v{versions['PULUMI_KUBERNETES_VERSION']}"
    if not plugin.is_dir():
        return f"{plugin} missing: run `make toolchain-tests`"
    return None


def user_cli_path(userbin: Path, real_cli: str, version: str) -> str:
    """PATH of a connected user's machine without Go: ``userbin/pulumi`` first (``real_cli``
    behind a wrapper whose ``pulumi version`` says ``version``), then python3's directory,
    /usr/local/bin, /usr/bin, /bin.

    Raises:
        AssertionError: a ``go`` is still on that PATH.
    """
    userbin.mkdir(parents=True, exist_ok=True)
    wrapper = userbin / "pulumi"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = version ]; then echo {version}; exit 0; fi\nexec {real_cli} "$@"\n'
    )
    wrapper.chmod(0o755)
    python_dir = Path(os.path.realpath(shutil.which("python3") or "/usr/bin/python3")).parent
    path = os.pathsep.join([str(userbin), str(python_dir), "/usr/local/bin", "/usr/bin", "/bin"])
    assert shutil.which("go", path=path) is None, "the user's PATH must have no go"
    return path


def kube_api(kubeconfig: str) -> Any:
    """An ``ApiClient`` (the official ``kubernetes`` client) for kubeconfig text."""
    import yaml
    from kubernetes import client, config

    conf = client.Configuration()
    config.load_kube_config_from_dict(yaml.safe_load(kubeconfig), client_configuration=conf)
    return client.ApiClient(conf)


def run_pulumi(
    cwd: Path, env: dict[str, str], *args: str, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run the CLI (``$GPULAB_PULUMI``, else ``pulumi``) non-interactively in ``cwd``; raise
    AssertionError with its output when it fails and ``check``."""
    p = subprocess.run(
        [env.get("GPULAB_PULUMI") or "pulumi", *args, "--non-interactive"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"pulumi {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


@dataclass
class Project:
    """A throwaway copy of the project with its own Pulumi backend."""

    dir: Path
    env: dict[str, str]

    def pulumi(
        self, *args: str, check: bool = True, timeout: float = 900
    ) -> subprocess.CompletedProcess[str]:
        """Run the CLI in the copy (:func:`run_pulumi`)."""
        return run_pulumi(self.dir, self.env, *args, check=check, timeout=timeout)

    def init(self, stack: str, **config: Any) -> None:
        """Create ``stack`` (passphrase secrets) from its ``stacks/<stack>.yaml`` template, as
        ``make lab`` does, and set ``gpu-lab:<key>`` config values."""
        template = self.dir / "stacks" / f"{stack}.yaml"
        if template.is_file():
            shutil.copy2(template, self.dir / "stacks" / f"Pulumi.{stack}.yaml")
        self.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        if config:  # one CLI run for them all (`pulumi config set-all --plaintext k=v ...`)
            pairs = [a for k, v in config.items() for a in ("--plaintext", f"gpu-lab:{k}={v}")]
            self.pulumi("config", "set-all", "--stack", stack, *pairs)

    def lab(
        self, action: str, stack: str = "sim", timeout: float = 900, pulumi_args: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """``scripts/lab <action>`` in the copy (what ``make lab``/``verify``/``debug-bundle``/
        ``destroy`` run), for ``stack``, with ``PULUMI_ARGS`` (the Makefile's variable, passed
        on to the CLI) set to ``pulumi_args``; not checked: the caller reads the exit code."""
        return subprocess.run(
            ["bash", str(self.dir / "scripts" / "lab"), action],
            cwd=self.dir,
            env={**self.env, "GPULAB_STACK": stack, "GPULAB_CHOICE_QUIET": "1", "PULUMI_ARGS": pulumi_args},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def outputs(self, stack: str) -> dict[str, Any]:
        """``pulumi stack output --json`` (secrets print as ``"[secret]"``)."""
        return json.loads(self.pulumi("stack", "output", "--json", "--stack", stack).stdout)  # type: ignore[no-any-return]

    def secret_outputs(self, stack: str) -> dict[str, Any]:
        """``pulumi stack output --json --show-secrets`` (the kubeconfig in clear)."""
        out = self.pulumi("stack", "output", "--json", "--show-secrets", "--stack", stack).stdout
        return json.loads(out)  # type: ignore[no-any-return]

    def kube_api(self, stack: str) -> Any:
        """An ``ApiClient`` for ``stack``'s cluster (its ``kubeconfig`` output)."""
        return kube_api(self.secret_outputs(stack)["kubeconfig"])

    @contextmanager
    def round_trip(self, stack: str, profile: str) -> Iterator[subprocess.CompletedProcess[str]]:
        """``make lab`` for ``stack`` (asserted to succeed), yielding its run; then ``make
        destroy``, always. When the body passed: destroy succeeded, the state holds no resource,
        the sim cluster directory ``.state/sim/<profile>`` is gone; the timings are printed."""
        t0 = time.monotonic()
        try:
            up = self.lab("up", stack=stack)
            up_s = time.monotonic() - t0
            assert up.returncode == 0, f"{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
            yield up
        finally:
            t1 = time.monotonic()
            down = self.lab("destroy", stack=stack)
            down_s = time.monotonic() - t1
        assert down.returncode == 0, down.stderr[-3000:]
        export = json.loads(self.pulumi("stack", "export", "--stack", stack).stdout)
        assert not export["deployment"].get("resources")
        assert not (self.dir / ".state" / "sim" / profile).exists()
        print(f"\ntimings: make lab {up_s:.1f}s, make destroy {down_s:.1f}s")

    def sim_ctl(self, *args: str) -> dict[str, Any]:
        """``python3 -m variants.sim.ctl ARGS`` in the copy (a cluster made beside the lab's own,
        e.g. one for ``existing`` to point at), asserted to succeed; its JSON answer."""
        p = subprocess.run(
            ["python3", "-m", "variants.sim.ctl", *args],
            cwd=self.dir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout)  # type: ignore[no-any-return]

    def timed(self, *args: str, **kw: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
        """:meth:`pulumi` and its wall time in seconds."""
        t0 = time.monotonic()
        p = self.pulumi(*args, **kw)
        return time.monotonic() - t0, p


def make_project(base: Path, env: dict[str, str] | None = None) -> Project:
    """Copy the program into ``base/gpu-lab`` with a backend in ``base/backend``."""
    env = dict(env or toolchain_env())
    dest = base / "gpu-lab"
    dest.mkdir(parents=True)
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            # With the bytecode `make venv` compiled (copy2 keeps the sources' times: still valid).
            shutil.copytree(src, dest / name)
        elif src.exists():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    # The checkout's own stack files (its salt, its config) are not the copy's.
    for f in (dest / "stacks").glob("Pulumi.*.yaml"):
        f.unlink()
    (base / "backend").mkdir()
    # The user's login (credentials.json in PULUMI_HOME, an access token) is never used: the
    # copy's PULUMI_HOME holds only a link to the plugins the engine needs.
    home = base / "pulumi-home"
    home.mkdir()
    plugins = Path(env.get("PULUMI_HOME") or Path.home() / ".pulumi") / "plugins"
    if plugins.is_dir():
        (home / "plugins").symlink_to(plugins)
    for key in ("PULUMI_ACCESS_TOKEN", "PULUMI_CONFIG_PASSPHRASE_FILE"):
        env.pop(key, None)
    # The copy's own temporary directory: what a CLI run directly (not through scripts/pulumi,
    # which makes a private one per run) leaves there, such as the Kubernetes provider's
    # kubeconfig files, goes with the test's directory instead of staying in /tmp.
    tmp = base / "tmp"
    tmp.mkdir(mode=0o700)
    env.update(
        PULUMI_BACKEND_URL=f"file://{base / 'backend'}",
        PULUMI_CONFIG_PASSPHRASE="test",
        PULUMI_HOME=str(home),
        TMPDIR=str(tmp),
    )
    return Project(dest, env)


def shared_chart() -> str | None:
    """The offline chart: $GPULAB_CHART_PATH, else the workplace copy beside the checkout."""
    p = os.environ.get("GPULAB_CHART_PATH") or str(ROOT.parent / "shared" / "charts" / "gpu-operator")
    return p if (Path(p) / "Chart.yaml").is_file() else None
