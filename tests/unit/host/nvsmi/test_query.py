"""Tests for gpulab.host.nvsmi.query: the query CSV, GpuInfo's JSON and the mixed-model warning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab.host import nvsmi
from gpulab.host.nvsmi import GpuInfo, NvidiaSmiParseError
from tests.unit.host.nvsmi.captures import BUS_IDS, HOSTS, read

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
        "migModePending": None,
        "driverVersion": "580.159.04",
    }


# --- MIG query ------------------------------------------------------------------------

H200_MIG = Path(__file__).resolve().parents[3] / "data" / "device-h200" / "final" / "query-mig.csv"


def test_parse_mig_csv_real_h200_capture() -> None:
    (mode,) = nvsmi.parse_mig_csv(H200_MIG.read_text())
    assert mode == nvsmi.MigMode(0, "00000000:00:06.0", "Disabled", "Disabled")


def test_parse_mig_csv_enabled_pending_and_not_available() -> None:
    modes = nvsmi.parse_mig_csv(
        "0, 00000000:18:00.0, Enabled, Enabled\n"
        "1, 00000000:2A:00.0, Disabled, Enabled\n"
        "2, 00000000:3A:00.0, [N/A], [N/A]\n"
    )
    assert [(m.index, m.current, m.pending) for m in modes] == [
        (0, "Enabled", "Enabled"),
        (1, "Disabled", "Enabled"),
        (2, None, None),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ('Field "mig.mode.current" is not a valid field to query.\n', "expected 4 columns"),
        ("x, 00000000:00:06.0, Disabled, Disabled\n", "not an integer"),
        ("0, 00000000:00:06.0, On, Disabled\n", "not Enabled/Disabled"),
    ],
)
def test_parse_mig_csv_rejects(text: str, message: str) -> None:
    with pytest.raises(NvidiaSmiParseError, match=message):
        nvsmi.parse_mig_csv(text)


def test_query_csv_with_a_header_reads_mig_pending() -> None:
    (gpu,) = nvsmi.parse_query_csv(
        "index, name, mig.mode.current, mig.mode.pending\n0, NVIDIA H200, Disabled, Enabled\n"
    )
    assert (gpu.mig_mode, gpu.mig_mode_pending) == ("Disabled", "Enabled")


# --- mixed models ---------------------------------------------------------------------


def test_model_warning_none_for_one_model_or_no_gpus() -> None:
    same = [GpuInfo(i, "NVIDIA H200", None, None, None, None) for i in range(2)]
    assert nvsmi.model_warning(same) is None
    assert nvsmi.model_warning([]) is None
