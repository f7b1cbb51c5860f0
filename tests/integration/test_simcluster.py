"""End-to-end checks of the simulated GPU cluster (``python -m variants.sim.ctl``).

Needs the binaries of toolchain/sim/build.sh; skipped with the reason when they are absent.
Each module-scoped cluster runs on loopback ports in a temporary work dir and is taken down
at the end, which the last test of each group verifies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from variants.sim import ctl as sc

# One module-scoped lab, its tests in order: one worker runs them all (make test: --dist loadgroup).
pytestmark = [pytest.mark.sim, pytest.mark.xdist_group("simcluster")]

REPO = Path(__file__).resolve().parents[2]
SMOKE_IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"


def _bin_dir() -> Path:
    env = os.environ.get("GPULAB_SIM_BIN_DIR")
    return Path(env) if env else sc.default_cache_bin_dir()


def _require_binaries() -> Path:
    bin_dir = _bin_dir()
    missing = [b for b in sc.REQUIRED_BINARIES if not os.access(bin_dir / b, os.X_OK)]
    if missing:
        pytest.skip(
            f"sim binaries not built ({', '.join(missing)} missing in {bin_dir}); "
            "run `make toolchain` (or toolchain/sim/build.sh)"
        )
    return bin_dir


def _cli(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "variants.sim.ctl", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@dataclass
class Cluster:
    name: str
    workdir: Path
    bin_dir: Path
    kubeconfig: Path
    info: dict[str, Any]

    def kubectl(
        self, *args: str, input_text: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [
                str(self.bin_dir / "kubectl"),
                "--kubeconfig",
                str(self.kubeconfig),
                *args,
            ],
            input=input_text,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
        return proc

    def get_json(self, *args: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.kubectl("get", *args, "-o", "json").stdout)
        return data


def _up(tmp: Path, name: str, gpus: int) -> Cluster:
    bin_dir = _require_binaries()
    workdir = tmp / name
    proc = _cli(
        "up", "--name", name, "--workdir", str(workdir), "--gpus", str(gpus),
        "--bin-dir", str(bin_dir),
    )  # fmt: skip
    assert proc.returncode == 0, f"up failed:\n{proc.stderr}"
    info = json.loads(proc.stdout)  # stdout holds exactly one JSON object
    kubeconfig = tmp / f"{name}.kubeconfig"
    kubeconfig.write_text(info["kubeconfig"], encoding="utf-8")
    return Cluster(name, workdir, bin_dir, kubeconfig, info)


def _down_and_verify(cluster: Cluster) -> None:
    paths = sc.Paths(cluster.name, cluster.workdir)
    proc = _cli("down", "--name", cluster.name, "--workdir", str(cluster.workdir))
    assert proc.returncode == 0, f"down failed:\n{proc.stderr}"
    assert not cluster.workdir.exists()
    assert not sc._cluster_pids(paths)
    port = int(cluster.info["apiServer"].rsplit(":", 1)[1])
    assert port not in set(sc._listening().values())
    again = _cli("down", "--name", cluster.name, "--workdir", str(cluster.workdir))
    assert again.returncode == 0, f"second down failed:\n{again.stderr}"


@pytest.fixture(scope="module")
def one_gpu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = _up(tmp_path_factory.mktemp("sim"), "it-1gpu", 1)
    try:
        yield cluster
    finally:
        _cli("down", "--name", cluster.name, "--workdir", str(cluster.workdir))


def _wait(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.5)


def _gpu_pod(name: str, gpus: int) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "cuda",
                        "image": SMOKE_IMAGE,
                        "command": ["nvidia-smi"],
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                    }
                ],
            },
        }
    )


def test_up_reports_the_cluster(one_gpu: Cluster) -> None:
    info = one_gpu.info
    assert info["kubernetesVersion"] == "v1.36.3"
    assert info["apiServer"].startswith("https://127.0.0.1:")
    assert info["node"] == "gpu-sim-node"
    assert info["gpus"] == 1
    assert info["workdir"] == str(one_gpu.workdir)
    assert "certificate-authority-data" in info["kubeconfig"]  # flattened


def test_node_advertises_one_gpu(one_gpu: Cluster) -> None:
    node = one_gpu.get_json("node", "gpu-sim-node")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "1"
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "1"
    assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert node["metadata"]["annotations"]["gpulab.dev/simulated"] == "true"
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"


def test_smoke_pod_succeeds_and_serves_the_capture(one_gpu: Cluster) -> None:
    one_gpu.kubectl("apply", "-f", "-", input_text=_gpu_pod("gpu-smoke", 1))
    one_gpu.kubectl(
        "wait",
        "pod/gpu-smoke",
        "--for=jsonpath={.status.phase}=Succeeded",
        "--timeout=60s",
    )
    pod = one_gpu.get_json("pod", "gpu-smoke")
    (state,) = pod["status"]["containerStatuses"]
    assert state["state"]["terminated"]["exitCode"] == 0
    logs = one_gpu.kubectl("logs", "gpu-smoke").stdout
    assert logs.splitlines()[0] == sc.LOG_BANNER
    assert "Driver Version: 580.159.04" in logs
    assert "CUDA Version: 13.0" in logs
    events = one_gpu.get_json("events", "--field-selector", "involvedObject.name=gpu-smoke")
    reasons = {e["reason"] for e in events["items"]}
    assert {"Scheduled", "SimulatedExit"} <= reasons


def test_pod_wanting_two_gpus_stays_pending(one_gpu: Cluster) -> None:
    one_gpu.kubectl("apply", "-f", "-", input_text=_gpu_pod("gpu-greedy", 2))

    def failed_scheduling() -> list[dict[str, Any]]:
        events = one_gpu.get_json(
            "events",
            "--field-selector",
            "involvedObject.name=gpu-greedy,reason=FailedScheduling",
        )
        items: list[dict[str, Any]] = events["items"]
        return items

    events = _wait(failed_scheduling, 60, "a FailedScheduling event")
    assert any("Insufficient nvidia.com/gpu" in e["message"] for e in events)
    assert one_gpu.get_json("pod", "gpu-greedy")["status"]["phase"] == "Pending"


def test_up_again_reuses_the_running_cluster(one_gpu: Cluster) -> None:
    proc = _cli("up", "--name", one_gpu.name, "--workdir", str(one_gpu.workdir))
    assert proc.returncode == 0, proc.stderr
    again = json.loads(proc.stdout)
    assert again["apiServer"] == one_gpu.info["apiServer"]
    assert "reusing" in proc.stderr
    status = json.loads(_cli("status", "--name", one_gpu.name, "--workdir", str(one_gpu.workdir)).stdout)
    assert status["running"] is True


def test_gpu_operator_chart_installs(one_gpu: Cluster, tmp_path: Path) -> None:
    """The real chart passes its kubeVersion check and its pods land on the kwok node."""
    chart = os.environ.get("GPULAB_CHART_PATH")
    helm = one_gpu.bin_dir / "helm"
    if not chart or not (Path(chart) / "Chart.yaml").exists():
        pytest.skip("set GPULAB_CHART_PATH to an unpacked gpu-operator chart to run this check")
    if not os.access(helm, os.X_OK):
        pytest.skip(f"helm not built in {one_gpu.bin_dir}; run toolchain/sim/build.sh helm")
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(tmp_path / "cache"),
        "HELM_CONFIG_HOME": str(tmp_path / "config"),
        "HELM_DATA_HOME": str(tmp_path / "data"),
    }
    proc = subprocess.run(
        [
            str(helm), "--kubeconfig", str(one_gpu.kubeconfig), "install", "gpu-operator", chart,
            "-n", "gpu-operator", "--create-namespace", "--set", "driver.enabled=false",
            "--wait", "--timeout", "5m",
        ],
        env=env, capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"helm install failed:\n{proc.stderr}"
    pods = one_gpu.get_json("pods", "-n", "gpu-operator")["items"]
    names = {p["metadata"]["name"].rsplit("-", 2)[0] for p in pods}
    assert any(n.startswith("gpu-operator") for n in names)
    assert any("node-feature-discovery" in p["metadata"]["name"] for p in pods)
    for pod in pods:
        assert pod["spec"]["nodeName"] == "gpu-sim-node"
        assert pod["status"]["phase"] == "Running"
    assert one_gpu.get_json("clusterpolicy", "cluster-policy")["metadata"]["name"] == "cluster-policy"


def test_down_leaves_nothing(one_gpu: Cluster) -> None:
    _down_and_verify(one_gpu)
    status = json.loads(_cli("status", "--name", one_gpu.name, "--workdir", str(one_gpu.workdir)).stdout)
    assert status["running"] is False


def test_two_gpus(tmp_path_factory: pytest.TempPathFactory) -> None:
    cluster = _up(tmp_path_factory.mktemp("sim2"), "it-2gpu", 2)
    try:
        node = cluster.get_json("node", "gpu-sim-node")
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
        assert node["metadata"]["labels"]["nvidia.com/gpu.count"] == "2"
        cluster.kubectl("apply", "-f", "-", input_text=_gpu_pod("gpu-smoke", 2))
        cluster.kubectl(
            "wait",
            "pod/gpu-smoke",
            "--for=jsonpath={.status.phase}=Succeeded",
            "--timeout=60s",
        )
        log = cluster.kubectl("logs", "gpu-smoke").stdout
        # The nvidia-smi table shows both GPUs, and its `nvidia-smi -L` tail lists both.
        assert log.count("NVIDIA H200") == 4 and log.count("(UUID: GPU-") == 2, log
    finally:
        _down_and_verify(cluster)
