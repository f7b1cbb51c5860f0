"""toolchain/node: the real-node harness's pieces that run without a GPU: the program's
rendering for the node, the gate's arguments there, the device plugin's Go tests."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "toolchain" / "node"


def _load(name: str, path: Path):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


render = _load("node_render", NODE / "render.py")
node = _load("node_device", NODE / "device" / "node.py")


@pytest.fixture(scope="module")
def rendered() -> dict:
    if (
        not os.environ.get("GPULAB_CHART_PATH")
        and not (ROOT.parent / "shared" / "charts" / "gpu-operator").is_dir()
    ):
        pytest.skip("no GPU Operator chart (GPULAB_CHART_PATH): the program's preflight needs one offline")
    return render.render(render.config())


def test_render_takes_the_programs_commands_and_pods(rendered: dict) -> None:
    assert rendered["gate"][0] == "gate" and "--expected-gpus" in rendered["gate"]
    assert rendered["gate"][rendered["gate"].index("--expected-gpus") + 1] == "1"
    smoke = rendered["smoke"]["pod"]
    assert smoke["kind"] == "Pod" and smoke["metadata"]["name"] == "gpu-smoke"
    (c,) = smoke["spec"]["containers"]
    assert c["image"] == render.SMOKE_IMAGE and c["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert rendered["smoke"]["check"][:1] == ["smoke"]
    compute = rendered["compute"]["pod"]
    assert [c["image"] for c in compute["spec"]["containers"]] == [render.COMPUTE_IMAGE]
    assert rendered["compute"]["check"][:1] == ["compute"]


def test_negative_rendering_differs_only_in_the_grace(rendered: dict) -> None:
    neg = render.render(render.config(gpuGraceSeconds=render.NEGATIVE_GRACE))
    grace = neg["gate"].index("--grace")
    assert neg["gate"][grace + 1] == str(render.NEGATIVE_GRACE)
    assert neg["gate"][:grace] == rendered["gate"][:grace]


def test_gate_argv_names_the_harness_plugin_and_skips_the_cluster_policy() -> None:
    rendered = ["gate", "--device-plugin-namespace", "gpu-operator", "--device-plugin-daemonset",
                "nvidia-device-plugin-daemonset", "--timeout", "600", "--grace", "60"]  # fmt: skip
    argv, changes = node.gate_argv(rendered)
    assert argv == [
        *("gate", "--device-plugin-namespace", "kube-system", "--device-plugin-daemonset"),
        *("gpulab-device-plugin", "--timeout", "600", "--grace", "60", "--no-cluster-policy"),
    ]
    assert changes == [
        "--device-plugin-namespace gpu-operator -> kube-system",
        "--device-plugin-daemonset nvidia-device-plugin-daemonset -> gpulab-device-plugin",
        "+ --no-cluster-policy",
    ]
    # A rendering that already names them (the GPU stack found installed) is used unchanged,
    # and one that finds the plugin another way keeps its own arguments.
    same, none = node.gate_argv(argv)
    assert same == argv and none == []
    other, changes = node.gate_argv(["gate", "--timeout", "600", "--no-cluster-policy"])
    assert other == ["gate", "--timeout", "600", "--no-cluster-policy"] and changes == []


def test_cni_config_keeps_masquerade_off() -> None:
    import json

    (bridge,) = json.loads(node.cni_conflist())["plugins"]
    assert bridge["type"] == "bridge" and bridge["ipMasq"] is False and bridge["isGateway"] is True
    assert bridge["ipam"]["type"] == "host-local"


def test_plugin_daemonset_mounts_what_the_plugin_reads() -> None:
    ds = node.plugin_daemonset("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    spec = ds["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    mounts = {m["mountPath"]: m["readOnly"] for m in c["volumeMounts"]}
    assert mounts["/var/lib/kubelet/device-plugins"] is False
    assert mounts[str(node.CDI_DIR)] is True and mounts["/run/nvidia-driver-lib"] is True
    assert "-nvml-library=/run/nvidia-driver-lib/libnvidia-ml.so.1" in c["args"]
    assert c["securityContext"] == {"privileged": True}
    assert (
        ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
    )


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go on PATH: the device plugin's Go tests need it")
def test_device_plugin_go_tests() -> None:
    """The plugin's own tests (plugin_test.go): registration, ListAndWatch health updates,
    CDI names in Allocate, the fault file, re-registration after a kubelet restart. Without
    cgo (no NVML), as NVML needs the driver."""
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
    p = subprocess.run(
        ["go", "test", "-count=1", "./..."],
        cwd=NODE / "deviceplugin",
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


def test_the_fleet_rendering_has_the_found_stacks_commands(rendered: dict) -> None:
    """``gpuStack: found``: no gate; the access and fleet checks (the node's pool and GPUs from
    config), the lab's Namespace, and the chapter's Pods in it."""
    found = render.render(render.config(**render.FLEET))
    assert "gate" not in found and found["access"] == ["access", "--namespace", "gpu-lab"]
    argv = found["fleet"]
    assert argv[0] == "fleet" and argv[argv.index("--pool-label") + 1] == render.POOL_LABEL
    assert argv[argv.index("--pool-gpus") + 1] == f"{render.POOL}=1"
    assert found["namespace"]["kind"] == "Namespace" and found["namespace"]["metadata"]["name"] == "gpu-lab"
    assert found["smoke"]["pod"]["metadata"]["namespace"] == "gpu-lab"
    assert node.FLEET_NODE_LABELS == {render.POOL_LABEL: render.POOL}


def test_the_plugin_relabelled_for_the_fleet_keeps_its_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpulab.kube import fleet

    monkeypatch.setattr(node, "PLUGIN_LABELS", {**node.PLUGIN_LABELS, **node.FLEET_PLUGIN_LABELS})
    ds = node.plugin_daemonset("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    labels = ds["spec"]["template"]["metadata"]["labels"]
    assert ds["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert any(f"{k}={v}" in fleet.DEVICE_PLUGIN_SELECTORS for k, v in labels.items())


def test_the_checkouts_python_is_the_harness_interpreter_with_its_virtualenv(tmp_path: Path) -> None:
    """node.py gives the checkout a ``.venv/bin/python`` that runs the harness's interpreter (the
    machine's python3 is a virtualenv's): a script that execs it keeps that virtualenv's
    sys.prefix (its packages); a symlink, what the 2026-12-03 run had, does not."""
    env = tmp_path / "machine-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    interpreter = str(env / "bin" / "python")
    checkout_python = tmp_path / "repo" / ".venv" / "bin" / "python"
    ask = ["-c", "import sys; print(sys.prefix)"]
    checkout_python.parent.mkdir(parents=True)
    checkout_python.symlink_to(interpreter)  # what the run had
    linked = subprocess.run([str(checkout_python), *ask], capture_output=True, text=True, check=True)
    assert Path(linked.stdout.strip()) != env
    node.python_wrapper(checkout_python, interpreter)
    assert not checkout_python.is_symlink()
    wrapped = subprocess.run([str(checkout_python), *ask], capture_output=True, text=True, check=True)
    assert Path(wrapped.stdout.strip()) == env
