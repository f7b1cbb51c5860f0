"""variants.microk8s: its key and settings, the operator's values for its containerd, the host
checks on recorded output, and its lifecycle answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components import gpu_operator
from gpulab.config import schema
from gpulab.config.lab import ConfigError
from gpulab.core.run import Result
from variants import microk8s as m
from variants import registry
from variants.registry import parse_config

#: ``snap list microk8s`` as snapd prints it (cmd/snap/cmd_list.go outputSnapsDefault).
SNAP_LIST = (
    "Name      Version  Rev   Tracking     Publisher   Notes\n"
    "microk8s  v1.35.0  8480  1.35/stable  canonical✓  classic\n"
)


# --------------------------------------------------------------------------- config


def test_the_channel_defaults_to_pulumi_yaml_and_decides_the_track() -> None:
    cfg = parse_config({"cluster": "microk8s"}, env={})
    s = cfg.settings(m.MicroK8sSettings)
    assert s == m.MicroK8sSettings() and s.channel == schema.default("microk8sChannel") == "1.35/stable"
    assert s.track == (1, 35)
    assert m.track_of("1.36/edge") == (1, 36)
    with pytest.raises(ValueError, match="not a MicroK8s channel"):
        m.track_of("latest/stable")


@pytest.mark.parametrize(
    "bad", ["1.35", "latest/stable", "1.35/stable; rm -rf /", "v1.35/stable", "1.35/Stable"]
)
def test_a_channel_that_is_not_one_is_refused_whichever_variant_is_chosen(bad: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "sim", "microk8sChannel": bad}, env={})
    assert err.value.problems == [
        f"gpu-lab:microk8sChannel={bad!r} must be a MicroK8s snap channel 1.MINOR/RISK (RISK: stable, "
        "candidate, beta or edge), e.g. 1.35/stable"
    ]


def test_cdi_follows_the_track_s_containerd() -> None:
    # 1.35 and later: containerd 2 reads CDI, the chart's default (on) stands.
    assert parse_config({"cluster": "microk8s"}, env={}).operator.cdi is True
    assert (
        parse_config({"cluster": "microk8s", "microk8sChannel": "1.36/stable"}, env={}).operator.cdi is True
    )
    # 1.34: containerd 1.7 reads none; cdi must be set false (the record's default is one for every
    # channel), and auto or true is refused with that fix.
    old = {"cluster": "microk8s", "microk8sChannel": "1.34/stable"}
    assert parse_config({**old, "cdi": "false"}, env={}).operator.cdi is False
    for value in ("auto", "true"):
        with pytest.raises(ConfigError) as err:
            parse_config({**old, "cdi": value}, env={})
        assert err.value.problems == [
            f"gpu-lab:cdi={value} with microk8sChannel=1.34/stable: its containerd (v1.7) does not read "
            "CDI (enable_cdi is false and MicroK8s's template does not set it); set cdi=false, or use a "
            "channel of track 1.35 or later"
        ]
    with pytest.raises(ConfigError):
        parse_config(old, env={})  # unset is auto


def test_the_toolkit_is_on_and_pointed_at_the_snap_s_containerd() -> None:
    cfg = parse_config({"cluster": "microk8s"}, env={})
    assert cfg.operator.toolkit is True
    spec = registry.get("microk8s").spec
    values = gpu_operator.helm_values(cfg.operator, spec)
    assert values["toolkit"]["env"] == [
        {"name": "CONTAINERD_CONFIG", "value": "/var/snap/microk8s/current/args/containerd-template.toml"},
        {"name": "CONTAINERD_SOCKET", "value": "/var/snap/microk8s/common/run/containerd.sock"},
        {"name": "RUNTIME_CONFIG_SOURCE", "value": "file=/var/snap/microk8s/current/args/containerd.toml"},
    ]
    off = parse_config({"cluster": "microk8s", "toolkit": "false"}, env={})
    assert gpu_operator.helm_values(off.operator, spec)["toolkit"] == {"enabled": False}
    # No runtime class and the chart's device list: the toolkit (or containerd's CDI) injects.
    assert cfg.smoke_runtime_class is None and spec.device_list_strategy(cfg.operator.nri_plugin) is None
    assert spec.node_runtime == "microk8s" and not spec.runtime_injects_gpus


def test_the_policy_expects_the_paths_the_values_use() -> None:
    from policy.validators.release import toolkit_fits_runtime as policy

    config_dir, socket = policy.EMBEDDED_CONTAINERD["microk8s"]
    env = dict(m.TOOLKIT_ENV)
    assert env["CONTAINERD_CONFIG"].startswith(config_dir) and env["CONTAINERD_SOCKET"] == socket
    assert "microk8s" in policy.RUNTIMES  # pack config clusterRuntime may name it


def test_its_steps_tools_and_capabilities() -> None:
    spec = registry.get("microk8s").spec
    assert registry.step_of_module("variants.microk8s.ctl", "up") == "microk8s-install"
    assert [t.name for t in spec.tools] == ["snap"] and "snapd" in spec.tools[0].fix
    assert spec.bundle_tools == {"snap": ("snap", "list", "microk8s")}
    assert spec.owns_cluster and spec.gpu_stacks == ("install",)
    with pytest.raises(ConfigError, match="gpuStack"):
        parse_config({"cluster": "microk8s", "gpuStack": "device-plugin"}, env={})


# --------------------------------------------------------------------------- host checks


def _probe(answers: dict[str, tuple[int | None, str, str]]) -> Any:
    """A probe answering by the argv's first words (``"sudo -n true"``), recording each call."""
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int | None, str, str]:
        calls.append(list(argv))
        for prefix, answer in answers.items():
            if " ".join(argv).startswith(prefix):
                return answer
        raise AssertionError(f"unexpected {argv}")

    run.calls = calls  # type: ignore[attr-defined]
    return run


