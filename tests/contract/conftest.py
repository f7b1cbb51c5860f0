"""The upstream contract suite's shared fixture: the GPU Operator chart the lab installs.

Every module here pins what the lab relies on from one upstream project at the version it
targets, with the source (repository, path, tag) in each test's docstring, so that a version
bump fails the test that names what to re-check. Facts read from source only are pinned as
the lab's constants; facts present in this workplace (the chart) are read from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.sandbox import shared_chart


@pytest.fixture(scope="session")
def chart() -> Path:
    """The unpacked gpu-operator chart (``$GPULAB_CHART_PATH``, else the workplace copy)."""
    path = shared_chart()
    if path is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH (README, 'Offline machines')")
    return Path(path)


@pytest.fixture(scope="session")
def cluster_policy_schema(chart: Path) -> dict[str, Any]:
    """The ClusterPolicy CRD's ``v1`` openAPIV3Schema (``crds/nvidia.com_clusterpolicies.yaml``)."""
    doc = yaml.safe_load((chart / "crds" / "nvidia.com_clusterpolicies.yaml").read_text())
    (v1,) = [v for v in doc["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = v1["schema"]["openAPIV3Schema"]
    return schema
