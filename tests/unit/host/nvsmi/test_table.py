"""Tests for gpulab.host.nvsmi.table: ``nvidia-smi -L`` and the plain table, over real and written output."""

from __future__ import annotations

import pytest

from gpulab.host import nvsmi
from gpulab.host.nvsmi import MigDevice, NvidiaSmiParseError, SmiHeader
from tests.unit.host.nvsmi.captures import BUS_IDS, HOSTS, KMD_HEADER_TABLE, OLD_DRIVER_SMOKE_LOG, read

# --- nvidia-smi -L --------------------------------------------------------------------

LIST_WITH_MIG = """\
GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-4000-8000-000000000000)
  MIG 3g.71gb     Device  0: (UUID: MIG-11111111-1111-5111-8111-111111111111)
  MIG 1g.18gb     Device  1: (UUID: MIG-22222222-2222-5222-8222-222222222222)
GPU 1: NVIDIA H200 (UUID: GPU-00000001-0000-4000-8000-000000000001)
"""


@pytest.mark.parametrize(("host", "count"), HOSTS)
def test_list_real_fixture(host: str, count: int) -> None:
    gpus = nvsmi.parse_list(read(host, "nvidia-smi-L.txt"))
    assert gpus == [(i, "NVIDIA H200", f"GPU-0000000{i}-0000-4000-8000-00000000000{i}") for i in range(count)]
    assert nvsmi.parse_list_mig(read(host, "nvidia-smi-L.txt")) == []


def test_list_mig_rows_are_not_gpus() -> None:
    assert [index for index, _, _ in nvsmi.parse_list(LIST_WITH_MIG)] == [0, 1]
    assert nvsmi.parse_list_mig(LIST_WITH_MIG) == [
        MigDevice(0, 0, "3g.71gb", "MIG-11111111-1111-5111-8111-111111111111"),
        MigDevice(0, 1, "1g.18gb", "MIG-22222222-2222-5222-8222-222222222222"),
    ]


def test_list_mig_before_gpu_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="before any GPU"):
        nvsmi.parse_list_mig("  MIG 1g.18gb     Device  0: (UUID: MIG-1)\n")


def test_list_unknown_line_raises_quoting_it() -> None:
    with pytest.raises(NvidiaSmiParseError, match="Failed to initialize NVML: Unknown Error"):
        nvsmi.parse_list("Failed to initialize NVML: Unknown Error\n")


def test_list_no_devices_is_empty() -> None:
    assert nvsmi.parse_list("No devices found.\n") == []


# --- plain table ----------------------------------------------------------------------

MIG_TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA H200                    On  |   00000000:00:06.0 Off |                   On |
| N/A   33C    P0             76W /  700W |     121MiB / 143771MiB |     N/A      Default |
|                                         |                        |              Enabled |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| MIG devices:                                                                            |
+------------------+----------------------------------+-----------+-----------------------+
| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|        Shared         |
|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |
|                  |                                  |        ECC|                       |
|==================+==================================+===========+=======================|
|  0    2   0   0  |              60MiB / 71424MiB    | 60      0 |  3   0    3    0    3 |
|                  |                 0MiB / 131072MiB |           |                       |
+------------------+----------------------------------+-----------+-----------------------+
|  0   13   0   1  |              15MiB / 16384MiB    | 16      0 |  1   0    1    0    1 |
|                  |                 0MiB / 32767MiB  |           |                       |
+------------------+----------------------------------+-----------+-----------------------+
"""


@pytest.mark.parametrize(("host", "count"), HOSTS)
def test_table_real_fixture(host: str, count: int) -> None:
    header, gpus = nvsmi.parse_table(read(host, "nvidia-smi.txt"))

    assert header == SmiHeader("580.159.04", "13.0")
    assert [
        (g.index, g.name, g.pci_bus_id, g.memory_total_mib, g.driver_version, g.mig_mode) for g in gpus
    ] == [(i, "NVIDIA H200", BUS_IDS[i], 143771, "580.159.04", "Disabled") for i in range(count)]


def test_table_mig_devices_are_not_gpus() -> None:
    _, gpus = nvsmi.parse_table(MIG_TABLE)
    assert [(g.index, g.memory_total_mib, g.mig_mode) for g in gpus] == [(0, 143771, "Enabled")]


def test_table_mig_devices_are_not_gpus_without_blank_lines() -> None:
    # kubectl logs of some runtimes drop blank lines; the MIG box then follows directly.
    squeezed = "\n".join(line for line in MIG_TABLE.splitlines() if line.strip())
    _, gpus = nvsmi.parse_table(squeezed)
    assert [g.index for g in gpus] == [0]


def test_table_old_driver_layout() -> None:
    header, gpus = nvsmi.parse_table(OLD_DRIVER_SMOKE_LOG)
    assert header == SmiHeader("384.90", None)
    assert [(g.name, g.pci_bus_id, g.memory_total_mib) for g in gpus] == [
        ("Tesla K80", "00000000:00:1E.0", 11439)
    ]


def test_table_without_gpu_headings_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="no GPU table"):
        nvsmi.parse_table(KMD_HEADER_TABLE)


def test_table_unrecognised_gpu_row_quotes_it() -> None:
    broken = read("h200-1gpu", "nvidia-smi.txt").replace(
        "|   0  NVIDIA H200                    On  |", "|   zero  NVIDIA H200             On  |"
    )
    with pytest.raises(NvidiaSmiParseError, match="zero  NVIDIA H200"):
        nvsmi.parse_table(broken)
