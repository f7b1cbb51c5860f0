"""The sim variant's answers outside the engine: is its cluster gone (make destroy's teardown)."""

from __future__ import annotations

from pathlib import Path

import variants


def test_sim_cluster_is_gone_when_its_directory_is(tmp_path: Path) -> None:
    sim = variants.get("sim")
    assert sim.gone("lab", tmp_path)[0] is True
    (tmp_path / ".state" / "sim" / "lab").mkdir(parents=True)
    assert sim.gone("lab", tmp_path)[0] is False
