"""variants.k3s.ctl: the install and uninstall commands, the plan, the host checks, and
up/down's check-then-act with the installer, k3s and the API wait faked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpulab.host.preflight import PreflightError
from variants.k3s import ctl as k3s_ctl
from variants.k3s import node as k3s_node

#: The real check (the up/down fixture replaces it).
CHECK_SUDO = k3s_ctl.check_sudo
K3S_VERSION_OUT = "k3s version v1.34.1+k3s1 (24fc436e)\ngo version go1.24.6\n"


def test_install_command_is_sh_on_the_downloaded_script_with_the_version_in_env() -> None:
    argv, env = k3s_ctl.install_command("/tmp/x/install.sh", "v1.34.1+k3s1")
    assert argv == ["sh", "/tmp/x/install.sh"]
    assert env == {"INSTALL_K3S_VERSION": "v1.34.1+k3s1"}
    assert k3s_ctl.INSTALL_SCRIPT_URL == "https://get.k3s.io"


def test_uninstall_and_version_commands() -> None:
    assert k3s_ctl.uninstall_argv() == ["/usr/local/bin/k3s-uninstall.sh"]
    assert k3s_ctl.version_argv() == ["/usr/local/bin/k3s", "--version"]


def test_parse_version() -> None:
    assert k3s_ctl.parse_version(K3S_VERSION_OUT) == "v1.34.1+k3s1"
    assert k3s_ctl.parse_version("command not found") is None


@pytest.mark.parametrize(
    ("installed", "ours", "action"),
    [
        (None, False, "install"),
        ("v1.34.1+k3s1", False, "reuse"),
        ("v1.34.1+k3s1", True, "reuse"),
        ("v1.33.5+k3s1", True, "upgrade"),
        ("v1.33.5+k3s1", False, "refuse"),
    ],
)
def test_plan_never_takes_over_a_foreign_k3s(installed: str | None, ours: bool, action: str) -> None:
    assert k3s_ctl.plan(installed, ours, "v1.34.1+k3s1") == action


def test_only_the_root_steps_run_as_root_through_a_sudo_that_never_prompts() -> None:
    assert k3s_ctl.as_root(["/usr/local/bin/k3s-uninstall.sh"], euid=0) == ["/usr/local/bin/k3s-uninstall.sh"]
    assert k3s_ctl.as_root(["cat", "/etc/rancher/k3s/k3s.yaml"], euid=1000) == [
        "sudo",
        "-n",
        "--",
        "cat",
        "/etc/rancher/k3s/k3s.yaml",
    ]
    # sudo resets the environment: the installer's version travels on env's command line.
    argv, env = k3s_ctl.install_command("/tmp/x/install.sh", "v1.34.1+k3s1")
    assert k3s_ctl.as_root(k3s_ctl.root_env_argv(argv, env), euid=1000) == [
        "sudo",
        "-n",
        "--",
        "env",
        "INSTALL_K3S_VERSION=v1.34.1+k3s1",
        "sh",
        "/tmp/x/install.sh",
    ]


def _probe(rc: int | None, err: str = "") -> Any:
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int | None, str, str]:
        calls.append(list(argv))
        return rc, "", err

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_the_sudo_check_asks_sudo_non_interactively_and_prints_the_fix() -> None:
    assert k3s_ctl.check_sudo(0, _probe(1)).ok  # root: no sudo asked
    ok = _probe(0)
    assert k3s_ctl.check_sudo(1000, ok).ok and ok.calls == [["sudo", "-n", "true"]]
    # sudo(8): with -n, "a password is required" when it would prompt.
    f = k3s_ctl.check_sudo(1000, _probe(1, "sudo: a password is required\n"))
    assert not f.ok and f.check == "k3s-sudo"
    assert "sudo -n true: sudo: a password is required" in f.message
    assert f.fix.startswith("sudo -v") and "GPULAB_STACK=k3s make lab as yourself; not sudo make lab" in f.fix
    missing = k3s_ctl.check_sudo(1000, _probe(None))
    assert not missing.ok and "/etc/rancher/k3s/k3s.yaml" in missing.message


def test_running_the_lab_itself_through_sudo_is_refused_with_the_chown_fix() -> None:
    assert k3s_ctl.check_not_under_sudo(1000, None).ok
    assert k3s_ctl.check_not_under_sudo(0, None).ok  # root itself (a root login, CI): fine
    f = k3s_ctl.check_not_under_sudo(0, "alice")
    assert not f.ok and "secure_path" in f.message and ".venv and .state would become root's" in f.message
    assert "run it as alice: GPULAB_STACK=k3s make lab" in f.fix
    assert "sudo chown -R alice: .venv .state stacks" in f.fix


def test_host_findings_order_and_the_marker_asked_only_when_sudo_works() -> None:
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int | None, str, str]:
        calls.append(list(argv))
        return (1, "", "sudo: a password is required") if argv[0] == "sudo" else (0, "", "")

    found = k3s_ctl.host_findings("v1.34.1+k3s1", run, euid=lambda: 1000, env={})
    assert [f.check for f in found] == ["k3s-not-under-sudo", "k3s-sudo", "k3s-systemd", "k3s-installed"]
    assert calls == [["sudo", "-n", "true"]]  # no `sudo -n test -e <marker>` once sudo failed


def test_init_and_installed_checks() -> None:
    assert k3s_ctl.check_init(True, False).ok and k3s_ctl.check_init(False, True).ok
    assert "systemd" in k3s_ctl.check_init(False, False).message
    f = k3s_ctl.check_installed("v1.33.5+k3s1", False, "v1.34.1+k3s1")
    assert not f.ok and "scripts/pulumi config set gpu-lab:k3sVersion v1.33.5+k3s1" in f.fix
    assert k3s_ctl.check_installed(None, False, "v1.34.1+k3s1").ok


def test_ready_nodes() -> None:
    nodes = [
        {"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        {"metadata": {"name": "c"}, "status": {}},
    ]
    assert k3s_ctl.ready_nodes(nodes) == ["a"]


def test_operator_values_use_the_same_paths_as_the_policy() -> None:
    from policy import validators

    config_dir, socket = validators.EMBEDDED_CONTAINERD["k3s"]
    assert k3s_node.CONTAINERD_CONFIG.startswith(config_dir)
    assert socket == k3s_node.CONTAINERD_SOCKET


# --------------------------------------------------------------------------- up/down with fakes


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A host as k3s_ctl sees it, run by a user (uid 1000) whose sudo -n works: paths under
    tmp_path, commands recorded (the root ones through sudo -n), systemd."""
    etc = tmp_path / "etc-rancher-k3s"
    state: dict[str, Any] = {"installed": None, "calls": []}
    monkeypatch.setattr(k3s_ctl.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(k3s_ctl, "K3S_BIN", tmp_path / "k3s")
    monkeypatch.setattr(k3s_ctl, "UNINSTALL_SCRIPT", tmp_path / "k3s-uninstall.sh")
    monkeypatch.setattr(k3s_ctl, "MARKER", etc / "gpulab-installed.json")
    monkeypatch.setattr(k3s_ctl, "installed_version", lambda run=None: state["installed"])
    monkeypatch.setattr(k3s_ctl, "marker_present", lambda *a, **k: k3s_ctl.MARKER.exists())
    monkeypatch.setattr(k3s_ctl, "check_sudo", lambda euid, run=None: k3s_ctl.Finding("k3s-sudo", True, "ok"))

    def fake_run(argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None) -> str:
        state["calls"].append(argv)
        assert argv[:3] == ["sudo", "-n", "--"], argv  # every step here needs root
        cmdline = argv[3:]
        if cmdline[0] == "env":
            assert cmdline[1] == "INSTALL_K3S_VERSION=v1.34.1+k3s1" and cmdline[2] == "sh"
            assert Path(cmdline[3]).read_text() == "#!/bin/sh\n# installer\n"
            state["installed"] = cmdline[1].split("=", 1)[1]
            etc.mkdir(parents=True, exist_ok=True)
            (tmp_path / "k3s-uninstall.sh").write_text("")
        elif cmdline[0] == "install":
            assert cmdline[1:3] == ["-m", "0644"]
            Path(cmdline[4]).write_text(Path(cmdline[3]).read_text())
        elif cmdline == [str(tmp_path / "k3s-uninstall.sh")]:
            state["installed"] = None
            (tmp_path / "k3s-uninstall.sh").unlink()
            for f in etc.iterdir():
                f.unlink()
        return ""

    monkeypatch.setattr(k3s_ctl, "_run", fake_run)
    monkeypatch.setattr(k3s_ctl, "_download", lambda url, dest: dest.write_text("#!/bin/sh\n# installer\n"))
    monkeypatch.setattr(k3s_ctl, "_wait_ready", lambda timeout: ("apiVersion: v1\n", "v1.34.1+k3s1"))
    monkeypatch.setattr(
        k3s_ctl,
        "host_findings",
        lambda wanted: [
            k3s_ctl.check_installed(state["installed"], (etc / "gpulab-installed.json").exists(), wanted),
        ],
    )
    return state


def test_up_installs_once_and_down_uninstalls_what_it_installed(host: dict[str, Any]) -> None:
    result = k3s_ctl.up(k3s_ctl.UpSpec("v1.34.1+k3s1"))
    assert result["installed"] is True and result["kubernetesVersion"] == "v1.34.1+k3s1"
    install, marker = host["calls"]
    assert install[3:6] == ["env", "INSTALL_K3S_VERSION=v1.34.1+k3s1", "sh"]
    assert marker[3:6] == ["install", "-m", "0644"] and marker[-1] == str(k3s_ctl.MARKER)
    assert '"installedBy": "gpu-lab"' in k3s_ctl.MARKER.read_text()

    host["calls"].clear()
    assert k3s_ctl.up(k3s_ctl.UpSpec("v1.34.1+k3s1"))["installed"] is False  # re-run: nothing installed
    assert host["calls"] == []

    assert k3s_ctl.down() == {"uninstalled": True}
    assert host["calls"] == [["sudo", "-n", "--", str(k3s_ctl.UNINSTALL_SCRIPT)]]
    host["calls"].clear()
    assert k3s_ctl.down() == {"uninstalled": False, "reason": "absent"}  # already gone
    assert host["calls"] == []


def test_a_k3s_the_lab_did_not_install_is_neither_changed_nor_uninstalled(host: dict[str, Any]) -> None:
    host["installed"] = "v1.33.5+k3s1"
    k3s_ctl.UNINSTALL_SCRIPT.write_text("")
    with pytest.raises(PreflightError, match="gpu-lab did not install it"):
        k3s_ctl.up(k3s_ctl.UpSpec("v1.34.1+k3s1"))
    assert host["calls"] == []
    assert k3s_ctl.down() == {"uninstalled": False, "reason": "not installed by gpu-lab"}
    assert host["calls"] == []


def test_a_foreign_k3s_of_the_wanted_version_is_reused_and_left_installed(host: dict[str, Any]) -> None:
    host["installed"] = "v1.34.1+k3s1"
    k3s_ctl.UNINSTALL_SCRIPT.write_text("")
    assert k3s_ctl.up(k3s_ctl.UpSpec("v1.34.1+k3s1"))["installed"] is False
    assert not k3s_ctl.MARKER.exists()
    assert k3s_ctl.down()["uninstalled"] is False


def test_main_reports_a_failed_preflight_with_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = k3s_ctl.check_sudo(1000, _probe(1, "sudo: a password is required"))
    monkeypatch.setattr(k3s_ctl, "host_findings", lambda wanted: [refused])
    assert k3s_ctl.main(["up", "--version", "v1.34.1+k3s1"]) == 1
    assert "k3s-sudo: sudo asks for a password" in capsys.readouterr().err


def test_down_refuses_without_sudo_before_touching_anything(
    host: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    k3s_ctl.UNINSTALL_SCRIPT.write_text("")
    refused = CHECK_SUDO(1000, _probe(1, "sudo: a password is required"))
    monkeypatch.setattr(k3s_ctl, "check_sudo", lambda euid, run=None: refused)
    with pytest.raises(PreflightError, match="sudo -v"):
        k3s_ctl.down()
    assert host["calls"] == []
