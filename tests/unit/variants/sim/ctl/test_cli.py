"""Unit tests of variants.sim.ctl.cli: usage errors exit 2 and print nothing on stdout."""

from __future__ import annotations

from pathlib import Path

import pytest

from variants.sim import ctl as sc


def test_cli_usage_error_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert sc.main(["up", "--name", "lab", "--workdir", str(tmp_path), "--gpus", "5"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--gpus" in captured.err


def test_cli_rejects_a_bad_node_count_with_usage_exit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert sc.main(["up", "--name", "lab", "--workdir", str(tmp_path), "--nodes", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "nodes must be" in captured.err
