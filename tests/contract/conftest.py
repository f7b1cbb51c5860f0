"""The upstream contract suite's shared fixture: the GPU Operator chart the lab installs.

Every module here pins what the lab relies on from one upstream project at the version it
targets, with the source (repository, path, tag) in each test's docstring, so that a version
bump fails the test that names what to re-check. Facts read from source only are pinned as
the lab's constants; facts present in this workplace (the chart) are read from it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.sandbox import shared_chart

ROOT = Path(__file__).resolve().parents[2]


def versions() -> dict[str, str]:
    """toolchain/versions.env as ``{KEY: value}``."""
    out = {}
    for line in (ROOT / "toolchain" / "versions.env").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def go_module_chart(env: str, script: str, what: str) -> Path:
    """A chart the offline lab takes from a Go module: ``$<env>``, else where ``toolchain/<script>
    --path-only`` finds it in the Go module cache; the test skips (naming ``what``) without one."""
    path = os.environ.get(env, "")
    if not path:
        p = subprocess.run(
            ["bash", str(ROOT / "toolchain" / script), "--path-only"],
            capture_output=True,
            text=True,
            check=False,
        )
        path = p.stdout.strip()
    if not path or not (Path(path) / "Chart.yaml").is_file():
        pytest.skip(f"no offline {what}: make toolchain-tests (toolchain/{script})")
    return Path(path)


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
