"""Operand images pinned in config, split the way the chart takes them."""

from __future__ import annotations

import pytest

from gpulab.config import operand_images
from gpulab.config.lab import ConfigError
from variants.registry import parse_config

DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("ref", "repository", "image", "version"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "nvcr.io/nvidia", "k8s-device-plugin", "v0.20.0"),
        (
            "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0",
            "nvcr.io/nvidia/k8s",
            "container-toolkit",
            "v1.20.0",
        ),
        (f"nvcr.io/nvidia/k8s/dcgm-exporter@{DIGEST}", "nvcr.io/nvidia/k8s", "dcgm-exporter", DIGEST),
        # A digest wins over a tag (the operator joins repository/image@version).
        (f"nvcr.io/nvidia/gpu-operator:v26.7.0@{DIGEST}", "nvcr.io/nvidia", "gpu-operator", DIGEST),
        (
            "localhost:5000/mirror/k8s-device-plugin:v0.20.0",
            "localhost:5000/mirror",
            "k8s-device-plugin",
            "v0.20.0",
        ),
    ],
)
def test_refs_split_into_the_charts_three_values(ref: str, repository: str, image: str, version: str) -> None:
    pinned = operand_images.parse_ref("devicePlugin", ref)
    assert pinned.helm_values() == {"repository": repository, "image": image, "version": version}


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("nvcr.io/nvidia/k8s-device-plugin:latest", "not pinned"),
        ("nvcr.io/nvidia/k8s-device-plugin", "not pinned"),
        ("k8s-device-plugin:v0.20.0", "not a full image reference"),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.20.0; rm -rf ~", "not a full image reference"),
        ("nvcr.io/nvidia/K8s-Device-Plugin:v1", "not a full image reference"),
    ],
)
def test_unpinned_or_partial_refs_are_refused(ref: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        operand_images.parse_ref("devicePlugin", ref)


def test_config_keys_map_to_the_operands_and_the_export_lists_every_operand() -> None:
    cfg = parse_config(
        {
            "gpu-lab:devicePluginImage": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
            "gpu-lab:validatorImage": "",
        },
        env={},
    )
    (pinned,) = cfg.operator.operand_images
    assert pinned.operand == "devicePlugin" and pinned.version == "v0.20.0"
    assert operand_images.exported(cfg.operator.operand_images) == {
        "devicePlugin": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
        "toolkit": None,
        "dcgmExporter": None,
        "validator": None,
    }


def test_every_bad_operand_image_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(
            {
                "gpu-lab:toolkitImage": "nvcr.io/nvidia/k8s/container-toolkit:latest",
                "gpu-lab:dcgmExporterImage": "x",
            },
            env={},
        )
    assert len(err.value.problems) == 2
    assert any(p.startswith("gpu-lab:toolkitImage=") and "not pinned" in p for p in err.value.problems)
