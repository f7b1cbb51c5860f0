"""Tests for gpulab.host.nvsmi.header: the nvidia-smi header of tables, -q output and whole Pod logs."""

from __future__ import annotations

import re

import pytest

from gpulab.host import nvsmi
from gpulab.host.nvsmi import NvidiaSmiParseError, SmiHeader
from tests.unit.host.nvsmi.captures import HOSTS, KMD_HEADER_TABLE, OLD_DRIVER_SMOKE_LOG, read


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
