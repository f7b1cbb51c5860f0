"""The real-node run on the lent H200 (tests/data/device-h200-node), replayed through the lab.

The run (hack/node/README.md) put the lab's own cluster-side commands in front of a real
kubelet with the project's device plugin, CDI injection by containerd and the harness's
images. These tests read what it recorded with the lab's parsers and checks: the smoke Pod's
log is nvidia-smi's, its driver and GPU are the host's, the compute Pod's kernel passed on that
GPU, the gate's facts and its rules on the recorded nodes (healthy, and the GPU reported
unhealthy), the negative's diagnosis, and the program's outputs and card on those facts
(hack/node/replay.py). GPU UUIDs are placeholders (hack/node/record.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from gpulab.config.mig import Expected
from gpulab.host import nvsmi
from gpulab.kube import compute as kube_compute
from gpulab.kube import smoke_gpus
from gpulab.kube.client import GateError
from gpulab.kube.gate import GateSpec, run_gate
from gpulab.kube.gate_rules import Resources, resources_verdict

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "device-h200-node" / "run"
FEASIBILITY = RUN.parent / "feasibility"
PLACEHOLDER = "GPU-00000000-0000-4000-8000-000000000000"


def text(name: str, run: Path = RUN) -> str:
    return (run / name).read_text()


def doc(name: str, run: Path = RUN) -> Any:
    return json.loads(text(name, run))


def host_query() -> list[nvsmi.GpuInfo]:
    """The host's ``nvidia-smi --query-gpu`` as recorded (``cmd-*.out``: command, rc, stdout)."""
    out = text("cmd-host-query-gpu.out").split("# rc=0\n", 1)[1].split("\n# stderr:", 1)[0]
    return nvsmi.parse_query_csv(out)


def test_the_smoke_pods_log_is_the_hosts_nvidia_smi_injected_by_cdi() -> None:
    (host,) = host_query()
    log = text("smoke-pod.log")
    header = nvsmi.parse_header(log)
    assert (header.driver_version, header.cuda_version) == ("580.159.04", "13.0")
    assert header.driver_version == host.driver_version
    assert smoke_gpus.gpu_uuids(log) == [host.uuid] == [PLACEHOLDER]
    assert "gpu-lab simulated" not in log
    facts = doc("smoke-check.stdout")
    assert facts["smokePhase"] == "Succeeded" and facts["smokeGpuUuids"] == [host.uuid]
    assert facts["smokeLogSimulated"] is False and facts["smokeNode"] == "gpulab-h200"
    assert {"Scheduled", "Pulled", "Started"} <= set(facts["smokeEvents"])
    # nvidia-smi came from the CDI spec (the image holds a shell and the C library only).
    mounts = [m["containerPath"] for m in doc("cdi-nvidia.json")["containerEdits"]["mounts"]]
    assert "/usr/local/nvidia/bin/nvidia-smi" in mounts


def test_the_compute_pods_kernel_passed_on_the_gpu_it_was_given() -> None:
    (host,) = host_query()
    log = text("compute-vectoradd-0.log")
    read = kube_compute.read_vectoradd_log(log)
    assert read.passed and not read.simulated and read.hint == ""
    # gpulab-vectoradd lists each CUDA device it sees as nvidia-smi -L does: exactly this one.
    assert smoke_gpus.gpu_uuids(log) == [host.uuid]
    assert "CUDA driver API 13.0 (libcuda.so.1), 1 device(s) visible" in log
    facts = doc("compute-check.stdout")
    assert facts["computeResult"] == "passed" and facts["computeGpus"] == 1
    assert facts["computePhase"] == "Succeeded" and facts["computeLogSimulated"] is False


