"""variants.microk8s.ctl: the snap's commands, and up/down's check-then-act with snap, the
marker and the wait faked (no snap runs here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpulab.host.preflight import Finding, PreflightError
from variants import microk8s as m
from variants.microk8s import ctl


def test_the_snap_commands() -> None:
    assert ctl.install_argv("1.35/stable") == [
        "snap",
        "install",
        "microk8s",
        "--classic",
        "--channel=1.35/stable",
    ]
    assert ctl.refresh_argv("1.36/stable") == ["snap", "refresh", "microk8s", "--channel=1.36/stable"]
    assert ctl.remove_argv() == ["snap", "remove", "--purge", "microk8s"]
    assert ctl.status_argv(60) == ["/snap/bin/microk8s", "status", "--wait-ready", "--timeout", "60"]
    assert ctl.config_argv() == ["/snap/bin/microk8s", "config", "--use-loopback"]


def test_ready_nodes() -> None:
    nodes = [
        {"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        {"metadata": {"name": "c"}, "status": {}},
    ]
    assert ctl.ready_nodes(nodes) == ["a"]


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A host as the helper sees it, run by a user (uid 1000) whose sudo -n works: the snap's
    mount and $SNAP_COMMON under tmp_path, every command recorded (each a root one)."""
    snap = m.SnapLayout(mount=str(tmp_path / "snap"), common=str(tmp_path / "common"))
    state: dict[str, Any] = {"tracking": None, "calls": []}
    monkeypatch.setattr(ctl, "SNAP", snap)
    monkeypatch.setattr(ctl.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(ctl, "installed_tracking", lambda run=None: state["tracking"])
    monkeypatch.setattr(ctl, "marker_present", lambda *a, **k: Path(snap.marker).exists())
    monkeypatch.setattr(ctl, "check_sudo", lambda euid, run=None: Finding("microk8s-sudo", True, "ok"))
    monkeypatch.setattr(
        ctl,
        "host_findings",
        lambda wanted: [m.check_installed(state["tracking"], Path(snap.marker).exists(), wanted)],
    )

    def fake_run(argv: list[str], timeout: float | None = None) -> str:
        state["calls"].append(argv)
        assert argv[:3] == ["sudo", "-n", "--"], argv  # every step here needs root
        line = argv[3:]
        if line[:2] in (["snap", "install"], ["snap", "refresh"]):
            state["tracking"] = line[-1].removeprefix("--channel=")
            Path(snap.mount).mkdir(exist_ok=True)
            Path(snap.common).mkdir(exist_ok=True)
        elif line[0] == "install":
            assert line[1:3] == ["-m", "0644"]
            Path(line[4]).write_text(Path(line[3]).read_text())
        elif line == ctl.remove_argv():
            state["tracking"] = None
            Path(snap.marker).unlink()
            Path(snap.common).rmdir()
            Path(snap.mount).rmdir()
        return ""

    monkeypatch.setattr(ctl, "_run", fake_run)
    monkeypatch.setattr(ctl, "_wait_ready", lambda timeout: ("apiVersion: v1\n", "v1.35.0"))
    state["snap"] = snap
    return state


def test_up_installs_once_and_down_removes_what_it_installed(host: dict[str, Any]) -> None:
    snap = host["snap"]
    result = ctl.up(ctl.UpSpec("1.35/stable"))
    assert result == {
        "kubeconfig": "apiVersion: v1\n",
        "kubernetesVersion": "v1.35.0",
        "channel": "1.35/stable",
        "installed": True,
    }
    install, marker = host["calls"]
    assert install == ["sudo", "-n", "--", *ctl.install_argv("1.35/stable")]
    assert marker[3:6] == ["install", "-m", "0644"] and marker[-1] == snap.marker
    assert '"installedBy": "gpu-lab"' in Path(snap.marker).read_text()

    host["calls"].clear()
    assert ctl.up(ctl.UpSpec("1.35/stable"))["installed"] is False  # re-run: nothing installed
    assert host["calls"] == []

    assert ctl.up(ctl.UpSpec("1.36/stable"))["installed"] is True  # its own: refreshed
    assert host["calls"][0] == ["sudo", "-n", "--", *ctl.refresh_argv("1.36/stable")]

    host["calls"].clear()
    assert ctl.down() == {"removed": True}
    assert host["calls"] == [["sudo", "-n", "--", "snap", "remove", "--purge", "microk8s"]]
    host["calls"].clear()
    assert ctl.down() == {"removed": False, "reason": "absent"}  # already gone
    assert host["calls"] == []


def test_a_microk8s_the_lab_did_not_install_is_neither_moved_nor_removed(host: dict[str, Any]) -> None:
    host["tracking"] = "1.34/stable"
    Path(host["snap"].mount).mkdir()
    with pytest.raises(PreflightError, match="gpu-lab did not install it"):
        ctl.up(ctl.UpSpec("1.35/stable"))
    assert host["calls"] == []
    assert ctl.down() == {"removed": False, "reason": "not installed by gpu-lab"}
    assert host["calls"] == []


def test_a_foreign_microk8s_on_the_wanted_channel_is_reused_and_left_installed(host: dict[str, Any]) -> None:
    host["tracking"] = "1.35/stable"
    Path(host["snap"].mount).mkdir()
    assert ctl.up(ctl.UpSpec("1.35/stable"))["installed"] is False
    assert not Path(host["snap"].marker).exists() and host["calls"] == []
    assert ctl.down()["removed"] is False


def test_down_refuses_without_sudo_before_touching_anything(
    host: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    Path(host["snap"].mount).mkdir()
    refused = Finding("microk8s-sudo", False, "sudo failed", "sudo -v")
    monkeypatch.setattr(ctl, "check_sudo", lambda euid, run=None: refused)
    with pytest.raises(PreflightError, match="microk8s-sudo: sudo failed"):
        ctl.down()
    assert host["calls"] == []


def test_main_reports_a_failed_preflight_with_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = Finding("microk8s-sudo", False, "sudo -n failed", "sudo -v")
    monkeypatch.setattr(ctl, "host_findings", lambda wanted: [refused])
    assert ctl.main(["up", "--channel", "1.35/stable"]) == 1
    assert "microk8s_ctl: 1 preflight check(s) failed" in capsys.readouterr().err
    assert ctl.main(["preflight", "--channel", "1.35/stable"]) == 1
    assert '"check": "microk8s-sudo", "ok": false' in capsys.readouterr().out


def test_the_wait_loops_on_status_until_a_node_is_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.core.run import Result

    calls: list[list[str]] = []
    answers = iter([Result(1, "microk8s is not running", ""), Result(0, "microk8s is running", "")])

    def fake_run(argv: list[str], timeout: float | None = None, **_: Any) -> Result:
        calls.append(argv)
        if "status" in argv:
            return next(answers)
        return Result(0, "apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:16443\n", "")

    class Api:
        def sanitize_for_serialization(self, n: Any) -> Any:
            return n

    class Items:
        items = [
            {"metadata": {"name": "host"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        ]

    class Core:
        def __init__(self, api: Any) -> None:
            pass

        def list_node(self) -> Items:
            return Items()

    class Version:
        def __init__(self, api: Any) -> None:
            pass

        def get_code(self) -> Any:
            return type("V", (), {"git_version": "v1.35.0"})()

    from kubernetes import client

    import gpulab.kube.client as kube_client

    monkeypatch.setattr(ctl.cmd, "run", fake_run)
    monkeypatch.setattr(ctl.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(ctl.time, "sleep", lambda s: None)
    monkeypatch.setattr(kube_client, "load_clients", lambda text: Api())
    monkeypatch.setattr(client, "CoreV1Api", Core)
    monkeypatch.setattr(client, "VersionApi", Version)
    text, version = ctl._wait_ready(120)
    assert "127.0.0.1:16443" in text and version == "v1.35.0"
    status = [c for c in calls if "status" in c]
    assert (
        len(status) == 2
        and status[0][:3] == ["sudo", "-n", "--"]
        and status[0][4:7] == ["status", "--wait-ready", "--timeout"]
    )
    assert calls[-1] == ["sudo", "-n", "--", *ctl.config_argv()]
