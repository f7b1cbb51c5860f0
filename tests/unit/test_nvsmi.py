"""Tests for gpulab.nvsmi: header, query CSV, -L and table parsers, over real and written output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab import nvsmi
from gpulab.nvsmi import GpuInfo, MigDevice, NvidiaSmiParseError, SmiHeader

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"
BUS_IDS = ("00000000:00:06.0", "00000000:00:07.0")
HOSTS = [("h200-1gpu", 1), ("h200-2gpu", 2)]


def read(host: str, name: str) -> str:
    return (FIXTURES / host / name).read_text()


# --- header ---------------------------------------------------------------------------

OLD_DRIVER_SMOKE_LOG = """\
Tue Mar  6 10:12:44 2018
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 384.90                 Driver Version: 384.90                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla K80           Off  | 00000000:00:1E.0 Off |                    0 |
| N/A   34C    P8    30W / 149W |      0MiB / 11439MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
"""

KMD_HEADER_TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 612.10                 KMD Version: 612.10            CUDA UMD Version: 13.4 |
+-----------------------------------------+------------------------+----------------------+
"""


def test_header_old_driver_without_cuda_field() -> None:
    assert nvsmi.parse_header(OLD_DRIVER_SMOKE_LOG) == SmiHeader("384.90", None)


def test_header_bare_old_driver_line() -> None:
    assert nvsmi.parse_header("Driver Version: 384.90\n") == SmiHeader("384.90", None)


def test_header_kmd_and_cuda_umd_labels() -> None:
    assert nvsmi.parse_header(KMD_HEADER_TABLE) == SmiHeader("612.10", "13.4")


def test_header_kmd_and_cuda_umd_labels_bare_line() -> None:
    header = nvsmi.parse_header("KMD Version: 612.10            CUDA UMD Version: 13.4")
    assert header == SmiHeader("612.10", "13.4")


def test_header_unknown_labels_raise_quoting_the_line() -> None:
    text = (
        "+-------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 700.01     Kernel Version: 700.01     Runtime Version: 15.0 |\n"
        "+-------------------------------------------------------------------------+\n"
    )
    with pytest.raises(NvidiaSmiParseError) as err:
        nvsmi.parse_header(text)
    assert "Kernel Version: 700.01     Runtime Version: 15.0" in str(err.value)


def test_header_known_and_unknown_label_on_one_line_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match=re.escape("Driver Version: 612.10   GSP Version: 2")):
        nvsmi.parse_header("| NVIDIA-SMI 612.10   Driver Version: 612.10   GSP Version: 2 |")


def test_header_split_over_two_box_lines_is_read_whole() -> None:
    text = (
        "+------------------------------------------+\n"
        "| NVIDIA-SMI 620.01   KMD Version: 620.01  |\n"
        "| CUDA UMD Version: 14.0                   |\n"
        "+------------------------------------------+\n"
    )
    assert nvsmi.parse_header(text) == SmiHeader("620.01", "14.0")


def test_header_unknown_second_box_line_raises() -> None:
    text = (
        "+------------------------------------------+\n"
        "| NVIDIA-SMI 620.01   KMD Version: 620.01  |\n"
        "| Runtime Version: 14.0                    |\n"
        "+------------------------------------------+\n"
    )
    with pytest.raises(NvidiaSmiParseError, match=re.escape("Runtime Version: 14.0")):
        nvsmi.parse_header(text)


def test_header_missing_quotes_first_nonempty_line() -> None:
    log = (
        "\n"
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    with pytest.raises(NvidiaSmiParseError) as err:
        nvsmi.parse_header(log)
    message = str(err.value)
    assert "no nvidia-smi header" in message
    assert "couldn't communicate with the NVIDIA driver" in message


def test_header_empty_input_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="no nvidia-smi header"):
        nvsmi.parse_header("  \n\n")


