"""The program under mocks: the compute check (components/compute.py), the toolkit default that
fits the node, and the operand images pinned in config."""

from __future__ import annotations

import pytest

from gpulab.core import outputs as out
from tests.unit.program_harness import COMMAND, COMPUTE_AT, MINIKUBE, run_program, sim
from variants import registry

pytestmark = pytest.mark.usefixtures("no_host_tools")


def test_the_compute_pod_runs_nvidias_vectoradd_once_on_one_gpu_after_the_smoke_check() -> None:
    run = run_program(MINIKUBE)
    assert run.error is None, run.error
    compute = run.by_name("compute")
    assert compute.typ == "gpulab:compute:ComputeCheck" and compute.parent == run.urn_of("gpu-lab")
    # One GPU at a time: the compute Pod only once the smoke check is done with it.
    assert run.urn_of("smoke-check") in compute.dependencies
    pod = run.by_name("compute-pod")
    assert pod.parent == compute.urn and "::k8s::" in pod.provider and pod.delete_before_replace
    assert pod.inputs["metadata"]["name"] == "gpu-compute"
    assert pod.inputs["metadata"]["namespace"] == run.by_name("smoke-pod").inputs["metadata"]["namespace"]
    assert "gpulab.dev/simulated-execution" not in pod.inputs["metadata"]["annotations"]
    spec = pod.inputs["spec"]
    assert spec["restartPolicy"] == "Never"
    (c,) = spec["containers"]  # one GPU on this host: one vectorAdd container
    assert c["name"] == "vectoradd-0"
    assert c["image"] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    # It lists the GPU it sees, then runs the sample (a constant script: no configured value).
    assert c["command"] == ["sh", "-c", "nvidia-smi -L; exec /cuda-samples/vectorAdd"]
    assert (
        c["resources"]["limits"]
        == run.by_name("smoke-pod").inputs["spec"]["containers"][0]["resources"]["limits"]
    )
    check = run.by_name("compute-check")
    assert check.typ == COMMAND and check.parent == compute.urn
    argv = check.argv()
    assert argv[:4] == ["python", "-m", "gpulab.kube", "compute"]
    assert argv[argv.index("--pod") + 1] == "gpu-compute"
    assert argv[argv.index("--timeout") + 1] == "300"
    assert argv[argv.index("--host-max-cuda") + 1] == "13.0"
    assert "GPULAB_KUBECONFIG" in check.inputs["environment"]["value"]
    # What each container must have seen: one whole GPU, among the host's (the probe's UUID),
    # and the variant and device list its diagnosis names.
    assert argv[argv.index("--unit") + 1] == "gpu"
    assert argv[argv.index("--host-gpu-uuid") + 1].startswith("GPU-")
    assert argv[argv.index("--cluster") + 1] == "minikube"
    assert argv[argv.index("--device-list-strategy") + 1] == "envvar"
    assert argv[argv.index("--device-list-reason") + 1] == registry.get("minikube").spec.device_list_reason


def test_two_gpus_two_vectoradd_containers_one_gpu_each(chart: str) -> None:
    run = run_program(sim(chart, simGpus=2))
    assert run.error is None, run.error
    smoke = run.by_name("smoke-pod").inputs["spec"]["containers"][0]
    assert smoke["resources"]["limits"] == {"nvidia.com/gpu": "2"}  # the smoke Pod holds both
    containers = run.by_name("compute-pod").inputs["spec"]["containers"]
    assert [c["name"] for c in containers] == ["vectoradd-0", "vectoradd-1"]
    for c in containers:
        assert c["resources"]["limits"] == {"nvidia.com/gpu": "1"}
        assert c["command"] == ["sh", "-c", "nvidia-smi -L; exec /cuda-samples/vectorAdd"] and "args" not in c
        assert c["image"] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    # The check's count (the harness reports every container passed) is the stack output.
    assert run.outputs[out.COMPUTE_GPUS] == 2 and run.outputs[out.SMOKE_GPUS] == 2
    assert out.COMPUTE_GPUS in run.outputs[out.SIMULATED_FIELDS]


