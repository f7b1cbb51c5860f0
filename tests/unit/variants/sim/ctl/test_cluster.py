"""Unit tests of variants.sim.ctl.cluster: the validation of ``up``'s options (``UpOptions``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from variants.sim import ctl as sc


def test_up_options_validate_at_the_edge(tmp_path: Path) -> None:
    sc.UpOptions(name="lab", workdir=tmp_path, gpus=2)
    with pytest.raises(ValueError, match="cluster name"):
        sc.UpOptions(name="Lab_1", workdir=tmp_path)
    with pytest.raises(ValueError, match="--gpus"):
        sc.UpOptions(name="lab", workdir=tmp_path, gpus=4)
    with pytest.raises(ValueError, match="node name"):
        sc.UpOptions(name="lab", workdir=tmp_path, node_name="GPU node")


def test_up_options_validate_the_node_count(tmp_path: Path) -> None:
    assert sc.UpOptions(name="lab", workdir=tmp_path, nodes=2).nodes == 2
    assert sc.UpOptions(name="lab", workdir=tmp_path).nodes == 1
    with pytest.raises(ValueError, match="nodes must be"):
        sc.UpOptions(name="lab", workdir=tmp_path, nodes=0)
