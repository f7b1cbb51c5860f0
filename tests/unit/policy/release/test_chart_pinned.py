"""``gpu-operator-chart-pinned``."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy import validators

from ..harness import (
    check_resource,
    release,
)


# --- gpu-operator-chart-pinned ------------------------------------------------------
def test_chart_pinned_passes_on_an_exact_version() -> None:
    assert check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, release()).passed


@pytest.mark.parametrize("version", [None, "", ">=26.0.0", "26.x", "^26.7.0"])
def test_chart_pinned_violates_on_a_range_or_no_version(version: str | None) -> None:
    o = check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, release(version=version))
    assert "[gpu-operator-chart-pinned] observed:" in o.text and "first fix:" in o.text


def test_chart_pinned_checks_the_configured_version_and_local_charts(tmp_path: Path) -> None:
    o = check_resource(
        "gpu-operator-chart-pinned", validators.T_RELEASE, release(), {"chartVersion": "v25.10.1"}
    )
    assert "v25.10.1" in o.text
    chart = tmp_path / "gpu-operator"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("name: gpu-operator\nversion: v26.7.0\n")
    local = release(chart=str(chart), version=None, repositoryOpts=None)
    assert check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, local).passed
    o = check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, local, {"chartVersion": "v25.10.1"})
    assert "Chart.yaml version v26.7.0" in o.text
