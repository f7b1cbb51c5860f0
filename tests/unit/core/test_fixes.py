"""The first fixes (gpulab.core.fixes): one text per reaction, the same wherever it is quoted."""

from __future__ import annotations

import re

import pytest

from gpulab.core import fixes
from gpulab.core.names import DEFAULT_PROBE_IMAGE
from gpulab.core.outputs import LabOutputs
from gpulab.diagnose.record import Diagnosis
from gpulab.host import preflight
from gpulab.verdict import checklist
from variants.minikube.diagnose import diagnose_minikube_start
from variants.minikube.policies import FIX_MINIKUBE_GPU

CTK = "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"


def test_docker_runtime_reaction_is_the_chapters() -> None:
    assert fixes.docker_runtime() == CTK
    assert fixes.install_toolkit() == "install nvidia-container-toolkit, then " + CTK
    assert (
        fixes.docker_gpus() == f"{CTK}; prove it: docker run --rm --gpus all {DEFAULT_PROBE_IMAGE} nvidia-smi"
    )
    assert fixes.prove_docker_gpus("img:1") == "docker run --rm --gpus all img:1 nvidia-smi"


def test_the_docker_runtime_reaction_reads_the_same_in_preflight_policy_and_diagnosis() -> None:
    missing = preflight.check_docker_info(0, '{"Runtimes": {"runc": {}}}', None)
    start = diagnose_minikube_start("unknown or invalid runtime name: nvidia", profile="lab")
    assert missing.fix == fixes.install_toolkit()
    assert fixes.docker_gpus() in FIX_MINIKUBE_GPU
    assert start.fix.startswith(fixes.docker_gpus())


@pytest.mark.parametrize(
    ("cpus", "mib", "text"),
    [(4, 8192, ">= 4 CPUs / 8 GiB"), (8, 16384, ">= 8 CPUs / 16 GiB"), (4, 9000, ">= 4 CPUs / 9000 MiB")],
)
def test_minimum_names_the_ask(cpus: int, mib: int, text: str) -> None:
    assert fixes.minimum(cpus, mib) == text


def test_resources_reaction() -> None:
    assert fixes.set_resources() == (
        "scripts/pulumi config set gpu-lab:cpus 4 && scripts/pulumi config set gpu-lab:memoryMiB 8192 "
        "&& make lab"
    )
    fix = fixes.node_resources("lab")
    assert fix.startswith("give the node >= 4 CPUs / 8 GiB (minikube start --cpus 4 --memory 8g): ")
    assert fix.endswith("minikube -p lab ssh -- nproc")
    assert fixes.pending() == (
        "confirm the node has >= 4 CPUs / 8 GiB; scripts/kubectl describe pod gpu-smoke shows who blocks it"
    )


def test_allocatable_reaction_names_the_profile_and_the_plugin_log() -> None:
    assert fixes.allocatable("lab") == (
        "check the node sees the GPU: minikube -p lab ssh -- nvidia-smi; then the device plugin's log: "
        "scripts/kubectl -n gpu-operator logs -l app=nvidia-device-plugin-daemonset --tail=50"
    )
    addon = fixes.device_plugin_logs(addon=True)
    assert addon == "scripts/kubectl -n kube-system logs ds/nvidia-device-plugin-daemonset"
    assert fixes.allocatable("lab", addon).endswith(addon)


def test_toolkit_reaction() -> None:
    fix = fixes.toolkit("ns", "retry")
    assert fix.startswith("scripts/kubectl -n ns logs -l app=nvidia-container-toolkit-daemonset")
    assert "rollout status ds/nvidia-container-toolkit-daemonset" in fix and fix.endswith("; then retry")
    assert fixes.toolkit().endswith("re-create the smoke Pod: make verify")


