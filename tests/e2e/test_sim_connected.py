"""End to end: the simulated lab on a connected machine without Go (issue #26).

A fresh clone's ``make lab`` on this GPU-less machine, with no ``go`` on PATH, the user's
own Pulumi CLI (the offline build behind a wrapper, as tests/engine/test_user_toolchain.py
presents it), an empty ``GPULAB_CACHE`` and a loopback server standing in for dl.k8s.io,
github.com, api.github.com and get.helm.sh: the release files it serves are the binaries
toolchain/sim/build.sh built from Go modules, repackaged as each project packages its
release, with the projects' checksum files (tests/support/releases.py). ``make lab`` must
say it downloads them and why, verify them, bring the simulated lab up and pass its
checklist; ``make destroy`` must leave no stack resource, no cluster directory and no
process. The times are printed (``hack/bench/connected_sim.py`` is the re-runnable benchmark).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import releases
from tests.support.sandbox import missing_toolchain, shared_chart, toolchain_env

pytestmark = pytest.mark.sim


def _needs() -> tuple[dict[str, str], str]:
    """The checkout's toolchain env and the chart; skip with the reason when absent."""
    env = toolchain_env("sim")
    why = missing_toolchain(env)
    if why:
        pytest.skip(why)
    if releases.built_binaries(releases.fetch.cache_root(env)) is None:
        pytest.skip("the Go build of the sim toolchain is not complete: run `make toolchain-tests`")
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    return env, chart


def _make(target: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _processes_mentioning(path: Path) -> list[str]:
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in cmd:
                out.append(f"{proc.name}: {cmd[:200]}")
    return out


def test_fresh_clone_make_lab_without_go_downloads_the_release_binaries(tmp_path: Path) -> None:
    checkout_env, chart = _needs()
    real_cli = os.path.realpath(checkout_env["GPULAB_PULUMI"])
    clone = releases.fresh_clone(tmp_path / "clone")
    with releases.serving_build(tmp_path, releases.fetch.cache_root(checkout_env)) as server:
        env = releases.user_machine_env(tmp_path, real_cli, {**server.env(), "GPULAB_CHART_PATH": chart})
        t0 = time.monotonic()
        try:
            up = _make("lab", clone, env, timeout=900)
            up_s = time.monotonic() - t0
        finally:
            t1 = time.monotonic()
            down = _make("destroy", clone, env, timeout=600)
            down_s = time.monotonic() - t1
        served = list(server.requests)
    text = up.stdout + up.stderr
    assert up.returncode == 0, text[-6000:]
    lines = [line for line in up.stderr.splitlines() if line.startswith("gpu-lab:")]
    # The first lines: which lab, which Pulumi, then which sim binaries from where and why.
    assert lines[0].startswith("gpu-lab: the SIMULATED lab"), lines[:3]
    tc = next(i for i, line in enumerate(lines) if line.startswith("gpu-lab: toolchain: "))
    assert lines[tc] == (
        f"gpu-lab: toolchain: your pulumi {releases.USER_CLI_VERSION} at {tmp_path / 'userbin' / 'pulumi'}"
        " (>= the floor v3.272.0); the engine fetches the plugins the SDKs pin (kubernetes, and the real "
        "pulumi-command provider) as usual"
    )
    sim = [line.removeprefix("gpu-lab: sim toolchain: ") for line in lines if "sim toolchain:" in line]
    assert sim[0].startswith(
        "no cached binaries of Kubernetes v1.36.3, etcd v3.6.16, kwok v0.8.0, helm v3.22.0"
    )
    assert "asking the release servers for their checksum files first" in sim[0]
    assert sim[1].startswith(
        f"  kube-apiserver kube-controller-manager kube-scheduler kubectl v1.36.3: {server.url}/"
    )
    assert any(
        line.startswith(f"connected: 127.0.0.1:{server.url.rsplit(':', 1)[1]} answered") for line in sim
    )
    assert "each matched its published sha256" in sim[-1]
    # The last line of make lab is the card's one-line summary (stdout).
    assert up.stdout.strip().splitlines()[-1].endswith("checklist pass (simulated lab)"), up.stdout[-500:]
    assert "[sim-build]" not in text and "go: downloading" not in text  # nothing compiled
    # Every file came from the release URLs, checksum documents first.
    asked = [p.split("/", 2)[1] for p in served]
    assert set(asked) == {"dl.k8s.io", "github.com", "api.github.com", "get.helm.sh"}, served
    assert served[0].endswith("/kube-apiserver.sha256")
    cache = Path(env["GPULAB_CACHE"]) / "sim"
    assert sorted(p.name for p in cache.iterdir()) == ["bin", "release"]  # no Go build dir
    apiserver = cache / "bin" / "kube-apiserver"
    assert os.readlink(apiserver) == "../release/kube-1.36.3/bin/kube-apiserver"
    assert not (cache / "release" / "kube-1.36.3" / "bin" / "kube-apiserver").is_symlink()
    # The lab is up and its checklist passed (the card's summary ends `make lab`).
    outputs = json.loads((clone / ".state" / "outputs-sim.json").read_text())
    assert outputs["simulated"] is True and outputs["kubernetesVersion"] == "v1.36.3", outputs
    card = json.loads((clone / "baseline-card.json").read_text())
    assert card["checklist"]["result"] == "pass", card["checklist"]["result"]
    # make destroy: nothing left.
    assert down.returncode == 0, (down.stdout + down.stderr)[-4000:]
    stacks = subprocess.run(
        [str(tmp_path / "userbin" / "pulumi"), "stack", "export", "--stack", "sim", "--non-interactive"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert not json.loads(stacks.stdout)["deployment"].get("resources")
    assert not (clone / ".state" / "sim").exists() or not any((clone / ".state" / "sim").iterdir())
    assert _processes_mentioning(clone) == []
    print(f"\ntimings (fresh clone, venv linked, loopback): make lab {up_s:.1f}s, make destroy {down_s:.1f}s")
