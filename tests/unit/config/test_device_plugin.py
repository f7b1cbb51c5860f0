"""gpulab.config.device_plugin: NVIDIA's device plugin chart as config gives it (gpuStack
device-plugin): version, repository, local chart, the images split as the chart joins them
(``repository:tag``), runtimeClass; every bad value named before anything is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.config import device_plugin
from gpulab.config.lab import SCHEMA, ConfigError
from variants.registry import parse_config


def _get(values: dict[str, object]):  # type: ignore[no-untyped-def]
    return lambda k: values.get(k, SCHEMA[k][1])


def test_defaults_are_the_newest_release_from_nvidias_repository() -> None:
    problems: list[str] = []
    got = device_plugin.parse(_get({}), problems, {}, installs=True)
    assert not problems
    assert got == device_plugin.DevicePluginChart() and got.version == "0.20.0"
    assert got.repo == "https://nvidia.github.io/k8s-device-plugin" and got.source == got.repo


def test_a_tag_and_a_tag_with_digest_are_split_as_the_chart_joins_them() -> None:
    problems: list[str] = []
    digest = "sha256:" + "a" * 64
    got = device_plugin.parse(
        _get(
            {
                "devicePluginImage": "gpulab.local/k8s-device-plugin:v0.19.0",
                "nfdImage": f"registry.k8s.io/nfd/node-feature-discovery:v0.17.3@{digest}",
            }
        ),
        problems,
        {},
        installs=True,
    )
    assert not problems
    assert got.image == device_plugin.ImageRef("gpulab.local/k8s-device-plugin", "v0.19.0")
    assert got.nfd_image == device_plugin.ImageRef(
        "registry.k8s.io/nfd/node-feature-discovery", f"v0.17.3@{digest}"
    )
    # The chart's fullimage helper writes repository:tag: a reference again.
    assert f"{got.nfd_image.repository}:{got.nfd_image.tag}" == (
        f"registry.k8s.io/nfd/node-feature-discovery:v0.17.3@{digest}"
    )


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("devicePluginChartVersion", "v0.20.0", "without a leading v"),
        ("devicePluginChartRepo", "http://x", "must be an https:// or oci:// URL"),
        ("devicePluginImage", "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "b" * 64, "a digest alone"),
        ("devicePluginImage", "nvcr.io/nvidia/k8s-device-plugin:latest", "is not pinned"),
        ("nfdImage", "nfd; rm -rf /", "is not a full image reference"),
        ("runtimeClass", "Nvidia Runtime", "is not a RuntimeClass name"),
        ("devicePluginChartPath", "/nonexistent/chart", "has no Chart.yaml"),
    ],
)
def test_bad_values_are_named(key: str, value: str, said: str) -> None:
    problems: list[str] = []
    device_plugin.parse(_get({key: value}), problems, {}, installs=True)
    assert any(said in p for p in problems), problems


def test_the_chart_images_and_path_are_read_only_for_the_device_plugin_stack() -> None:
    """devicePluginImage is the operator's operand image otherwise (a digest alone is fine
    there), and an environment's chart path is not checked for a lab that installs no such chart."""
    problems: list[str] = []
    got = device_plugin.parse(
        _get({"devicePluginImage": "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "b" * 64}),
        problems,
        {device_plugin.CHART_PATH_ENV: "/nonexistent"},
        installs=False,
    )
    assert not problems and got.image is None and got.path is None
    device_plugin.parse(_get({"nfdImage": "a/b:1"}), problems, {}, installs=False)
    assert problems == ["gpu-lab:nfdImage applies to gpuStack=device-plugin only (the NFD of its chart)"]


def test_a_local_chart_exports_its_own_version(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text('apiVersion: v2\nname: nvidia-device-plugin\nversion: "0.19.0"\n')
    problems: list[str] = []
    got = device_plugin.parse(
        _get({}), problems, {device_plugin.CHART_PATH_ENV: str(tmp_path)}, installs=True
    )
    assert not problems and got.path == str(tmp_path) and got.source == f"local:{tmp_path}"
    assert got.local_version() == "0.19.0"


def test_runtime_class_overrides_the_variants_choice() -> None:
    assert parse_config({"cluster": "kind"}, {}).smoke_runtime_class == "nvidia"
    assert parse_config({"cluster": "minikube"}, {}).smoke_runtime_class is None
    assert parse_config({"cluster": "minikube", "runtimeClass": "nvidia-cdi"}, {}).smoke_runtime_class == (
        "nvidia-cdi"
    )
    with pytest.raises(ConfigError):
        parse_config({"cluster": "sim", "runtimeClass": "-bad"}, {})
