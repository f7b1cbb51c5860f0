"""Tests for gpulab.host.nvsmi.table: the MIG devices of ``nvidia-smi -L``, over real and written output."""

from __future__ import annotations

import pytest

from gpulab.host import nvsmi
from gpulab.host.nvsmi import MigDevice, NvidiaSmiParseError
from tests.unit.host.nvsmi.captures import HOSTS, read

LIST_WITH_MIG = """\
GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-4000-8000-000000000000)
  MIG 3g.71gb     Device  0: (UUID: MIG-11111111-1111-5111-8111-111111111111)
  MIG 1g.18gb     Device  1: (UUID: MIG-22222222-2222-5222-8222-222222222222)
GPU 1: NVIDIA H200 (UUID: GPU-00000001-0000-4000-8000-000000000001)
"""


@pytest.mark.parametrize(("host", "count"), HOSTS)
def test_a_real_listing_without_mig_has_no_mig_devices(host: str, count: int) -> None:
    assert nvsmi.parse_list_mig(read(host, "nvidia-smi-L.txt")) == []


def test_mig_rows_belong_to_the_gpu_above_them() -> None:
    assert nvsmi.parse_list_mig(LIST_WITH_MIG) == [
        MigDevice(0, 0, "3g.71gb", "MIG-11111111-1111-5111-8111-111111111111"),
        MigDevice(0, 1, "1g.18gb", "MIG-22222222-2222-5222-8222-222222222222"),
    ]


def test_mig_before_gpu_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="before any GPU"):
        nvsmi.parse_list_mig("  MIG 1g.18gb     Device  0: (UUID: MIG-1)\n")


def test_unknown_line_raises_quoting_it() -> None:
    with pytest.raises(NvidiaSmiParseError, match="Failed to initialize NVML: Unknown Error"):
        nvsmi.parse_list_mig("Failed to initialize NVML: Unknown Error\n")


def test_empty_output_raises_and_no_devices_is_empty() -> None:
    with pytest.raises(NvidiaSmiParseError, match="empty"):
        nvsmi.parse_list_mig("  \n")
    assert nvsmi.parse_list_mig("No devices found.\n") == []