def test_parse_tracking_reads_the_tracking_column_by_its_header() -> None:
    assert m.parse_tracking(SNAP_LIST) == "1.35/stable"
    assert m.parse_tracking(SNAP_LIST.replace("1.35/stable", "latest/edge")) == "edge"
    assert m.parse_tracking(SNAP_LIST.replace("1.35/stable", "-          ")) is None
    assert m.parse_tracking("error: no matching snaps installed\n") is None
    assert m.parse_tracking("") is None


@pytest.mark.parametrize(
    ("tracking", "ours", "action"),
    [
        (None, False, "install"),
        ("1.35/stable", False, "reuse"),
        ("1.35/stable", True, "reuse"),
        ("1.34/stable", True, "refresh"),
        ("1.34/stable", False, "refuse"),
    ],
)
def test_plan_never_takes_over_a_foreign_microk8s(tracking: str | None, ours: bool, action: str) -> None:
    assert m.plan(tracking, ours, "1.35/stable") == action


def test_the_installed_check_names_the_fix() -> None:
    f = m.check_installed("1.34/stable", False, "1.35/stable")
    assert not f.ok and f.check == "microk8s-installed"
    assert "scripts/pulumi config set gpu-lab:microk8sChannel 1.34/stable" in f.fix
    assert m.check_installed("1.34/stable", True, "1.35/stable").message.endswith("refresh from 1.34/stable")
    assert (
        m.check_installed(None, False, "1.35/stable").message
        == "microk8s 1.35/stable: not installed; will install"
    )