def test_the_gate_passed_on_the_kubelets_allocatable_from_the_projects_plugin() -> None:
    facts = doc("gate.stdout")
    assert (facts["allocatableGpus"], facts["capacityGpus"]) == (1, 1)
    (plugin,) = facts["devicePluginPods"]
    assert plugin["name"].startswith("gpulab-device-plugin-") and plugin["ready"] and plugin["restarts"] == 0
    assert plugin["simulated"] is False and facts["kubernetesVersion"] == "v1.36.3"
    node = doc("node-with-gpu.json")
    assert resources_verdict([node], Expected("none", 1)) is None
    # The kubelet's device manager took the plugin's registration (kubelet log).
    log = text("kubelet.log")
    assert 'Got registration request from device plugin with resource" resourceName="nvidia.com/gpu"' in log
    assert 'resource="nvidia.com/gpu" resourceCapacity=1' in log
    # ...and the plugin answered Allocate with the CDI name of the GPU, by UUID.
    assert f"Allocate [{PLACEHOLDER}] -> CDI [nvidia.com/gpu={PLACEHOLDER}]" in text(
        "device-plugin-positive.log"
    )


class Recorded:
    """The gate's reader over the recorded objects: the plugin's DaemonSet (as applied, with
    the status the run saw: 1 of 1 ready) and a recorded node."""

    def __init__(self, node: dict[str, Any]) -> None:
        self.node = node
        self.ds = doc("plugin-daemonset.json")
        self.ds["status"] = {"desiredNumberScheduled": 1, "numberReady": 1, "observedGeneration": 1}
        self.ds["metadata"]["generation"] = 1

    def cluster_policy(self) -> None:
        return None

    def daemonset(self) -> dict[str, Any]:
        return self.ds

    def pods(self, selector: str) -> list[dict[str, Any]]:
        return []

    def nodes(self) -> list[dict[str, Any]]:
        return [self.node]

    def version(self) -> str:
        return "v1.36.3"

    def config_map(self, name: str) -> None:
        return None


def test_the_unhealthy_gpu_fails_the_gate_within_the_grace_naming_the_plugin() -> None:
    """The negative on the node: the plugin reported the GPU Unhealthy; the kubelet kept
    capacity 1 and advertised allocatable 0 (7 s later); the gate, rendered with
    gpuGraceSeconds 20, stopped after 21 s (its timeout is 600 s) with allocatable-zero."""
    node = doc("node-unhealthy.json")
    have = Resources.of([node])
    assert (have.allocatable, have.capacity) == (0, 1)
    key, cause = resources_verdict([node], Expected("none", 1)) or ("", "")
    assert key == "zero" and "devices unhealthy" in cause
    neg = doc("summary.json")["negative"]
    assert neg["gate"]["rc"] == 1 and neg["gate"]["seconds"] < 30
    stderr = text("gate-unhealthy.stderr")
    assert (
        "readiness gate stopped after 21s: allocatable nvidia.com/gpu is 0 (capacity 1): devices unhealthy"
        in stderr
    )
    assert "logs -l app.kubernetes.io/name=gpulab-device-plugin" in stderr and "grep -i xid" in stderr
    assert "allocatable-zero (unhealthy), blocking" in stderr
    assert "fault injected" in text("device-plugin-negative.log")
    # The same rules on the same recorded state, on the gate's own clock: within the grace.
    now = [0.0]
    with pytest.raises(GateError) as exc:
        run_gate(
            Recorded(node),
            GateSpec(
                "kube-system",
                "gpulab-device-plugin",
                require_cluster_policy=False,
                grace=20,
                expect=Expected("none", 1),
            ),
            lambda: "",
            clock=lambda: now[0],
            sleep=lambda s: now.__setitem__(0, now[0] + s),
        )
    assert 20 <= now[0] < 25 and "devices unhealthy" in str(exc.value)
    # And the healthy node passes the same gate at once.
    assert (
        run_gate(
            Recorded(doc("node-with-gpu.json")),
            GateSpec("kube-system", "gpulab-device-plugin", require_cluster_policy=False),
            lambda: "",
        ).allocatable_gpus
        == 1
    )


