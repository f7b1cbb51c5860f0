"""gpulab.tflops: arithmetic, data types, result assembly, and the CLI (with a fake backend)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gpulab.tflops import benchmark as tflops
from gpulab.tflops import clocks as tflops_clocks
from gpulab.tflops.benchmark import Backend, Reference, Timing, Window
from gpulab.tflops.clocks import Sample
from tests.unit.tflops.test_measure import FakeClock, fake_backend

DATA = Path(__file__).resolve().parents[2] / "data" / "tflops"
#: v1 document (2026-11-29): one rate per dtype, measured after >= 1 s of warm-up.
FIXTURE = DATA / "h200-torch.json"
#: v2 document (2026-12-01, tests/data/device-h200/README.md): burst, sustained, reference.
FIXTURE_V2 = DATA / "h200-torch-v2.json"
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
    assert doc["headline"] == "sustained"
    assert "burst" not in bf16 and "reference" not in doc  # no phases, no reference given
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


def _windows(t: float, ms: float, n: int, k: int, gap: float = 0.0) -> tuple[Window, ...]:
    out = []
    for _ in range(n):
        out.append(Window(t, t + ms * k / 1e3, ms / 1e3, k))
        t += ms * k / 1e3 + gap
    return tuple(out)


def test_assemble_result_with_burst_sustained_reference_and_clocks() -> None:
    burst = _windows(2.0, 1.39, 3, 10, gap=2.0)  # three 14 ms runs, 2 s apart
    sustained = _windows(10.0, 1.66, 30, 20)  # 30 windows of 33 ms, about 1 s
    timing = Timing(
        runs=tuple(w.seconds_per_product for w in sustained if w.t0 - 10.0 >= 0.5),
        burst=burst,
        sustained=sustained,
        settle_s=0.5,
    )
    ref = Reference(_windows(0.0, 1.38, 3, 10, gap=0.5))
    samples = [Sample(w.t0 + 0.005, 1980, 120.0, 125.0, 0) for w in burst + ref.runs]
    samples += [Sample(10.0 + i * 0.01, 1470, 690.0, 695.0, 0x4) for i in range(100)]
    doc = tflops.assemble_result(
        gpu="NVIDIA H200",
        driver="580.159.04",
        backend="torch 2.11.0+cu130",
        size=8192,
        iters=20,
        warmup=5,
        timings={"bf16": timing},
        measured_at=WHEN,
        warmup_seconds=0.5,
        reference=ref,
        samples=samples,
        sampler="fake",
        burst_iters=10,
        rest_seconds=2.0,
        sustained_seconds=1.0,
    )
    r = doc["results"]["bf16"]
    assert doc["schema"] == "gpulab.dev/tflops/v2" and doc["repeats"] == 3
    assert r["tflops"] == pytest.approx(662.4, abs=0.1) == r["sustained"]["tflops"]
    assert r["burst"]["tflops"] == pytest.approx(791.0, abs=0.1)
    assert r["burst"]["smClockMHz"]["median"] == 1980 and r["burst"]["runs"] == 3
    assert r["sustained"]["smClockMHz"]["median"] == 1470
    assert r["sustained"]["powerW"]["median"] == 695.0
    assert r["sustained"]["clockEventReasons"] == ["sw-power-cap"]
    assert r["sustained"]["windows"] == len(timing.runs) and r["sustained"]["settleSeconds"] == 0.5
    assert [p["t"] for p in r["sustained"]["trace"]] == [0]
    assert r["burst"]["fraction"] == pytest.approx(791.0 / 989.5, abs=1e-3)
    ref_doc = doc["reference"]
    assert ref_doc["tflops"] == pytest.approx(796.7, abs=0.1)
    assert ref_doc["burstOverReference"] == pytest.approx(0.993, abs=1e-3)
    assert ref_doc["withinTolerance"] is True and "reference" not in doc["notes"]
    assert set(doc["phases"]) == {"burst", "sustained", "reference"}
    json.dumps(doc)
    text = tflops._render_text(doc)
    assert "791.0 @1980 MHz" in text and "662.4 @1470 MHz 695 W" in text and "burst/reference 0.993" in text


def test_a_burst_off_the_reference_gets_a_note() -> None:
    timing = Timing(runs=(1.66e-3,), burst=_windows(0.0, 1.66, 3, 10))
    doc = tflops.assemble_result(
        gpu="NVIDIA H200",
        driver=None,
        backend="torch",
        size=8192,
        iters=20,
        warmup=5,
        timings={"bf16": timing},
        measured_at=WHEN,
        reference=Reference(_windows(0.0, 1.38, 3, 10)),
    )
    assert doc["reference"]["withinTolerance"] is False
    assert "-16.9% off the plain reference loop" in doc["notes"]["reference"]
    skipped = tflops.assemble_result(
        gpu="NVIDIA H200",
        driver=None,
        backend="cupy 14.2.0",
        size=8192,
        iters=20,
        warmup=5,
        timings={"fp16": Timing(runs=(1.4e-3,))},
        measured_at=WHEN,
        reference=Reference(skipped="the reference is a PyTorch loop"),
    )
    assert skipped["reference"]["tflops"] is None and "PyTorch" in skipped["reference"]["skipped"]
    assert "skipped (the reference is a PyTorch loop)" in tflops._render_text(skipped)


def test_cli_with_a_fake_backend_prints_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = FakeClock()
    backend, _ = fake_backend(0.0014, clock)
    monkeypatch.setattr(tflops, "load_backend", lambda prefer="auto", **_: backend)
    monkeypatch.setattr(tflops, "driver_version", lambda device=0: "580.159.04")
    monkeypatch.setattr(tflops_clocks, "open_sampler", lambda device=0, **_: tflops_clocks.NullSampler())
    rc = tflops.main(
        [
            "--json",
            "--size",
            "8192",
            "--iters",
            "4",
            "--rest-seconds",
            "0",
            "--sustained-seconds",
            "0.02",
            "--warmup-seconds",
            "0",
            "--dtypes",
            "fp16",
        ]
    )
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["gpu"] == "NVIDIA H200"
    assert doc["backend"] == "fake 1.0"
    assert doc["driver"] == "580.159.04"
    assert doc["results"]["fp16"]["tflops"] == pytest.approx(785.4, abs=0.1)
    assert doc["results"]["fp16"]["burst"]["tflops"] == pytest.approx(785.4, abs=0.1)
    assert doc["results"]["fp16"]["burst"]["smClockMHz"] is None  # no sampler
    assert doc["reference"]["tflops"] is None  # the fake backend has no plain loop
    assert doc["sampler"] is None and doc["restSeconds"] == 0.0


def test_cli_rejects_a_settle_longer_than_the_phase(capsys: pytest.CaptureFixture[str]) -> None:
    assert tflops.main(["--sustained-seconds", "2", "--warmup-seconds", "3"]) == 2
    assert "--warmup-seconds" in capsys.readouterr().err


def test_h200_fixture_is_a_measurement_in_this_shape() -> None:
    doc = json.loads(FIXTURE.read_text())
    assert doc["schema"] == "gpulab.dev/tflops/v1"
    assert doc["gpu"] == "NVIDIA H200"
    assert doc["backend"].startswith("torch ")
    for dtype in ("bf16", "fp16", "fp32"):
        r = doc["results"][dtype]
        assert 0.3 < r["fraction"] <= 1.0, dtype  # a dense measurement never beats the peak
        assert r["fraction"] == pytest.approx(r["tflops"] / r["peak"], abs=1e-3)
    assert "TF32 disabled" in doc["notes"]["fp32"]


def test_h200_v2_fixture_burst_meets_the_reference_and_sustained_is_power_capped() -> None:
    """The 2026-12-01 H200 run: bf16 burst 790.9 at 1980 MHz, plain reference 797.8
    (burst/reference 0.991, inside 3%), sustained 667.9 at 1470 MHz and ~690 W (SW power cap)."""
    doc = json.loads(FIXTURE_V2.read_text())
    assert doc["schema"] == tflops.SCHEMA and doc["headline"] == "sustained"
    ref = doc["reference"]
    assert ref["dtype"] == "bf16" and ref["products"] == 10 and ref["withinTolerance"] is True
    assert abs(ref["burstOverReference"] - 1) <= tflops.REFERENCE_TOLERANCE
    for dtype in ("bf16", "fp16", "fp32", "tf32"):
        r = doc["results"][dtype]
        burst, sustained = r["burst"], r["sustained"]
        assert r["tflops"] == sustained["tflops"]
        assert 0.3 < sustained["fraction"] <= burst["fraction"] + 0.01 <= 1.01, dtype
        assert burst["smClockMHz"]["median"] == 1980, dtype
        assert sustained["smClockMHz"]["median"] <= 1980 and sustained["powerW"]["median"] > 600, dtype
        assert sustained["windows"] > 0 and sustained["trace"], dtype
    bf16 = doc["results"]["bf16"]
    assert bf16["burst"]["tflops"] > 1.1 * bf16["sustained"]["tflops"]  # the power cap
    assert "sw-power-cap" in bf16["sustained"]["clockEventReasons"]
    assert bf16["sustained"]["smClockMHz"]["median"] < 1600
    assert doc["results"]["fp32"]["sustained"]["smClockMHz"]["median"] == 1980  # not capped
    assert "TF32 disabled" in doc["notes"]["fp32"]


def test_the_benchmark_pod_modules_are_closed_and_stdlib_only() -> None:
    """What components/benchmark.py must ship: gpulab.tflops's benchmark and every module it imports,
    each importing only the standard library at module level (torch, cupy and pynvml are
    imported inside functions)."""
    import ast
    import sys

    from tests.support.pyast import parse

    package_dir = Path(tflops.__file__).resolve().parent
    shipped = {"__init__", "__main__", "benchmark", "measure", "clocks", "peaks"}
    for name in shipped:
        tree = parse((package_dir / f"{name}.py").read_text())
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module == "gpulab.tflops":
                    assert {a.name for a in node.names} <= shipped, name
                elif node.module.startswith("gpulab."):
                    assert node.module.startswith("gpulab.tflops."), name
                    assert node.module.split(".")[2] in shipped, name
                else:
                    assert node.module.split(".")[0] in sys.stdlib_module_names | {"__future__"}, name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert alias.name.split(".")[0] in sys.stdlib_module_names, (name, alias.name)
