"""``device-plugin-chart``: NVIDIA's device plugin chart pinned, with GFD, outside default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from policy import validators

from ..harness import check_resource, release


def _plugin(**over: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "nvidia-device-plugin",
        "chart": "nvidia-device-plugin",
        "version": "0.20.0",
        "namespace": "nvidia-device-plugin",
        "repositoryOpts": {"repo": "https://nvidia.github.io/k8s-device-plugin"},
        "values": {"gfd": {"enabled": True}, "nfd": {"enabled": True}},
    }
    return release(**{**props, **over})


def test_the_labs_release_passes() -> None:
    assert check_resource("device-plugin-chart", validators.T_RELEASE, _plugin()).passed


@pytest.mark.parametrize(
    ("over", "said"),
    [
        ({"version": ""}, "version ''"),
        ({"version": ">=0.19"}, "version '>=0.19'"),
        ({"values": {"gfd": {"enabled": False}}}, "gfd.enabled=false"),
        ({"values": {}}, "gfd.enabled=unset"),
        ({"namespace": "default"}, "namespace 'default'"),
    ],
)
def test_each_gap_is_named(over: dict[str, Any], said: str) -> None:
    o = check_resource("device-plugin-chart", validators.T_RELEASE, _plugin(**over))
    assert not o.passed and said in o.text and "first fix:" in o.text


def test_a_local_chart_is_read_and_the_operators_release_is_not_its_business(tmp_path: Path) -> None:
    chart = tmp_path / "nvidia-device-plugin"
    chart.mkdir()
    (chart / "Chart.yaml").write_text('name: nvidia-device-plugin\nversion: "0.19.0"\n')
    local = _plugin(name="nvidia-device-plugin", chart=str(chart), version=None, repositoryOpts=None)
    assert check_resource("device-plugin-chart", validators.T_RELEASE, local).passed
    (chart / "Chart.yaml").write_text('name: nvidia-device-plugin\nversion: "0.19"\n')
    o = check_resource("device-plugin-chart", validators.T_RELEASE, local)
    assert "Chart.yaml version 0.19)" in o.text
    assert check_resource("device-plugin-chart", validators.T_RELEASE, release()).text == ""
