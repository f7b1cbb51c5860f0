"""gpulab.verdict.card.cli: files written, checklist exit codes, unreadable input and usage errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.verdict import card
from tests.unit.samples import DATA


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def test_cli_real_with_tflops_passes(
    real: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = card.main(
        [
            "--outputs",
            write(tmp_path, "outputs.json", real),
            "--tflops",
            str(DATA / "tflops" / "h200-torch.json"),
            "--out-dir",
            str(tmp_path / "card"),
        ]
    )
    assert rc == 0
    assert "checklist: pass" in capsys.readouterr().out
    data = json.loads((tmp_path / "card" / "baseline-card.json").read_text())
    assert data["measuredTflops"]["results"]["bf16"]["fraction"] > 0.5
    assert (tmp_path / "card" / "baseline-card.md").read_text().startswith("# GPU lab")


def test_cli_driver_mismatch_exits_1(
    real: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real[o.SMOKE_DRIVER_VERSION] = "570.195.03"
    rc = card.main(["--outputs", write(tmp_path, "o.json", real), "--out-dir", str(tmp_path)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "driver-version-matches: fail: smoke 570.195.03, host 580.159.04" in err
    assert "first fix:" in err
    assert (tmp_path / "baseline-card.md").exists()


def test_cli_not_evaluated_exits_1(tmp_path: Path) -> None:
    assert card.main(["--outputs", write(tmp_path, "o.json", {}), "--out-dir", str(tmp_path)]) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "must hold a JSON object"),
    ],
)
def test_cli_unreadable_outputs_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    rc = card.main(["--outputs", write(tmp_path, "o.json", content), "--out-dir", str(tmp_path)])
    assert rc == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "baseline-card.md").exists()


def test_cli_missing_file_and_bad_tflops_exit_2(
    real: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert card.main(["--outputs", str(tmp_path / "nope.json")]) == 2
    assert "cannot read --outputs file" in capsys.readouterr().err
    rc = card.main(
        [
            "--outputs",
            write(tmp_path, "o.json", real),
            "--tflops",
            write(tmp_path, "t.json", {"gpu": "x"}),
            "--out-dir",
            str(tmp_path),
        ]
    )
    assert rc == 2
    assert "results" in capsys.readouterr().err


def test_cli_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert card.main([]) == 2
    assert "--outputs" in capsys.readouterr().err


def test_cli_outputs_of_the_wrong_shape_exit_2_naming_each_key(
    real: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {**real, o.HOST_GPU_COUNT: "one", o.SMOKE_EVENTS: "Scheduled"}
    rc = card.main(["--outputs", write(tmp_path, "o.json", bad), "--out-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "hostGpuCount: expected an integer, got 'one' (str)" in err
    assert "smokeEvents: expected a list of strings, got 'Scheduled' (str)" in err
    assert not (tmp_path / "baseline-card.md").exists()
