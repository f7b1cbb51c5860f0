"""``make lab`` in a fresh clone on a machine without Go, when the sim toolchain cannot be
downloaded: it stops before any stack or cluster exists, naming the cause and the fix.

The release servers are the loopback stand-ins of tests/support/releases.py (tiny scripts as
the binaries: the lab never gets that far). The user's CLI is a wrapper that only answers
``pulumi version``: nothing reaches the engine.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import releases
from tests.support.releases import ReleaseServer, SilentServer, publish, tamper
from tests.toolchain.test_fetch import _fake_binaries

VERSIONS = releases.fetch.read_versions()


def _make_lab(tmp_path: Path, extra: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    clone = releases.fresh_clone(tmp_path / "clone")
    env = releases.user_machine_env(tmp_path, "/nonexistent/pulumi", extra)
    p = subprocess.run(
        ["make", "--no-print-directory", "lab"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return p, clone


def _nothing_made(clone: Path, tmp_path: Path) -> None:
    assert not (clone / "stacks" / "Pulumi.sim.yaml").exists()
    assert not (clone / ".state" / "sim").exists()
    assert not any((tmp_path / "backend").iterdir())
    sim = tmp_path / "cache" / "sim"
    assert not (sim / "bin").exists()
    assert not (sim / "release").exists() or not any((sim / "release").iterdir())


def test_a_bad_checksum_stops_make_lab_with_the_file_both_checksums_and_the_fix(tmp_path: Path) -> None:
    tree = publish(tmp_path / "releases", _fake_binaries(tmp_path / "src"))
    published = releases.sha256_of(tree["kube-controller-manager"])
    tamper(tree["kube-controller-manager"])
    got = releases.sha256_of(tree["kube-controller-manager"])
    with ReleaseServer(tmp_path / "releases") as server:
        p, clone = _make_lab(tmp_path, server.env())
    err = p.stderr
    assert p.returncode != 0, err
    kube = f"{server.url}/dl.k8s.io/release/v{VERSIONS['KUBERNETES_VERSION']}"
    url = f"{kube}/bin/linux/amd64/kube-controller-manager"
    assert "gpu-lab: sim toolchain: checksum mismatch: kube-controller-manager" in err
    assert f"file:      {url}\n" in err
    assert f"expected:  sha256 {published}  (published in {url}.sha256)" in err
    assert f"got:       sha256 {got}\n" in err
    assert "fix: run the same command again" in err
    assert "stopped: the other way, the Go build, needs go, and there is no go on PATH" in err
    _nothing_made(clone, tmp_path)


def test_offline_without_go_stops_make_lab_saying_why_and_what_to_install(tmp_path: Path) -> None:
    with SilentServer() as server:
        p, clone = _make_lab(tmp_path, {**server.env(), "GPULAB_DOWNLOAD_TIMEOUT": "1"})
    assert p.returncode != 0
    assert "no release binaries: not connected: 127.0.0.1" in p.stderr and "(timed out)" in p.stderr
    assert "fix: install Go >= 1.26" in p.stderr
    _nothing_made(clone, tmp_path)


@pytest.mark.parametrize("flag", ["1", "yes"])
def test_gpulab_offline_without_go_stops_before_asking_any_server(tmp_path: Path, flag: str) -> None:
    with SilentServer() as server:
        p, _ = _make_lab(tmp_path, {**server.env(), "GPULAB_OFFLINE": flag})
        assert server.conns == []
    assert p.returncode != 0
    assert f"GPULAB_OFFLINE={flag}: the simulated control plane" in p.stderr
    assert "unset GPULAB_OFFLINE to download its release binaries" in p.stderr
