"""gpulab.kube.smoke_gpus: the GPU UUIDs in the smoke Pod's log (nvidia-smi, then nvidia-smi -L)."""

from __future__ import annotations

from pathlib import Path

from gpulab.kube.smoke_gpus import SMOKE_SCRIPT, gpu_uuids

CAPTURES = Path(__file__).resolve().parents[3] / "gpulab" / "host" / "captures"
GPU0, GPU1 = "GPU-00000000-0000-4000-8000-000000000000", "GPU-00000001-0000-4000-8000-000000000001"


def test_the_table_then_the_listing_gives_the_uuids_in_order() -> None:
    table = (CAPTURES / "h200-2gpu" / "nvidia-smi.txt").read_text()
    listing = (CAPTURES / "h200-2gpu" / "nvidia-smi-L.txt").read_text()
    assert gpu_uuids(table + listing) == [GPU0, GPU1]


def test_a_plain_nvidia_smi_log_lists_no_gpu() -> None:
    # A Pod of an earlier version (command nvidia-smi only): unknown, not "no GPU".
    assert gpu_uuids((CAPTURES / "h200-1gpu" / "nvidia-smi.txt").read_text()) is None
    assert gpu_uuids("") is None


def test_mig_rows_are_not_gpus_and_the_parent_gpu_counts_once() -> None:
    listing = (CAPTURES / "h200-1gpu-mig" / "nvidia-smi-L.txt").read_text()
    assert gpu_uuids(listing + listing) == [GPU0]


def test_a_real_uuid_and_the_simulated_banner() -> None:
    log = (
        "gpu-lab simulated: ...\n"
        "GPU 0: NVIDIA H200 (UUID: GPU-3b6b1d3a-58a2-93c1-6b4e-2f6c0e1d9a77)\n"
        "GPU 1: NVIDIA H200 (UUID: GPU-b7e1c0de-0000-1111-2222-333344445555)\n"
    )
    assert gpu_uuids(log) == [
        "GPU-3b6b1d3a-58a2-93c1-6b4e-2f6c0e1d9a77",
        "GPU-b7e1c0de-0000-1111-2222-333344445555",
    ]


def test_the_script_prints_the_table_first() -> None:
    # The header parser reads the first table; && keeps a failing nvidia-smi a failed Pod.
    assert SMOKE_SCRIPT == "nvidia-smi && nvidia-smi -L"
