"""The real engine (CLI, language host, Kubernetes provider) on this machine, no GPU."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.engine


def test_cli_and_plugins_report_their_pinned_versions(project: Project) -> None:
    assert project.pulumi("version").stdout.strip() == project.env["GPULAB_TOOLCHAIN_CLI_VERSION"]
    plugins = project.pulumi("plugin", "ls", "--json").stdout
    import json

    listed = {(p["name"], p["kind"], p["version"]) for p in json.loads(plugins)}
    assert ("kubernetes", "resource", "4.25.0") in listed, plugins
    # The provider binary reports the same version it is installed under.
    about = project.pulumi("about", "--json", check=False).stdout
    assert "3.274.1" in about


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_minikube_preview_without_gpu_fails_fast_naming_the_missing_piece(project: Project) -> None:
    project.init("minikube")
    t0 = time.monotonic()
    p = project.pulumi("preview", "--stack", "minikube", check=False, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode != 0
    text = p.stdout + p.stderr
    assert "nvidia-smi not found on PATH" in text, text
    assert "install the NVIDIA driver" in text, text
    assert took < 60, f"preview took {took:.0f}s"
    # Nothing was created: the stack has no resources.
    export = project.pulumi("stack", "export", "--stack", "minikube").stdout
    assert '"resources"' not in export or '"type": "gpulab' not in export


def test_minikube_preview_with_probe_off_plans_every_resource(project: Project) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart (set GPULAB_CHART_PATH)")
    project.init("minikube", hostProbe="off", chartPath=chart)
    p = project.pulumi("preview", "--stack", "minikube", "--diff", timeout=300)
    text = p.stdout
    for name in (
        "minikube-cluster",
        "minikube-device-plugin-addon",
        "gpu-operator-namespace",
        "gpu-operator-release",
        "gpu-operator-gate",
        "smoke-pod",
        "smoke-check",
    ):
        assert name in text, f"{name} not planned:\n{text}"
    assert "kubernetes:helm.sh/v3:Release" in text
    assert "--driver=docker" not in text  # the plan shows our argv, which names no shell


def test_automation_api_drives_the_same_cli(project: Project) -> None:
    from pulumi import automation as auto

    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart (set GPULAB_CHART_PATH)")
    cli = project.env["GPULAB_PULUMI"]
    assert cli is not None
    from pathlib import Path

    root = Path(cli).resolve().parent.parent
    cmd = auto.PulumiCommand(root=str(root))
    assert cmd.version is not None
    assert "v" + str(cmd.version) == project.env["GPULAB_TOOLCHAIN_CLI_VERSION"]
    ws = auto.LocalWorkspace(
        work_dir=str(project.dir),
        pulumi_command=cmd,
        pulumi_home=project.env.get("PULUMI_HOME"),
        env_vars={k: v for k, v in project.env.items() if k.startswith(("PULUMI_", "PATH", "GPULAB_"))},
        secrets_provider="passphrase",
    )
    stack = auto.Stack.create("minikube", ws)
    stack.set_all_config(
        {"gpu-lab:hostProbe": auto.ConfigValue("off"), "gpu-lab:chartPath": auto.ConfigValue(chart)}
    )
    res = stack.preview()
    assert res.change_summary.get("create", 0) >= 10, res.change_summary
