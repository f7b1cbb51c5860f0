"""Datasheet peaks: dense values, exact name matching."""

from __future__ import annotations

import re

import pytest

from gpulab.tflops import peaks


@pytest.mark.parametrize(
    ("name", "dtype", "value"),
    [
        ("NVIDIA H200", "bf16", 989.5),
        ("NVIDIA H200", "fp32", 67.0),
        ("NVIDIA H100 80GB HBM3", "fp16", 989.5),
        ("NVIDIA H100 PCIe", "bf16", 756.5),
        ("NVIDIA A100-SXM4-80GB", "bf16", 312.0),
        ("NVIDIA A100-SXM4-40GB", "tf32", 156.0),
        ("NVIDIA A100 80GB PCIe", "fp32", 19.5),
        ("NVIDIA A100-PCIE-40GB", "fp16", 312.0),
        ("NVIDIA L40S", "bf16", 362.05),
        ("NVIDIA L4", "bf16", 121.0),
        ("NVIDIA A10", "fp32", 31.2),
        ("Tesla T4", "fp16", 65.0),
        ("Tesla V100-SXM2-32GB", "fp16", 125.0),
        ("Tesla V100-PCIE-16GB", "fp32", 14.0),
        ("NVIDIA GeForce RTX 4090", "bf16", 165.2),
        ("NVIDIA GeForce RTX 3090", "fp16", 71.0),
        ("GeForce RTX 3090", "fp32", 35.6),
        ("NVIDIA B200", "bf16", 2250.0),
    ],
)
def test_peak_for_nvidia_smi_names(name: str, dtype: str, value: float) -> None:
    assert peaks.peak_for(name, dtype) == value


@pytest.mark.parametrize(
    "name",
    [
        "NVIDIA GH200 480GB",  # contains "H200" but is not one
        "NVIDIA A10G",  # not an A10
        "NVIDIA L40",  # not an L40S
        "NVIDIA H200 NVL",  # lower-power part, different figures
        "NVIDIA H100",  # ambiguous between SXM and PCIe
        "NVIDIA GeForce RTX 3090 Ti",
        "AMD Instinct MI300X",
        "",
    ],
)
def test_unknown_or_ambiguous_names_give_none(name: str) -> None:
    assert peaks.row_for(name) is None
    assert peaks.peak_for(name, "bf16") is None


def test_no_hardware_path_is_none() -> None:
    assert peaks.peak_for("Tesla T4", "bf16") is None
    assert peaks.peak_for("Tesla V100-SXM2-16GB", "tf32") is None


def test_unknown_dtype_raises() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'int8'"):
        peaks.peak_for("NVIDIA H200", "int8")


def test_normalise_name() -> None:
    assert peaks.normalise_name("NVIDIA A100-SXM4-80GB") == "a100 sxm4 80gb"
    assert peaks.normalise_name("  NVIDIA GeForce RTX 4090 ") == "rtx 4090"
    assert peaks.normalise_name("Tesla V100S-PCIE-32GB") == "v100s pcie 32gb"


def test_every_row_is_dense_sourced_and_patterns_do_not_overlap() -> None:
    for row in peaks.PEAKS:
        assert re.search(r"\(\d{4}\)", row.source), row.model  # document and year
        assert set(row.tflops) == set(peaks.DTYPES)
        fp32 = row.tflops["fp32"]
        assert fp32 is not None
        # Dense tensor figures exceed FP32 on every part here; sparse would not be stored.
        for dtype in ("bf16", "fp16"):
            value = row.tflops[dtype]
            assert value is None or value > fp32, row.model
    # A GPU name matches at most one row.
    names = ["NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L4"]
    for name in names:
        hits = [r for r in peaks.PEAKS if re.fullmatch(r.pattern, peaks.normalise_name(name))]
        assert len(hits) == 1, name


def test_sparse_figures_are_halved_where_the_datasheet_gives_only_sparse() -> None:
    h200 = peaks.row_for("NVIDIA H200")
    assert h200 is not None
    assert h200.tflops["bf16"] == 1979 / 2
    assert "sparse" in h200.note