@pytest.mark.parametrize("value", ["", "abc", "580..1"])
def test_header_malformed_driver_version_raises(value: str) -> None:
    with pytest.raises(NvidiaSmiParseError, match="malformed driver version"):
        nvsmi.parse_header(f"| NVIDIA-SMI x   Driver Version: {value}   CUDA Version: 13.0 |")


def test_header_cuda_na_is_none() -> None:
    line = "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: N/A |"
    assert nvsmi.parse_header(line) == SmiHeader("580.159.04", None)


def test_header_cuda_without_driver_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="no driver version"):
        nvsmi.parse_header("| NVIDIA-SMI 580.159.04   CUDA Version: 13.0 |")


def test_header_ignores_cuda_image_banner_before_the_table() -> None:
    # The nvidia/cuda entrypoint banner names the image's toolkit, not the driver's CUDA.
    banner = "\n==========\n== CUDA ==\n==========\n\nCUDA Version 12.4.1\n\n"
    log = banner + read("h200-1gpu", "nvidia-smi.txt")
    assert nvsmi.parse_header(log) == SmiHeader("580.159.04", "13.0")


def test_header_skips_an_application_cuda_line_before_the_table() -> None:
    log = "torch 2.3.0   CUDA Version: 12.1\n" + read("h200-1gpu", "nvidia-smi.txt")
    assert nvsmi.parse_header(log) == SmiHeader("580.159.04", "13.0")


def test_header_first_of_two_runs_wins() -> None:
    log = KMD_HEADER_TABLE + "\n" + read("h200-1gpu", "nvidia-smi.txt")
    assert nvsmi.parse_header(log) == SmiHeader("612.10", "13.4")


def test_header_q_form_real_fixture() -> None:
    header = nvsmi.parse_header(read("h200-1gpu", "nvidia-smi-q.txt"))
    assert header == SmiHeader("580.159.04", "13.0")


def test_header_q_form_old_driver_without_cuda() -> None:
    text = (
        "\n==============NVSMI LOG==============\n\n"
        "Timestamp                           : Sun Dec 17 14:56:13 2017\n"
        "Driver Version                      : 384.98\n\n"
        "Attached GPUs                       : 1\n"
        "GPU 00000000:01:00.0\n"
        "    VBIOS Version                   : 86.04.50.00.6D\n"
    )
    assert nvsmi.parse_header(text) == SmiHeader("384.98", None)


def test_header_q_form_unknown_top_level_version_raises() -> None:
    text = (
        "==============NVSMI LOG==============\n\n"
        "Timestamp                           : Sun Nov 29 22:48:23 2026\n"
        "Kernel Version                      : 700.01\n"
    )
    with pytest.raises(NvidiaSmiParseError, match="Kernel Version"):
        nvsmi.parse_header(text)


@pytest.mark.parametrize(("host", "count"), HOSTS)
def test_header_real_table(host: str, count: int) -> None:
    assert nvsmi.parse_header(read(host, "nvidia-smi.txt")) == SmiHeader("580.159.04", "13.0")


# --- query CSV ------------------------------------------------------------------------

MIXED_QUERY_CSV = """\
0, NVIDIA H200, GPU-00000000-0000-4000-8000-000000000000, 580.159.04, 143771, 00000000:00:06.0
1, NVIDIA H100 80GB HBM3, [N/A], 580.159.04, 81559, 00000000:00:07.0
2, NVIDIA H200, GPU-00000002-0000-4000-8000-000000000002, 580.159.04, [Not Supported], N/A
"""