def test_the_runs_pods_are_the_ones_the_program_renders() -> None:
    rendered = doc("rendered.json")["positive"]
    for pod, name in ((doc("smoke-pod.json"), "smoke"), (doc("compute-pod.json"), "compute")):
        want = rendered[name]["pod"]["spec"]["containers"]
        got = pod["spec"]["containers"]
        assert [(c["name"], c["image"], c.get("command"), c["resources"]["limits"]) for c in got] == [
            (c["name"], c["image"], c.get("command"), c["resources"]["limits"]) for c in want
        ]
        assert pod["spec"]["restartPolicy"] == "Never"
    changes = doc("summary.json")["gateArgvChanges"]
    assert changes == [
        "--device-plugin-namespace gpu-operator -> kube-system",
        "--device-plugin-daemonset nvidia-device-plugin-daemonset -> gpulab-device-plugin",
        "+ --no-cluster-policy",
    ]


def test_the_feasibility_run_found_the_driver_under_usr_local_nvidia() -> None:
    """Why the harness's images set PATH as NVIDIA's CUDA images do: on this machine the CDI
    spec mounts nvidia-smi at /usr/local/nvidia/bin, which a plain PATH lacks."""
    assert text("smoke-pod.log", FEASIBILITY).strip() == "sh: 1: nvidia-smi: not found"
    assert "nvidia-smi-not-found" in text("smoke-check.stderr", FEASIBILITY)
    assert doc("gate.stdout", FEASIBILITY)["allocatableGpus"] == 1


def load_replay(rendered: Any):  # type: ignore[no-untyped-def]
    """hack/node/replay.py as a module, for a run whose rendering is ``rendered``
    (``rendered.json``); skips the test when no GPU Operator chart is at hand."""
    chart = os.environ.get("GPULAB_CHART_PATH") or rendered["positive"]["config"]["chartPath"]
    if not Path(chart, "Chart.yaml").is_file():
        pytest.skip("no GPU Operator chart (GPULAB_CHART_PATH): the program's preflight needs one offline")
    spec = importlib.util.spec_from_file_location("node_replay", ROOT / "hack" / "node" / "replay.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["node_replay"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def replay():  # type: ignore[no-untyped-def]
    return load_replay(doc("rendered.json"))


def test_the_programs_outputs_and_card_on_the_real_facts_pass(replay) -> None:  # type: ignore[no-untyped-def]
    outputs, error = replay.replay(RUN)
    assert error is None
    assert outputs["simulated"] is False and outputs["simulatedFields"] == []
    assert (outputs["hostProbeSource"], outputs["hostDriverVersion"], outputs["hostMaxCuda"]) == (
        "nvml",
        "580.159.04",
        "13.0",
    )
    assert (outputs["allocatableGpus"], outputs["smokeGpuUuids"], outputs["computeResult"]) == (
        1,
        [PLACEHOLDER],
        "passed",
    )
    assert "chartVersion" not in outputs  # no release was installed there
    card = replay.card(outputs)
    items = {i["id"]: i["status"] for i in card["checklist"]["items"]}
    assert card["checklist"]["result"] == "pass" and card["simulated"] is False
    assert items["pods-see-every-gpu"] == items["driver-version-matches"] == items["compute-works"] == "pass"
    assert items["dcgm-reports-gpus"] == "not-tested"  # no DCGM exporter there
    # What the recorded card says is what the program says now.
    assert doc("replay/baseline-card.json")["checklist"] == card["checklist"]


def test_the_card_of_the_unhealthy_node_does_not_pass(replay) -> None:  # type: ignore[no-untyped-def]
    outputs, _ = replay.replay(RUN, negative=True)
    assert (outputs["allocatableGpus"], outputs["capacityGpus"]) == (0, 1)
    card = replay.card(outputs)
    items = {i["id"]: i for i in card["checklist"]["items"]}
    assert card["checklist"]["result"] == "fail"
    assert items["allocatable-matches-gpus"]["status"] == "fail"
