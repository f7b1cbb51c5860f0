"""A connected user's machine: their own pulumi CLI, no go, plugins in their plugin cache.

The GPU stacks must compile nothing there. Simulated here with the offline build's CLI
behind a wrapper that reports another v3 version, a PATH without ``go``, an empty
``GPULAB_CACHE`` (any build would land there) and the plugins the offline toolchain
installed into the plugin cache (as a connected machine has them after its first run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.sandbox import ROOT, make_project, missing_toolchain, toolchain_env, user_cli_path

pytestmark = pytest.mark.engine

USER_VERSION = "v3.299.0"


def _user_machine(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    built = toolchain_env("minikube")
    why = missing_toolchain(built)
    if why:
        pytest.skip(why)
    path = user_cli_path(tmp_path / "userbin", os.path.realpath(built["GPULAB_PULUMI"]), USER_VERSION)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GPULAB_", "GO", "VIRTUAL_ENV"))
    }
    env.update(PATH=path, GPULAB_CACHE=str(tmp_path / "cache"), GPULAB_STACK="minikube")
    proj = make_project(tmp_path / "copy", env)
    for extra in ("scripts", "toolchain", "Makefile", "requirements-dev.txt"):
        src = ROOT / extra
        if src.is_dir():
            shutil.copytree(
                src, proj.dir / extra, ignore=shutil.ignore_patterns("__pycache__", "go"), dirs_exist_ok=True
            )
        else:
            shutil.copy2(src, proj.dir / extra)
    env = dict(proj.env)
    for k in ("PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"):
        env.pop(k, None)  # the user's machine: whatever scripts/env.sh decides
    env["PULUMI_BACKEND_URL"] = proj.env["PULUMI_BACKEND_URL"]
    env["PULUMI_CONFIG_PASSPHRASE"] = "user-secret"
    return proj.dir, env


def test_gpu_stack_preview_uses_the_users_cli_and_compiles_nothing(tmp_path: Path) -> None:
    workdir, env = _user_machine(tmp_path)
    t0 = time.monotonic()
    p = subprocess.run(
        ["make", "--no-print-directory", "preview"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    took = time.monotonic() - t0
    text = p.stdout + p.stderr
    assert f"gpu-lab: toolchain: your pulumi {USER_VERSION} at {tmp_path / 'userbin' / 'pulumi'}" in text, (
        text
    )
    # Preflight ran (this machine has no GPU) and stopped the preview with the cause and fix.
    assert "nvidia-smi not found on PATH" in text, text
    assert p.returncode != 0
    assert took < 60, f"make preview took {took:.0f}s"
    cache = tmp_path / "cache"
    built = sorted(str(x.relative_to(cache)) for x in cache.rglob("*")) if cache.exists() else []
    assert built == [], f"something was built or installed into GPULAB_CACHE: {built}"
    assert "[toolchain]" not in text and "[sim-build]" not in text
