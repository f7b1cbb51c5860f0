"""gpulab.core.fixes_operator: the first fixes for the operator stack's own failures."""

from __future__ import annotations

import re

from gpulab.core import fixes, fixes_operator


def test_the_not_injected_fix_carries_the_chapters_docker_reaction() -> None:
    assert fixes.docker_runtime() in fixes_operator.not_injected("gpu-operator", "lab")
    assert "minikube -p lab ssh -- docker info" in fixes_operator.not_injected("gpu-operator", "lab")


def test_operand_cuda_names_the_driver_a_cuda_version_needs() -> None:
    text = fixes_operator.operand_cuda("nvcr.io/nvidia/gpu-operator:v26.7.0", "12.4", "12.2")
    assert "needs CUDA 12.4; the driver supports CUDA <= 12.2" in text
    assert "upgrade the host driver (>= 550.54.14)" in text
    assert "the CUDA of the chart's validator" in fixes_operator.operand_cuda("img", None, None)


def test_leftover_and_crd_fixes_are_commands() -> None:
    assert fixes_operator.remove_node_labels("n1", ["nvidia.com/gpu.present"]) == (
        "scripts/kubectl label node n1 nvidia.com/gpu.present-"
    )
    assert fixes_operator.apply_crds("/c", ["crds/a.yaml", "crds/b.yaml"]).startswith(
        "scripts/kubectl apply --server-side --force-conflicts -f /c/crds/a.yaml -f /c/crds/b.yaml"
    )
    assert fixes_operator.apply_crds("/c", []).endswith("; then make lab")
    held = fixes_operator.namespace_held("ns", ["pods"], ["x.io/f"])
    assert held.startswith("scripts/kubectl -n ns get pods -o name; their finalizers (x.io/f)")
    assert "| xargs scripts/kubectl -n ns patch" in held
    assert "scripts/kubectl api-resources" in fixes_operator.namespace_held("ns")


def test_no_bare_kubectl_or_pulumi_up() -> None:
    """Every kubectl goes through scripts/kubectl (the lab's own cluster); re-measuring is make
    verify, a config change scripts/pulumi config set gpu-lab:K V && make lab."""
    texts = [
        fixes_operator.not_injected(),
        fixes_operator.lost_devices("ns", "p"),
        fixes_operator.runtime_handler(),
        fixes_operator.runtime_class(),
        fixes_operator.driver_reload(),
        fixes_operator.dev_char_symlinks(),
        fixes_operator.driver_root(),
        fixes_operator.plugin_resources(),
        fixes_operator.gpu_held(),
        fixes_operator.dcgm_profiling(),
        fixes_operator.dcgm_hostengine(),
        fixes_operator.validator_init("cuda-validation", "ns", "p"),
        fixes_operator.namespace_held("ns", ["pods"]),
        fixes_operator.crd_stored_versions("clusterpolicies.nvidia.com", "v1alpha1"),
        fixes_operator.remove_leftover_crds(["a.nvidia.com"]),
        fixes_operator.operand_cuda("img", "12.4", "12.2"),
    ]
    for text in texts:
        assert not re.search(r"(?<![/\w-])kubectl ", text), text
        assert "pulumi up" not in text and not re.search(r"(?<!scripts/)pulumi config", text), text
    assert fixes_operator.driver_reload().startswith(
        "reboot the host (the new driver's kernel module loads then), then make verify"
    )
    assert (
        "scripts/pulumi config set gpu-lab:dcgmExporter false && make lab" in fixes_operator.dcgm_profiling()
    )