def test_checklist_quotes_the_same_texts() -> None:
    items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json({}, profile="lab"))}
    assert items["allocatable-matches-gpus"].fix == fixes.allocatable("lab", node=fixes.ANY_NODE)
    assert items["events-scheduled-and-pulled"].fix == fixes.toolkit()
    assert items["driver-version-matches"].fix == fixes.driver_mismatch("lab", fixes.ANY_NODE)
    node = "minikube -p lab ssh -- {cmd}"
    items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json({"nodeCommand": node}, profile="lab"))}
    assert (
        items["allocatable-matches-gpus"].fix == fixes.allocatable("lab") == fixes.allocatable("x", node=node)
    )
    assert items["baseline-card-complete"].fix == fixes.card()


def test_cuda_image_names_the_fitting_tag_and_the_driver() -> None:
    fix = fixes.cuda_image("nvidia/cuda:13.1.0-base-ubuntu24.04", "13.1", "13.0")
    assert fix.startswith(
        "use nvidia/cuda:13.0.2-base-ubuntu24.04 (scripts/pulumi config set gpu-lab:smokeImage "
        "nvidia/cuda:13.0.2-base-ubuntu24.04 && make lab)"
    )
    assert fix.endswith("; or upgrade to a driver that supports CUDA 13.1")  # newer than the table
    fix = fixes.cuda_image("nvidia/cuda:12.9.1-base-ubuntu22.04", "12.9", "12.4")
    assert fix.startswith("use nvidia/cuda:12.4.1-base-ubuntu22.04 ")
    assert fix.endswith("; or upgrade the driver to >= 575.51.03")


def test_cuda_image_without_host_facts_says_where_to_read_them() -> None:
    fix = fixes.cuda_image("nvidia/cuda:12.9.1-base-ubuntu22.04", "12.9", None)
    assert "CUDA Version in the host's nvidia-smi header" in fix
    assert fix.endswith("or upgrade the driver to >= 575.51.03")
    assert "a driver that supports CUDA 99.9" in fixes.cuda_image("x", "99.9", None)
    assert "or upgrade" not in fixes.cuda_image("x", None, None)


def test_cuda_image_reads_the_same_in_preflight_and_diagnosis() -> None:
    image = "nvidia/cuda:13.1.0-base-ubuntu24.04"
    err = "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.1, please update"
    finding = preflight.check_docker_gpu_selftest(125, "", err, image, max_cuda="13.0")
    assert finding.fix == fixes.cuda_image(image, "13.1", "13.0")


def test_cite_names_the_row() -> None:
    assert fixes.cite("do it", fixes.ALLOCATABLE_ZERO) == "do it (表 2: allocatable prints 0)"


def test_diagnosis_is_the_record_fixes_are_quoted_into() -> None:
    d = Diagnosis("r", "o", "why", "seen", fixes.docker_runtime())
    assert d.fix == CTK


def test_every_printed_command_runs_from_the_checkout() -> None:
    """No bare kubectl (it would miss the sim and kind labs' clusters) and no bare
    ``pulumi up``: cluster commands go through scripts/kubectl, re-measuring is make verify."""
    texts = [
        fixes.allocatable("lab"),
        fixes.sim_allocatable(),
        fixes.node_resources("lab"),
        fixes.pending(),
        fixes.toolkit(),
        fixes.driver_mismatch("lab"),
        fixes.card(),
        fixes.cuda_image("nvidia/cuda:13.1.0-base-ubuntu24.04", "13.1", "13.0"),
    ]
    for text in texts:
        assert not re.search(r"(?<![/\w-])kubectl ", text), text
        assert "pulumi up" not in text and "(pulumi" not in text, text
    assert fixes.card().endswith(": make verify")
    assert fixes.driver_mismatch("lab").endswith("then make verify to refresh the baseline")
    assert fixes.measure_tflops() == (
        ".venv/bin/python -m gpulab.tflops --json > .state/tflops.json, then make card"
    )
    assert fixes.config_set(("simGpus", 0)) == "scripts/pulumi config set gpu-lab:simGpus 0 && make lab"
