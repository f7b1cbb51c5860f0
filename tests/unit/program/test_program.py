"""The Pulumi program under mocks: what is created, in what order, with which arguments."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.rpc import _special_secret_sig as SECRET_VALUE
from pulumi.runtime.rpc import _special_sig_key as SECRET_SIG

import variants.base
import variants.minikube.host
from gpulab.config.lab import ConfigError
from gpulab.core import outputs as out
from gpulab.host.preflight import Finding, PreflightError
from gpulab.kube import identity
from tests.unit.program_harness import (
    COMMAND,
    GATE_AT,
    IDENTITY,
    KUBECONFIG,
    MINIKUBE,
    SMOKE_AT,
    TFLOPS_AT,
    run_program,
    sim,
)
from variants.minikube.ctl import StartSpec, start_argv

pytestmark = pytest.mark.usefixtures("no_host_tools")


def argv(run: Any, name: str, key: str = "create") -> list[str]:
    return run.by_name(name).argv(key)


def test_sim_lab_registers_each_piece_in_dependency_order(chart: str) -> None:
    run = run_program(sim(chart))
    assert run.error is None, run.error
    names = run.names()
    for expected in [
        "host",
        "sim",
        "sim-cluster",
        "k8s",
        "gpu-operator",
        "gpu-operator-namespace",
        "gpu-operator-release",
        "gpu-operator-sim-device-plugin",
        "gpu-operator-gate",
        "smoke",
        "smoke-pod",
        "smoke-check",
    ]:
        assert expected in names, f"{expected} missing from {names}"
    gate = run.by_name("gpu-operator-gate")
    assert run.urn_of("gpu-operator-release") in gate.dependencies
    assert run.urn_of("gpu-operator-sim-device-plugin") in gate.dependencies
    # The chart's CRDs and values are checked before the release, in the identity command's
    # process (one process: the first contact with the cluster); the lab owns it: --apply.
    identity = argv(run, "cluster-identity")
    then = identity[identity.index("--then") + 1 :]
    assert then[:3] == ["gpulab.kube.crd_check", "--chart", chart] and "--apply" in then
    assert not any(n.endswith("-crds") for n in names)
    assert run.urn_of("cluster-identity") in run.by_name("k8s").dependencies
    # No operator runs in the sim lab: the gate itself writes the ClusterPolicy's status first.
    assert gate.inputs["create"].endswith('"--simulate-clusterpolicy", "ready"]')
    smoke = run.by_name("smoke")
    assert run.urn_of("gpu-operator-gate") in smoke.dependencies
    # Children are parented to their component.
    assert run.by_name("smoke-pod").parent == smoke.urn
    assert run.by_name("sim-cluster").parent == run.urn_of("sim")
    # Kubernetes objects go through the lab's provider, never the ambient kubeconfig.
    for name in ("gpu-operator-namespace", "gpu-operator-release", "smoke-pod"):
        assert "::k8s::" in run.by_name(name).provider, name


def test_sim_cluster_command_scoped_and_replaced_delete_first(chart: str) -> None:
    run = run_program(sim(chart, simGpus=2, profile="lab-two"))
    cl = run.by_name("sim-cluster")
    assert cl.typ == COMMAND
    assert argv(run, "sim-cluster")[:4] == ["python", "-m", "variants.sim.ctl", "up"]
    assert argv(run, "sim-cluster")[4:6] == ["--name", "lab-two"]
    assert "--gpus" in argv(run, "sim-cluster") and "2" in argv(run, "sim-cluster")
    assert argv(run, "sim-cluster", "delete")[3:6] == ["down", "--name", "lab-two"]
    assert cl.delete_before_replace is True
    assert "stdout" in cl.secret_outputs


def test_minikube_commands_name_the_profile_and_chapter_flags() -> None:
    run = run_program({**MINIKUBE, "cpus": 6, "memoryMiB": 16384, "profile": "lab1"})
    assert run.error is None, run.error
    create = argv(run, "minikube-cluster")
    assert create == [
        "python",
        "-m",
        "variants.minikube.ctl",
        "up",
        "--profile",
        "lab1",
        "--cpus",
        "6",
        "--memory-mib",
        "16384",
        "--kubernetes-version",
        "v1.34.0",
        "--gpus",
        "all",
    ]
    assert argv(run, "minikube-cluster", "delete") == [
        "python",
        "-m",
        "variants.minikube.ctl",
        "down",
        "--profile",
        "lab1",
    ]
    assert run.by_name("minikube-cluster").delete_before_replace is True
    # The command it runs (one argv, no shell): the chapter's start plus explicit sizes.
    assert start_argv(StartSpec("lab1", 6, 16384, "v1.34.0")) == [
        "minikube",
        "start",
        "-p",
        "lab1",
        "--driver=docker",
        "--container-runtime=docker",
        "--gpus=all",
        "--cpus=6",
        "--memory=16384mb",
        "--kubernetes-version=v1.34.0",
    ]


def test_minikube_addon_disabled_when_the_operator_owns_the_device_plugin() -> None:
    run = run_program(MINIKUBE)
    assert argv(run, "minikube-device-plugin-addon")[-2:] == ["--state", "disabled"]
    assert run.by_name("gpu-operator-release").inputs["values"]["devicePlugin"]["enabled"] is True


def test_minikube_addon_enabled_when_it_owns_the_device_plugin() -> None:
    run = run_program({**MINIKUBE, "devicePluginOwner": "minikube-addon", "devicePlugin": "false"})
    assert run.error is None, run.error
    assert argv(run, "minikube-device-plugin-addon")[-2:] == ["--state", "enabled"]
    assert run.by_name("gpu-operator-release").inputs["values"]["devicePlugin"]["enabled"] is False
    gate = argv(run, "gpu-operator-gate")
    assert gate[gate.index("--device-plugin-namespace") + 1] == "kube-system"


def test_helm_release_from_repository_pins_version_and_disables_driver() -> None:
    run = run_program(MINIKUBE)
    rel = run.by_name("gpu-operator-release").inputs
    assert rel["name"] == "gpu-operator"
    assert rel["chart"] == "gpu-operator"
    assert rel["version"] == "v26.7.0"
    assert rel["repositoryOpts"] == {"repo": "https://helm.ngc.nvidia.com/nvidia"}
    assert rel["namespace"] == "gpu-operator"
    assert rel["values"] == {
        "driver": {"enabled": False},
        # minikube --gpus=all already runs the nvidia runtime in its node: toolkit off by default.
        "toolkit": {"enabled": False},
        # cri-dockerd hands Docker no CDI device: the node's nvidia runtime reads the device
        # plugin's NVIDIA_VISIBLE_DEVICES (variants/minikube, device_list_reason).
        "devicePlugin": {"enabled": True, "env": [{"name": "DEVICE_LIST_STRATEGY", "value": "envvar"}]},
        "dcgmExporter": {"enabled": True},
        "nfd": {"enabled": True},
        "cdi": {"enabled": False},
        # Always set: the chart's default is single, the lab's none (gpulab.config.mig).
        "mig": {"strategy": "none"},
    }


def test_helm_release_from_local_chart_path(chart: str) -> None:
    run = run_program(sim(chart, toolkit="false", dcgmExporter="false"))
    rel = run.by_name("gpu-operator-release").inputs
    assert rel["chart"] == chart
    assert "version" not in rel and "repositoryOpts" not in rel
    assert rel["values"]["toolkit"] == {"enabled": False}
    assert rel["values"]["dcgmExporter"] == {"enabled": False}


def test_time_slicing_sets_the_device_plugin_config(chart: str) -> None:
    run = run_program(sim(chart, timeSlicingReplicas=4))
    cfg = run.by_name("gpu-operator-release").inputs["values"]["devicePlugin"]["config"]
    assert cfg["create"] is True and "replicas: 4" in cfg["data"]["any"]


def test_namespace_is_privileged_for_the_operands(chart: str) -> None:
    ns = run_program(sim(chart)).by_name("gpu-operator-namespace").inputs["metadata"]
    assert ns["name"] == "gpu-operator"
    assert ns["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_smoke_pod_is_the_chapters_pod(chart: str) -> None:
    pod = run_program(sim(chart)).by_name("smoke-pod")
    assert pod.inputs["metadata"]["name"] == "gpu-smoke"
    # Not skipAwait (it would skip waiting for deletion too): created when accepted.
    assert (
        pod.inputs["metadata"]["annotations"]["pulumi.com/waitFor"]
        == "jsonpath={.metadata.namespace}=default"
    )
    assert "pulumi.com/skipAwait" not in pod.inputs["metadata"]["annotations"]
    assert pod.inputs["metadata"]["annotations"]["gpulab.dev/simulated-execution"] == "true"
    spec = pod.inputs["spec"]
    assert spec["restartPolicy"] == "Never"
    (c,) = spec["containers"]
    assert c["image"] == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    # The table, then nvidia-smi -L (the UUIDs pods-see-every-gpu compares with the host's).
    assert c["command"] == ["sh", "-c", "nvidia-smi && nvidia-smi -L"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert pod.delete_before_replace is True


def test_smoke_pod_holds_every_gpu_of_a_2gpu_host(chart: str) -> None:
    # smokeGpus all (the default) on the h200-2gpu capture: both GPUs in one Pod.
    limits = run_program(sim(chart, simGpus=2)).by_name("smoke-pod").inputs["spec"]["containers"][0]
    assert limits["resources"]["limits"] == {"nvidia.com/gpu": "2"}


def test_smoke_pod_asks_for_one_replica_under_time_slicing(chart: str) -> None:
    # A Pod's time-sliced replicas need not be distinct GPUs (gpulab.config.gpus.smoke_gpu_count).
    c = run_program(sim(chart, simGpus=2, timeSlicingReplicas=4)).by_name("smoke-pod").inputs["spec"]
    assert c["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def test_kubeconfig_travels_in_environment_never_in_argv(chart: str) -> None:
    run = run_program(sim(chart))
    for r in run.registrations:
        if r.typ == COMMAND:
            for key in ("create", "delete"):
                assert KUBECONFIG not in (r.inputs.get(key) or ""), r.name
    gate = run.by_name("gpu-operator-gate")
    env = gate.inputs["environment"]
    assert env.get(SECRET_SIG) == SECRET_VALUE, "environment must be registered as a secret"
    # The lab's kubeconfig, carrying the identity recorded at create, which the gate checks first.
    given = yaml.safe_load(env["value"]["GPULAB_KUBECONFIG"])
    assert given.pop("extensions") == [{"name": identity.EXTENSION, "extension": IDENTITY}]
    assert given == yaml.safe_load(KUBECONFIG)
    assert "environment" in gate.secret_outputs
    # The provider, which Pulumi would replace on a changed kubeconfig, gets it unchanged.
    assert run.by_name("k8s").inputs["kubeconfig"] in (
        KUBECONFIG,
        {SECRET_SIG: SECRET_VALUE, "value": KUBECONFIG},
    )


def test_outputs_of_the_simulated_lab(chart: str) -> None:
    run = run_program(sim(chart))
    # measuredTflops needs the benchmark Pod (GPU labs), leftovers (and the adopted and foreign
    # objects) the existing variant.
    assert set(run.exported) == set(out.ALL_KEYS) - {
        out.MEASURED_TFLOPS,
        out.TFLOPS_MEASURED_AT,
        out.LEFTOVERS,
        out.GPU_LABELS_BEFORE,
        out.ADOPTED_OBJECTS,
        out.FOREIGN_OBJECTS,
    }
    o = run.outputs
    # What the Lab writes, the readers' model parses: every value has its declared shape.
    model = out.LabOutputs.from_json(o)
    assert model.absent == {
        out.MEASURED_TFLOPS,
        out.TFLOPS_MEASURED_AT,
        out.LEFTOVERS,
        out.GPU_LABELS_BEFORE,
        out.ADOPTED_OBJECTS,
        out.FOREIGN_OBJECTS,
    }
    assert model.to_json() == {k: v for k, v in o.items() if k in out.ALL_KEYS}
    assert o[out.CLUSTER_KIND] == "sim"
    assert o[out.SIMULATED] is True
    assert out.HOST_DRIVER_VERSION in o[out.SIMULATED_FIELDS]
    assert o[out.HOST_GPU_COUNT] == 1 and o[out.HOST_GPU_MODELS] == ["NVIDIA H200"]
    assert o[out.HOST_DRIVER_VERSION] == "580.159.04" and o[out.HOST_MAX_CUDA] == "13.0"
    assert o[out.HOST_PROBE_SOURCE] == "capture:h200-1gpu"
    assert o[out.ALLOCATABLE_GPUS] == 1 and o[out.CAPACITY_GPUS] == 1
    assert o[out.SMOKE_PHASE] == "Succeeded"
    assert o[out.SMOKE_DRIVER_VERSION] == "580.159.04"
    assert o[out.CHART_SOURCE] == f"local:{chart}"
    assert o[out.KUBERNETES_VERSION] == "v1.36.3"
    # Every measured fact says when: the gate's and the smoke check's own times, this run's.
    assert o[out.GATE_MEASURED_AT] == GATE_AT and o[out.SMOKE_MEASURED_AT] == SMOKE_AT
    assert datetime.fromisoformat(o[out.RUN_AT]).tzinfo is not None


def test_two_simulated_gpus_pick_the_two_gpu_capture(chart: str) -> None:
    run = run_program(sim(chart, simGpus=2))
    assert run.outputs[out.HOST_GPU_COUNT] == 2
    assert run.outputs[out.HOST_PROBE_SOURCE] == "capture:h200-2gpu"


def test_preview_leaves_computed_outputs_unknown(chart: str) -> None:
    run = run_program(sim(chart), preview=True)
    assert run.error is None, run.error
    assert run.outputs[out.CLUSTER_KIND] == "sim"
    assert run.outputs[out.HOST_DRIVER_VERSION] == "580.159.04"  # the probe runs at preview
    for key in (out.ALLOCATABLE_GPUS, out.SMOKE_PHASE, out.SMOKE_DRIVER_VERSION, out.KUBERNETES_VERSION):
        assert key in run.exported and key not in run.outputs, key


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"cluster": "docker-desktop"}, "cluster='docker-desktop' is unknown"),
        ({"profile": "lab; rm -rf ~"}, "profile='lab; rm -rf ~' is not safe"),
        ({"cpus": 2}, "cpus=2 is below 4"),
        ({"memoryMiB": 4096}, "memoryMiB=4096 is below 8192"),
        ({"chartVersion": "26.7.0"}, "chartVersion='26.7.0' must be vMAJOR.MINOR.PATCH"),
        ({"smokeImage": "nvidia/cuda:latest"}, "smokeImage='nvidia/cuda:latest' is not pinned"),
        ({"smokeImage": "nvidia/cuda"}, "smokeImage='nvidia/cuda' is not pinned"),
        ({"smokeTimeoutSeconds": 0}, "smokeTimeoutSeconds=0 must be > 0"),
        ({"operatorTimeoutSeconds": -5}, "operatorTimeoutSeconds=-5 must be > 0"),
        ({"clusterTimeoutSeconds": 0}, "clusterTimeoutSeconds=0 must be > 0"),
        ({"cpus": "four"}, "cpus='four' is not a valid int"),
        ({"cpuz": 8}, "cpuz is not a known key"),
        ({"devicePlugin": "false"}, "nothing would register"),
    ],
)
def test_each_config_error_stops_before_any_resource(config: dict[str, Any], needle: str) -> None:
    run = run_program({**MINIKUBE, **config})
    assert isinstance(run.error, ConfigError), run.error
    assert needle in str(run.error)
    assert run.registrations == []


def test_missing_host_tools_stop_before_any_resource(monkeypatch: pytest.MonkeyPatch, chart: str) -> None:
    monkeypatch.setattr(
        variants.base,
        "missing_tools",
        lambda spec, *_: [Finding("tool-kwokctl", False, "kwokctl is not on PATH", "run `make toolchain`")],
    )
    run = run_program(sim(chart))
    assert isinstance(run.error, PreflightError)
    assert "make toolchain" in str(run.error)
    # The host probe component may exist (it only reads); nothing else may.
    assert [r.name for r in run.registrations] in ([], ["host"])


def test_benchmark_pod_measures_after_the_smoke_test_and_exports_tflops() -> None:
    run = run_program({**MINIKUBE, "benchmarkPod": "true"})
    assert run.error is None, run.error
    pod = run.by_name("benchmark-pod").inputs
    (c,) = pod["spec"]["containers"]
    assert c["image"] == "nvcr.io/nvidia/pytorch:25.01-py3"
    assert c["command"][:4] == ["python", "-m", "gpulab.tflops", "--json"]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert pod["spec"]["restartPolicy"] == "Never"
    cm = run.by_name("benchmark-modules").inputs["data"]
    assert (
        set(cm)
        == {"__init__.py"}
        | {f"tflops.{m}.py" for m in ("__init__", "__main__", "benchmark", "measure", "clocks", "peaks")}
        and "def main" in cm["tflops.benchmark.py"]
    )
    # The Pod's layout runs as shipped: each item at its path, and `python -m gpulab.tflops`
    # finds its package there with nothing else of the project around (stdlib only at import).
    (volume,) = pod["spec"]["volumes"]
    (mount,) = c["volumeMounts"]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / mount["mountPath"].lstrip("/")
        for item in volume["configMap"]["items"]:
            (base / item["path"]).parent.mkdir(parents=True, exist_ok=True)
            (base / item["path"]).write_text(cm[item["key"]])
        (env,) = c["env"]
        done = subprocess.run(
            [sys.executable, "-m", "gpulab.tflops", "--help"],
            cwd=tmp,
            env={env["name"]: str(Path(tmp) / env["value"].lstrip("/"))},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0 and "--dtypes" in done.stdout, done.stderr
    # One GPU Pod at a time: after the compute check, which runs after the smoke check.
    assert run.urn_of("compute-check") in run.by_name("benchmark").dependencies
    # A v1-shaped document (one rate per dtype): burst and sustained unknown (gpulab.tflops.report).
    assert run.outputs[out.MEASURED_TFLOPS] == {
        "bf16": {"tflops": 578.7, "burst": None, "sustained": None},
        "fp32": {"tflops": 51.3, "burst": None, "sustained": None},
    }
    assert run.outputs[out.TFLOPS_MEASURED_AT] == TFLOPS_AT


def test_no_benchmark_pod_by_default() -> None:
    run = run_program(MINIKUBE)
    assert "benchmark-pod" not in run.names()
    assert out.MEASURED_TFLOPS not in run.exported


def test_benchmark_pod_refused_in_the_simulated_lab(chart: str) -> None:
    run = run_program(sim(chart, benchmarkPod="true"))
    assert isinstance(run.error, ConfigError)
    assert "no GPU to measure" in str(run.error)
    assert run.registrations == []


def test_preflight_reports_the_missing_driver_and_every_missing_tool_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import program.edge

    def no_driver(*_args: object) -> None:
        raise PreflightError(
            [Finding("nvidia-smi", False, "nvidia-smi not found on PATH", "install the driver")]
        )

    monkeypatch.setattr(program.edge, "probe_host", no_driver)
    monkeypatch.setattr(
        variants.base,
        "missing_tools",
        lambda spec, *_: [Finding("tool-minikube", False, "minikube is not on PATH", "install minikube")],
    )
    run = run_program({"cluster": "minikube"})
    assert isinstance(run.error, PreflightError)
    text = str(run.error)
    assert "nvidia-smi not found on PATH" in text and "minikube is not on PATH" in text
    assert run.registrations == []
