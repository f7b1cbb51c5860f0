"""MIG on the nodes (:mod:`gpulab.diagnose.mig`) and the simulated node's own fix."""

from __future__ import annotations

from typing import Any

from gpulab import diagnose

from .builders import node


def mig_node(alloc: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    n = node(allocatable=None, capacity=None, labels=labels)
    n["status"]["allocatable"].update(alloc)
    n["status"]["capacity"].update(alloc)
    return n


def run(nodes: list[dict[str, Any]], **kw: Any) -> list[diagnose.Diagnosis]:
    return diagnose.diagnose_cluster(pods=[], events=[], daemonsets=[], nodes=nodes, **kw)


def test_mixed_without_mig_resources_is_not_registered_and_not_a_gpu_row() -> None:
    [d] = run(
        [mig_node({"nvidia.com/gpu": "0"})], mig_strategy="mixed", expected_mig={"nvidia.com/mig-1g.18gb": 7}
    )
    assert (d.row, d.variant) == ("allocatable-zero", "mig-not-registered")
    assert "nvidia.com/mig-1g.18gb=7" in d.detail and "nvidia-smi -L" in d.fix


def test_mixed_with_other_counts_is_a_mig_mismatch() -> None:
    """e.g. a GPU whose MIG layout was changed by hand: 6 devices where 7 were expected."""
    [d] = run(
        [mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "6"})],
        mig_strategy="mixed",
        expected_mig={"nvidia.com/mig-1g.18gb": 7},
    )
    assert (d.row, d.variant) == ("allocatable-mismatch", "mig")
    assert "nvidia.com/mig-1g.18gb=6, expected nvidia.com/mig-1g.18gb=7" in d.reason


def test_mixed_with_the_expected_devices_is_quiet_even_with_gpu_zero() -> None:
    assert run([mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7"})], mig_strategy="mixed") == []


def test_single_with_gfds_invalid_label_names_the_mix() -> None:
    """GFD labels <model>-MIG-INVALID under single when GPUs differ in MIG mode or profiles
    (NVIDIA/k8s-device-plugin internal/lm/mig-strategy.go)."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-H200-MIG-INVALID", "nvidia.com/mig.strategy": "single"}
    found = run([mig_node({"nvidia.com/gpu": "0"}, labels)], mig_strategy="single")
    assert (found[0].row, found[0].variant) == ("allocatable-zero", "mig-invalid")
    assert "migStrategy mixed" in found[0].fix


def test_a_simulated_node_without_the_key_gets_the_sim_labs_fix() -> None:
    n = node(allocatable=None, capacity=None)
    n["metadata"]["annotations"] = {"gpulab.dev/simulated": "true"}
    [d] = [d for d in run([n]) if d.row == "allocatable-zero"]
    assert d.fix.startswith("simulated lab: the kwok node advertises simGpus GPUs") and "simGpus 1" in d.fix
