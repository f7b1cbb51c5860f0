"""variants.sim.ctl.supervise: a component that dies takes the whole control plane down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from variants.sim.ctl import supervise


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)


def test_one_dead_component_brings_the_others_down_and_says_which(tmp_path: Path) -> None:
    cluster = tmp_path / "kwok" / "clusters" / "c"
    (cluster / "pids").mkdir(parents=True)
    procs = {name: _sleeper() for name in ("etcd", "kube-apiserver", "kube-scheduler")}
    try:
        for name, p in procs.items():
            (cluster / "pids" / f"{name}.pid").write_text(f"{p.pid}\n")
        os.kill(procs["kube-scheduler"].pid, signal.SIGSTOP)  # a frozen one is taken down too
        pid = supervise.spawn("c", tmp_path, cluster)  # as `up` starts it: detached
        time.sleep(1.5)
        assert supervise.supervisor_pid(tmp_path) == pid  # all alive (one stopped): nothing happens
        procs["etcd"].kill()
        procs["etcd"].wait()
        deadline = time.monotonic() + 15
        while supervise.supervisor_pid(tmp_path) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert supervise.supervisor_pid(tmp_path) is None, (
            tmp_path / "logs" / supervise.LOG_FILE
        ).read_text()
        for name in ("kube-apiserver", "kube-scheduler"):
            assert procs[name].wait(5) is not None, f"{name} still runs"
        record = json.loads((tmp_path / supervise.DOWN_FILE).read_text())
        assert record["component"] == "etcd" and record["pid"] == procs["etcd"].pid
        assert record["others"] == {"kube-apiserver": "running", "kube-scheduler": "stopped (SIGSTOP)"}
        assert "etcd" in supervise.describe_down(record) and "stopped (SIGSTOP)" in supervise.describe_down(
            record
        )
        assert supervise.down_record(tmp_path) == record
    finally:
        for p in procs.values():
            p.kill()
            p.wait()


def test_the_loop_exits_when_the_cluster_directory_is_removed(tmp_path: Path) -> None:
    cluster = tmp_path / "gone"
    assert supervise.run(tmp_path, cluster, 0.01) == 0
    assert supervise.down_record(tmp_path) is None


def test_states_in_words() -> None:
    assert supervise.describe_state(None) == "exited"
    assert supervise.describe_state("T") == "stopped (SIGSTOP)"
    assert supervise.describe_state("S") == "running"


def test_stop_leaves_the_components_alone(tmp_path: Path) -> None:
    cluster = tmp_path / "kwok" / "clusters" / "c"
    (cluster / "pids").mkdir(parents=True)
    p = _sleeper()
    try:
        (cluster / "pids" / "etcd.pid").write_text(f"{p.pid}\n")
        supervise.spawn("c", tmp_path, cluster)
        time.sleep(1.0)
        supervise.stop(tmp_path)
        assert supervise.supervisor_pid(tmp_path) is None
        assert p.poll() is None and supervise.down_record(tmp_path) is None
    finally:
        p.kill()
        p.wait()