def test_query_csv_three_gpus_two_models_with_missing_cells() -> None:
    gpus = nvsmi.parse_query_csv(MIXED_QUERY_CSV)

    assert [g.index for g in gpus] == [0, 1, 2]
    assert [g.name for g in gpus] == ["NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    assert gpus[1].uuid is None
    assert gpus[1].memory_total_mib == 81559
    assert gpus[2].memory_total_mib is None
    assert gpus[2].pci_bus_id is None
    assert gpus[0].uuid == "GPU-00000000-0000-4000-8000-000000000000"

    warning = nvsmi.model_warning(gpus)
    assert warning is not None
    assert "nvidia.com/gpu" in warning
    assert "2 x NVIDIA H200" in warning
    assert "1 x NVIDIA H100 80GB HBM3" in warning


@pytest.mark.parametrize(("host", "count"), HOSTS)
def test_query_csv_real_fixture_with_header_and_units(host: str, count: int) -> None:
    gpus = nvsmi.parse_query_csv(read(host, "query-gpu.csv"))

    assert len(gpus) == count
    for i, gpu in enumerate(gpus):
        assert gpu.index == i
        assert gpu.name == "NVIDIA H200"
        assert gpu.driver_version == "580.159.04"
        assert gpu.memory_total_mib == 143771
        assert gpu.pci_bus_id == BUS_IDS[i]
        assert gpu.compute_cap == "9.0"
        assert gpu.mig_mode == "Disabled"
    assert nvsmi.model_warning(gpus) is None


def test_query_csv_header_columns_in_any_order() -> None:
    text = "name, memory.total [MiB], index\nNVIDIA H200, 143771 MiB, 3\n"
    (gpu,) = nvsmi.parse_query_csv(text)
    assert (gpu.index, gpu.name, gpu.memory_total_mib, gpu.uuid) == (3, "NVIDIA H200", 143771, None)


def test_query_csv_noheader_without_trailing_newline() -> None:
    (gpu,) = nvsmi.parse_query_csv(
        "0, NVIDIA H200, GPU-00000000-0000-4000-8000-000000000000, 580.159.04, 143771, 00000000:00:06.0"
    )
    assert gpu == GpuInfo(
        0,
        "NVIDIA H200",
        "GPU-00000000-0000-4000-8000-000000000000",
        "580.159.04",
        143771,
        "00000000:00:06.0",
    )


def test_query_csv_wrong_column_count_quotes_row() -> None:
    with pytest.raises(NvidiaSmiParseError, match=re.escape("got 3 in row: '0, NVIDIA H200, 580.159.04'")):
        nvsmi.parse_query_csv("0, NVIDIA H200, 580.159.04\n")


def test_query_csv_non_integer_index_quotes_row() -> None:
    row = "[N/A], NVIDIA H200, GPU-0, 580.159.04, 143771, 00000000:00:06.0"
    with pytest.raises(NvidiaSmiParseError, match="not an integer") as err:
        nvsmi.parse_query_csv(row)
    assert row in str(err.value)


def test_query_csv_memory_not_a_number_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match=re.escape("memory.total")):
        nvsmi.parse_query_csv("0, NVIDIA H200, GPU-0, 580.159.04, lots, 00000000:00:06.0")


def test_query_csv_empty_input_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="empty"):
        nvsmi.parse_query_csv("\n \n")


def test_query_csv_header_without_rows_raises() -> None:
    with pytest.raises(NvidiaSmiParseError, match="no GPU rows"):
        nvsmi.parse_query_csv("index, name, uuid\n")


def test_query_command_matches_query_fields() -> None:
    assert nvsmi.query_command() == [
        "nvidia-smi",
        "--query-gpu=index,name,uuid,driver_version,memory.total,pci.bus_id",
        "--format=csv,noheader,nounits",
    ]


def test_to_json_has_host_gpus_shape() -> None:
    gpu = GpuInfo(1, "NVIDIA H200", None, "580.159.04", 143771, "00000000:00:07.0", "9.0")
    assert gpu.to_json() == {
        "index": 1,
        "name": "NVIDIA H200",
        "uuid": None,
        "memoryMiB": 143771,
        "pciBusId": "00000000:00:07.0",
        "computeCap": "9.0",
        "migMode": None,
        "driverVersion": "580.159.04",
    }


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


# --- mixed models ---------------------------------------------------------------------


def test_model_warning_none_for_one_model_or_no_gpus() -> None:
    same = [GpuInfo(i, "NVIDIA H200", None, None, None, None) for i in range(2)]
    assert nvsmi.model_warning(same) is None
    assert nvsmi.model_warning([]) is None
