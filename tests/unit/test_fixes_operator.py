"""gpulab.fixes_operator: the first fixes for the operator stack's own failures."""

from __future__ import annotations

from gpulab import fixes, fixes_operator


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
        "kubectl label node n1 nvidia.com/gpu.present-"
    )
    assert fixes_operator.apply_crds("/c", ["crds/a.yaml", "crds/b.yaml"]).startswith(
        "kubectl apply --server-side --force-conflicts -f /c/crds/a.yaml -f /c/crds/b.yaml"
    )
    held = fixes_operator.namespace_held("ns", ["pods"], ["x.io/f"])
    assert held.startswith("kubectl -n ns get pods -o name; their finalizers (x.io/f)")
    assert "kubectl api-resources" in fixes_operator.namespace_held("ns")
