"""gpulab.tflops: arithmetic, data types, result assembly, and the CLI (with a fake backend)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpulab import tflops
from gpulab.tflops import Backend, Timing
from tests.unit.test_tflops_measure import FakeClock, fake_backend

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "tflops" / "h200-torch.json"
WHEN = datetime(2026, 11, 29, 23, 35, 7, tzinfo=UTC)


def test_flops_per_matmul() -> None:
    assert tflops.matmul_flops(1) == 2
    assert tflops.matmul_flops(8192) == 2 * 8192**3 == 1_099_511_627_776
    with pytest.raises(ValueError):
        tflops.matmul_flops(0)


def test_tflops_from_seconds() -> None:
    # 2 * 8192**3 operations in 1.39 ms is about 791 TFLOP/s.
    assert tflops.tflops_from_seconds(8192, 1.39e-3) == pytest.approx(791.0, rel=1e-3)
    assert tflops.tflops_from_seconds(1000, 1.0) == pytest.approx(2e-3)
    with pytest.raises(ValueError):
        tflops.tflops_from_seconds(8192, 0.0)


def test_parse_dtypes() -> None:
    assert tflops.parse_dtypes("bf16, FP16,fp32,bf16") == ("bf16", "fp16", "fp32")
    with pytest.raises(ValueError, match="unknown dtype"):
        tflops.parse_dtypes("bf16,int8")
    with pytest.raises(ValueError, match="no dtypes"):
        tflops.parse_dtypes(" , ")


def test_assemble_result_computes_median_best_and_fraction() -> None:
    ms = 1e-3
    doc = tflops.assemble_result(
        gpu="NVIDIA H200",
        driver="580.159.04",
        backend="torch 2.11.0+cu130",
        size=8192,
        iters=20,
        warmup=5,
        warmup_seconds=1.0,
        timings={
            "bf16": Timing((1.45 * ms, 1.39 * ms, 1.40 * ms)),
            "fp32": Timing((21.5 * ms,)),
            "tf32": Timing(skipped="tf32 is not measured with CuPy (use PyTorch)"),
        },
        measured_at=WHEN,
        notes={"fp32": "TF32 disabled"},
    )
    bf16 = doc["results"]["bf16"]
    assert bf16["msPerMatmul"] == 1.4
    assert bf16["tflops"] == pytest.approx(785.4, abs=0.1)
    assert bf16["tflopsBest"] == pytest.approx(791.0, abs=0.1)
    assert bf16["peak"] == 989.5
    assert bf16["fraction"] == pytest.approx(785.4 / 989.5, abs=1e-3)
    assert doc["results"]["fp32"]["peak"] == 67.0
    assert doc["results"]["tf32"] == {"tflops": None, "peak": 494.5, "fraction": None}
    assert doc["notes"]["tf32"].startswith("tf32 is not measured")
    assert doc["notes"]["fp32"] == "TF32 disabled"
    assert doc["measuredAt"] == "2026-11-29T23:35:07+00:00"
    assert doc["schema"] == tflops.SCHEMA
    assert doc["repeats"] == 3
    assert doc["flopsPerMatmul"] == 2 * 8192**3
    assert "H200" in doc["peakSource"]
    json.dumps(doc)  # plain JSON


def test_assemble_result_for_an_unknown_gpu_has_no_fraction() -> None:
    doc = tflops.assemble_result(
        gpu="NVIDIA RTX PRO 6000 Blackwell",
        driver=None,
        backend="cupy 14.2.0",
        size=4096,
        iters=10,
        warmup=1,
        timings={"fp16": Timing((1e-3,))},
        measured_at=WHEN,
    )
    assert doc["results"]["fp16"]["peak"] is None
    assert doc["results"]["fp16"]["fraction"] is None
    assert doc["peakSource"] is None
    with pytest.raises(ValueError, match="timezone"):
        tflops.assemble_result(
            gpu="x",
            driver=None,
            backend="b",
            size=1,
            iters=1,
            warmup=0,
            timings={},
            measured_at=datetime(2026, 1, 1),  # naive on purpose
        )


def test_cli_without_backend_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing(prefer: str = "auto", **_: Any) -> Backend:
        raise tflops.BackendMissingError(tflops.BACKEND_MISSING_MESSAGE)

    monkeypatch.setattr(tflops, "load_backend", missing)
    assert tflops.main(["--json"]) == 2
    assert "install" in capsys.readouterr().err


def test_cli_bad_dtype_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert tflops.main(["--dtypes", "int4"]) == 2
    assert "unknown dtype" in capsys.readouterr().err


def test_cli_with_a_fake_backend_prints_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = FakeClock()
    backend, _ = fake_backend(0.0014, clock)
    monkeypatch.setattr(tflops, "load_backend", lambda prefer="auto", **_: backend)
    monkeypatch.setattr(tflops, "driver_version", lambda device=0: "580.159.04")
    rc = tflops.main(
        ["--json", "--size", "8192", "--iters", "4", "--warmup-seconds", "0", "--dtypes", "fp16"]
    )
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu"] == "NVIDIA H200"
    assert doc["backend"] == "fake 1.0"
    assert doc["driver"] == "580.159.04"
    assert doc["results"]["fp16"]["tflops"] == pytest.approx(785.4, abs=0.1)


def test_h200_fixture_is_a_measurement_in_this_shape() -> None:
    doc = json.loads(FIXTURE.read_text())
    assert doc["schema"] == tflops.SCHEMA
    assert doc["gpu"] == "NVIDIA H200"
    assert doc["backend"].startswith("torch ")
    for dtype in ("bf16", "fp16", "fp32"):
        r = doc["results"][dtype]
        assert 0.3 < r["fraction"] <= 1.0, dtype  # a dense measurement never beats the peak
        assert r["fraction"] == pytest.approx(r["tflops"] / r["peak"], abs=1e-3)
    assert "TF32 disabled" in doc["notes"]["fp32"]