def test_the_compute_outputs(chart: str) -> None:
    real = run_program(MINIKUBE).outputs
    assert real[out.COMPUTE_RESULT] == "passed" and real[out.COMPUTE_PHASE] == "Succeeded"
    assert real[out.COMPUTE_GPUS] == 1
    assert real[out.COMPUTE_IMAGE] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    assert real[out.COMPUTE_MEASURED_AT] == COMPUTE_AT
    assert real[out.SIMULATED_FIELDS] == []
    simulated = run_program(sim(chart))
    pod = simulated.by_name("compute-pod").inputs
    assert pod["metadata"]["annotations"]["gpulab.dev/simulated-execution"] == "true"
    assert {out.COMPUTE_PHASE, out.COMPUTE_RESULT} <= set(simulated.outputs[out.SIMULATED_FIELDS])


def test_compute_check_off_exports_not_tested_and_lists_nothing_as_simulated(chart: str) -> None:
    run = run_program(sim(chart, computeCheck="false"))
    assert run.error is None, run.error
    assert "compute-pod" not in run.names() and "compute-check" not in run.names()
    o = run.outputs
    assert o[out.COMPUTE_RESULT] == "not-tested"
    assert (
        o[out.COMPUTE_PHASE] is None and o[out.COMPUTE_IMAGE] is None and o[out.COMPUTE_MEASURED_AT] is None
    )
    assert o[out.COMPUTE_GPUS] is None
    assert not {out.COMPUTE_PHASE, out.COMPUTE_RESULT, out.COMPUTE_GPUS} & set(o[out.SIMULATED_FIELDS])


def test_the_benchmark_waits_for_the_smoke_check_when_the_compute_check_is_off() -> None:
    run = run_program({**MINIKUBE, "benchmarkPod": "true", "computeCheck": "false"})
    assert run.urn_of("smoke-check") in run.by_name("benchmark").dependencies


def test_a_preview_knows_the_compute_image_not_its_result() -> None:
    run = run_program(MINIKUBE, preview=True)
    assert run.error is None, run.error
    assert run.outputs[out.COMPUTE_IMAGE] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    assert out.COMPUTE_RESULT in run.exported and out.COMPUTE_RESULT not in run.outputs


def test_minikube_leaves_the_toolkit_to_its_node_unless_asked() -> None:
    values = run_program(MINIKUBE).by_name("gpu-operator-release").inputs["values"]
    assert values["toolkit"] == {"enabled": False}
    on = run_program({**MINIKUBE, "toolkit": "true"})
    assert on.by_name("gpu-operator-release").inputs["values"]["toolkit"] == {"enabled": True}
    assert on.outputs[out.OPERATOR_COMPONENTS]["toolkit"] is True


def test_the_simulated_lab_keeps_the_toolkit_on(chart: str) -> None:
    values = run_program(sim(chart)).by_name("gpu-operator-release").inputs["values"]
    assert values["toolkit"] == {"enabled": True}


def test_pinned_operand_images_reach_the_chart_and_the_outputs(chart: str) -> None:
    digest = "sha256:" + "b" * 64
    run = run_program(
        sim(
            chart,
            devicePluginImage="nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
            validatorImage=f"nvcr.io/nvidia/gpu-operator@{digest}",
        )
    )
    assert run.error is None, run.error
    values = run.by_name("gpu-operator-release").inputs["values"]
    assert values["devicePlugin"] == {
        "enabled": True,
        "repository": "nvcr.io/nvidia",
        "image": "k8s-device-plugin",
        "version": "v0.20.0",
    }
    assert values["validator"] == {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": digest}
    assert "repository" not in values["toolkit"]
    assert run.outputs[out.OPERAND_IMAGES] == {
        "devicePlugin": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
        "toolkit": None,
        "dcgmExporter": None,
        "validator": f"nvcr.io/nvidia/gpu-operator@{digest}",
    }
    # The simulated stand-in DaemonSet runs the image the operator would.
    ds = run.by_name("gpu-operator-sim-device-plugin").inputs["spec"]["template"]["spec"]
    assert ds["containers"][0]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
