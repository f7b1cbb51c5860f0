"""variants.k3s.ctl: the install and uninstall commands, the plan, the host checks, and
up/down's check-then-act with the installer, k3s and the API wait faked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpulab.preflight import PreflightError
from variants.k3s import ctl as k3s_ctl

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


def test_root_check_says_why_root_is_needed() -> None:
    assert k3s_ctl.check_root(0).ok
    f = k3s_ctl.check_root(1000)
    assert not f.ok and "/etc/rancher/k3s/k3s.yaml" in f.message and "readable by root only" in f.message
    assert "sudo -E" in f.fix


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

    assert k3s_ctl.CONTAINERD_CONFIG.startswith(validators.K3S_CONTAINERD_CONFIG_DIR)
    assert k3s_ctl.CONTAINERD_SOCKET == validators.K3S_CONTAINERD_SOCKET


# --------------------------------------------------------------------------- up/down with fakes


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A host as k3s_ctl sees it: paths under tmp_path, commands recorded, root, systemd."""
    etc = tmp_path / "etc-rancher-k3s"
    state: dict[str, Any] = {"installed": None, "calls": [], "envs": []}
    monkeypatch.setattr(k3s_ctl, "K3S_BIN", tmp_path / "k3s")
    monkeypatch.setattr(k3s_ctl, "UNINSTALL_SCRIPT", tmp_path / "k3s-uninstall.sh")
    monkeypatch.setattr(k3s_ctl, "MARKER", etc / "gpulab-installed.json")
    monkeypatch.setattr(k3s_ctl, "installed_version", lambda run=None: state["installed"])

    def fake_run(argv: list[str], env: dict[str, str] | None = None, timeout: float | None = None) -> str:
        state["calls"].append(argv)
        state["envs"].append(env or {})
        if argv[0] == "sh":
            assert Path(argv[1]).read_text() == "#!/bin/sh\n# installer\n"
            state["installed"] = (env or {})["INSTALL_K3S_VERSION"]
            etc.mkdir(parents=True, exist_ok=True)
            (tmp_path / "k3s-uninstall.sh").write_text("")
        elif argv == [str(tmp_path / "k3s-uninstall.sh")]:
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
            k3s_ctl.check_root(0),
            k3s_ctl.check_installed(state["installed"], (etc / "gpulab-installed.json").exists(), wanted),
        ],
    )
    return state


def test_up_installs_once_and_down_uninstalls_what_it_installed(host: dict[str, Any]) -> None:
    result = k3s_ctl.up(k3s_ctl.UpSpec("v1.34.1+k3s1"))
    assert result["installed"] is True and result["kubernetesVersion"] == "v1.34.1+k3s1"
    (install,) = host["calls"]
    assert install[0] == "sh" and host["envs"][0] == {"INSTALL_K3S_VERSION": "v1.34.1+k3s1"}
    assert k3s_ctl.MARKER.exists()

    host["calls"].clear()
    assert k3s_ctl.up(k3s_ctl.UpSpec("v1.34.1+k3s1"))["installed"] is False  # re-run: nothing installed
    assert host["calls"] == []

    assert k3s_ctl.down() == {"uninstalled": True}
    assert host["calls"] == [[str(k3s_ctl.UNINSTALL_SCRIPT)]]
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
    monkeypatch.setattr(k3s_ctl, "host_findings", lambda wanted: [k3s_ctl.check_root(1000)])
    assert k3s_ctl.main(["up", "--version", "v1.34.1+k3s1"]) == 1
    assert "must run as root" in capsys.readouterr().err
