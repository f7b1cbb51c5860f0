"""components.device_plugin.helm_values: the values the lab sets on NVIDIA's nvidia-device-plugin
chart (each a key of deployments/helm/nvidia-device-plugin/values.yaml at v0.19.0 and v0.20.0:
tests/contract/test_device_plugin_chart.py checks them against the chart itself)."""

from __future__ import annotations

import yaml

from components.device_plugin import helm_values
from gpulab.config.device_plugin import DevicePluginChart, ImageRef
from gpulab.config.lab import OperatorConfig


def test_gfd_and_nfd_on_and_nothing_else_by_default() -> None:
    got = helm_values(DevicePluginChart(), OperatorConfig(), None, None)
    assert got == {"gfd": {"enabled": True}, "nfd": {"enabled": True}, "migStrategy": "none"}


def test_time_slicing_goes_through_the_charts_config_map() -> None:
    op = OperatorConfig(time_slicing_replicas=4, time_slicing_fail_requests_greater_than_one=True)
    got = helm_values(DevicePluginChart(), op, "nvidia", "envvar")
    assert got["config"]["default"] == "any"
    sharing = yaml.safe_load(got["config"]["map"]["any"])
    assert sharing == {
        "version": "v1",
        "sharing": {
            "timeSlicing": {
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert got["runtimeClassName"] == "nvidia" and got["deviceListStrategy"] == "envvar"


def test_images_and_an_existing_config_map() -> None:
    chart = DevicePluginChart(
        image=ImageRef("gpulab.local/k8s-device-plugin", "v0.19.0"),
        nfd_image=ImageRef("gpulab.local/node-feature-discovery", "v0.17.3"),
    )
    got = helm_values(chart, OperatorConfig(nfd=True, sharing_config_map=("team-dp", "a100")), None, None)
    assert got["image"] == {"repository": "gpulab.local/k8s-device-plugin", "tag": "v0.19.0"}
    assert got["nfd"] == {
        "enabled": True,
        "image": {"repository": "gpulab.local/node-feature-discovery", "tag": "v0.17.3"},
    }
    assert got["config"] == {"name": "team-dp", "default": "a100"}
