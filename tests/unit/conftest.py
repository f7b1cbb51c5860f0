"""Unit-test fixtures: no network (the chart repository check is tested on its own) and a
clean Pulumi runtime around every test; for the program tests under mocks (their modules say
``pytestmark = pytest.mark.usefixtures("no_host_tools")``) no host checks, and ``chart``, a
stand-in chart directory; ``sim`` and ``real``, the saved outputs of a simulated and of a real
lab (tests/unit/samples.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import program.edge
import variants.base
import variants.minikube.host
from tests.unit.samples import load

#: The real check, kept before the autouse fixture replaces it (tests/unit/program/test_chart_preflight.py).
real_chart_findings = program.edge.chart_findings


@pytest.fixture(autouse=True)
def no_chart_repository_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program.edge, "chart_findings", lambda repo, version: [])


@pytest.fixture(autouse=True)
def restore_runtime() -> Iterator[None]:
    """Save and restore the Pulumi runtime's ambient settings around each test (mocks)."""
    from pulumi.runtime import config as rconfig
    from pulumi.runtime import settings as rsettings

    saved = dict(rsettings.SETTINGS.__dict__)
    cfg_token = rconfig.CONFIG.set({})
    root_token = rsettings.ROOT.set(None)
    yield
    rsettings.SETTINGS.__dict__.update(saved)
    rconfig.CONFIG.reset(cfg_token)
    rsettings.ROOT.reset(root_token)


@pytest.fixture
def no_host_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine has neither minikube nor a GPU: the host checks are tested elsewhere."""
    monkeypatch.setattr(variants.base, "missing_tools", lambda spec, *_: [])
    monkeypatch.delenv("GPULAB_CHART_PATH", raising=False)
    monkeypatch.setattr(variants.minikube.host, "minikube_host_findings", lambda cfg: [])


@pytest.fixture
def chart(tmp_path: Path) -> str:
    """A directory that passes for the gpu-operator chart (its Chart.yaml only)."""
    (tmp_path / "Chart.yaml").write_text("name: gpu-operator\nversion: v26.7.0\n")
    return str(tmp_path)


@pytest.fixture
def sim() -> dict[str, Any]:
    """The saved outputs of the simulated one-GPU lab."""
    return load("sim-h200-1gpu.json")


@pytest.fixture
def real() -> dict[str, Any]:
    """The saved outputs of a minikube lab on one H200."""
    return load("minikube-h200-1gpu.json")