def test_root_steps_go_through_a_sudo_that_never_prompts() -> None:
    assert m.as_root(["snap", "remove", "microk8s"], euid=0) == ["snap", "remove", "microk8s"]
    assert m.as_root(["snap", "remove", "microk8s"], euid=1000) == [
        "sudo",
        "-n",
        "--",
        "snap",
        "remove",
        "microk8s",
    ]
    assert m.check_sudo(0, _probe({})).ok  # root: no sudo asked
    ok = _probe({"sudo -n true": (0, "", "")})
    assert m.check_sudo(1000, ok).ok and ok.calls == [["sudo", "-n", "true"]]
    f = m.check_sudo(1000, _probe({"sudo -n true": (1, "", "sudo: a password is required\n")}))
    assert (
        not f.ok
        and f.check == "microk8s-sudo"
        and "(sudo -n true: sudo: a password is required)" in f.message
    )
    assert f.fix.startswith("sudo -v") and "GPULAB_STACK=microk8s make lab as yourself" in f.fix
    assert m.check_sudo(1000, _probe({"sudo": (None, "", "")})).message.startswith("sudo is not installed")
    under = m.check_not_under_sudo(0, "alice")
    assert not under.ok and "run it as alice: GPULAB_STACK=microk8s make lab" in under.fix
    assert m.check_not_under_sudo(0, None).ok and m.check_not_under_sudo(1000, "alice").ok


def test_host_findings_ask_the_marker_only_when_sudo_works() -> None:
    run = _probe(
        {
            "sudo -n true": (0, "", ""),
            "sudo -n -- test -e /var/snap/microk8s/common/gpulab-installed.json": (0, "", ""),
            "snap list microk8s": (0, SNAP_LIST.replace("1.35/stable", "1.34/stable"), ""),
        }
    )
    found = m.host_findings("1.35/stable", run, euid=lambda: 1000, env={})
    assert [f.check for f in found] == ["microk8s-not-under-sudo", "microk8s-sudo", "microk8s-installed"]
    assert all(f.ok for f in found) and found[2].message.endswith("refresh from 1.34/stable")  # ours
    refused = _probe({"sudo -n true": (1, "", "no"), "snap list microk8s": (1, "", "error: no matching")})
    found = m.host_findings("1.35/stable", refused, euid=lambda: 1000, env={})
    assert [f.ok for f in found] == [True, False, True]
    assert ["sudo", "-n", "--", "test", "-e", m.SNAP.marker] not in refused.calls


# --------------------------------------------------------------------------- lifecycle


def test_gone_is_the_snap_s_mount(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    v = registry.get("microk8s")
    monkeypatch.setattr(m, "SNAP", m.SnapLayout(mount=str(tmp_path / "snap-microk8s")))
    status = v.status("gpu-lab", tmp_path)
    assert (status.gone, status.evidence) == (True, f"{tmp_path / 'snap-microk8s'} is gone")
    (tmp_path / "snap-microk8s").mkdir()
    assert v.status("gpu-lab", tmp_path).gone is False
    assert "sudo microk8s start" in v.spec.hint("gpu-lab")
    # One install per host, shared by checkouts (as k3s): nothing of its own for delete to remove.
    assert v.delete("gpu-lab", tmp_path) is None


def test_the_live_kubeconfig_is_microk8s_config_on_loopback(tmp_path: Path) -> None:
    v = registry.get("microk8s")
    calls: list[list[str]] = []

    def run(argv: list[str]) -> Result:
        calls.append(argv)
        return Result(0, "apiVersion: v1\nclusters:\n- cluster:\n    server: https://127.0.0.1:16443\n", "")

    assert "127.0.0.1:16443" in (v.kubeconfig("gpu-lab", tmp_path, lambda k: None, run) or "")
    assert calls[0][-3:] == ["/snap/bin/microk8s", "config", "--use-loopback"]
    assert v.kubeconfig("p", tmp_path, lambda k: None, lambda a: Result(1, "", "no")) is None
    fix = v.spec.moved_fix("gpu-lab", "microk8s", "https://127.0.0.1:16443", "https://127.0.0.1:16444")
    assert "kube-apiserver --secure-port" in fix and "GPULAB_STACK=microk8s make destroy" in fix
