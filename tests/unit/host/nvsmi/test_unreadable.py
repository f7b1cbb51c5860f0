"""nvidia-smi fields it could not read are recorded as unreadable, never as values, never a crash."""

from __future__ import annotations

from gpulab.host import nvsmi
from gpulab.host.nvsmi.query import parse_mig_csv, parse_query_csv


def test_an_unknown_error_cell_is_unreadable_not_a_value_and_not_a_crash() -> None:
    """Quake4/MindMiner#627: "GeForce RTX 2080 Ti, 100, 37, 56, 228.82, 210.00, 56, 1560, 6800,
    [Unknown Error]" (power.default_limit); enkore/i3pystatus#850: "--query-gpu=fan.speed ... can
    return [Unknown Error]". Here in a field the lab reads, memory.total."""
    row = "0, NVIDIA H200, GPU-7540a5c6-0000-0000-0000-000000000000, 580.159.04, [Unknown Error], 00000000:00:06.0"  # noqa: E501 (quoted)
    (gpu,) = parse_query_csv(row)
    assert gpu.memory_total_mib is None
    assert gpu.unreadable == (("memory.total", "[Unknown Error]"),)
    assert gpu.to_json()["unreadable"] == {"memory.total": "[Unknown Error]"}
    assert gpu.to_json()["memoryMiB"] is None


def test_err_in_the_name_keeps_the_gpu_and_names_the_field() -> None:
    """NVIDIA/open-gpu-kernel-modules#1193: nvidia-smi prints ERR! where it cannot read a field."""
    (gpu,) = parse_query_csv("0, ERR!, GPU-1, 580.159.04, 143771, 00000000:00:06.0")
    assert gpu.name == "" and dict(gpu.unreadable) == {"name": "ERR!"}


def test_a_readable_row_has_no_unreadable_key() -> None:
    (gpu,) = parse_query_csv("0, NVIDIA H200, GPU-1, 580.159.04, 143771, 00000000:00:06.0")
    assert gpu.unreadable == () and "unreadable" not in gpu.to_json()
    # [N/A] in a field every GPU has: unreadable; in an optional one (the MIG modes of a GPU
    # without MIG): no value.
    (na,) = parse_query_csv("0, NVIDIA H200, [N/A], 580.159.04, 143771, 00000000:00:06.0")
    assert na.uuid is None and na.unreadable == (("uuid", "[N/A]"),)
    (mode,) = parse_mig_csv("0, 00000000:00:06.0, [N/A], [N/A]")
    assert mode.current is None


def test_an_unreadable_mig_mode_is_unknown_not_a_crash() -> None:
    (mode,) = parse_mig_csv("0, 00000000:00:06.0, [Unknown Error], [GPU requires reset]")
    assert mode.current is None and mode.pending is None


def test_the_marker_set_is_what_nvidia_smi_prints() -> None:
    assert {"[Unknown Error]", "ERR!", "[GPU requires reset]"} <= nvsmi.query.UNREADABLE
