"""Unit tests of variants.sim.ctl.cluster: the validation of ``up``'s options (``UpOptions``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from variants.sim import ctl as sc


def test_up_options_validate_at_the_edge(tmp_path: Path) -> None:
    sc.UpOptions(name="lab", workdir=tmp_path, gpus=2)
    with pytest.raises(ValueError, match="cluster name"):
        sc.UpOptions(name="Lab_1", workdir=tmp_path)
    with pytest.raises(ValueError, match="--gpus"):
        sc.UpOptions(name="lab", workdir=tmp_path, gpus=4)
    with pytest.raises(ValueError, match="node name"):
        sc.UpOptions(name="lab", workdir=tmp_path, node_name="GPU node")


def test_up_options_validate_the_node_count(tmp_path: Path) -> None:
    assert sc.UpOptions(name="lab", workdir=tmp_path, nodes=2).nodes == 2
    assert sc.UpOptions(name="lab", workdir=tmp_path).nodes == 1
    with pytest.raises(ValueError, match="nodes must be"):
        sc.UpOptions(name="lab", workdir=tmp_path, nodes=0)


def _stand_in_kwokctl(bin_dir: Path, cluster_dir: Path) -> None:
    """A kwokctl whose ``start cluster`` starts every component whose pid file names no
    running process, as kwok v0.8.0's ForkExec does (pkg/kwokctl/runtime/exec.go)."""
    bin_dir.mkdir(parents=True)
    script = bin_dir / "kwokctl"
    script.write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> "{cluster_dir}/kwokctl-calls"\n'
        f'cd "{cluster_dir}"\n'
        "for f in pids/*.pid; do\n"
        '  n=$(basename "$f" .pid)\n'
        '  if ! kill -0 "$(cat "$f")" 2>/dev/null; then\n'
        '    setsid sleep 60 >"logs/$n.log" 2>&1 < /dev/null & echo $! > "$f"\n'
        "  fi\n"
        "done\n",
        encoding="utf-8",
    )
    script.chmod(0o755)


def _exited_pid() -> int:
    import subprocess

    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_component_that_gave_up_on_a_slow_api_server_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal

    from variants.sim.ctl import cluster

    paths = sc.Paths("lab", tmp_path)
    (paths.cluster_dir / "pids").mkdir(parents=True)
    (paths.cluster_dir / "logs").mkdir()
    (paths.cluster_dir / "pids" / "kube-controller-manager.pid").write_text(str(_exited_pid()))
    (paths.cluster_dir / "logs" / "kube-controller-manager.log").write_text(
        "failed to wait for apiserver being healthy: timed out waiting for the condition\n"
    )
    _stand_in_kwokctl(tmp_path / "bin", paths.cluster_dir)
    monkeypatch.setattr(cluster, "_api_ready", lambda tools, paths: True)
    try:
        cluster._settle(sc.Tools(tmp_path / "bin"), paths)
        assert cluster._dead_components(paths) == []
        calls = (paths.cluster_dir / "kwokctl-calls").read_text().splitlines()
        assert calls == ["--name lab start cluster --timeout 120s"]
        kept = paths.cluster_dir / "logs" / "kube-controller-manager.exit-1.log"
        assert "apiserver being healthy" in kept.read_text()
    finally:
        pid = int((paths.cluster_dir / "pids" / "kube-controller-manager.pid").read_text())
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_etcd_exited_is_never_restarted_and_tears_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from variants.sim.ctl import cluster

    paths = sc.Paths("lab", tmp_path)
    (paths.cluster_dir / "pids").mkdir(parents=True)
    (paths.cluster_dir / "logs").mkdir()
    (paths.cluster_dir / "pids" / "etcd.pid").write_text(str(_exited_pid()))
    (paths.cluster_dir / "logs" / "etcd.log").write_text("panic: corrupt wal\n")
    _stand_in_kwokctl(tmp_path / "bin", paths.cluster_dir)
    torn: list[bool] = []
    monkeypatch.setattr(cluster, "_api_ready", lambda tools, paths: True)
    monkeypatch.setattr(
        cluster, "_teardown", lambda tools, paths, remove_workdir: torn.append(remove_workdir)
    )
    with pytest.raises(sc.SimClusterError, match="etcd exited"):
        cluster._settle(sc.Tools(tmp_path / "bin"), paths)
    assert torn == [False]
    assert not (paths.cluster_dir / "kwokctl-calls").exists()
