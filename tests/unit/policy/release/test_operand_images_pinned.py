"""``operand-images-pinned``."""

from __future__ import annotations

from typing import Any

from policy import validators

from ..harness import check_resource, release

ITEM = "operand-images-pinned"
DIGEST = "sha256:" + "c" * 64


def with_images(**sections: dict[str, Any]) -> dict[str, Any]:
    return release(values={"driver": {"enabled": False}, **sections})


def test_chart_defaults_and_pinned_images_pass() -> None:
    assert check_resource(ITEM, validators.T_RELEASE, release()).passed
    o = check_resource(
        ITEM,
        validators.T_RELEASE,
        with_images(
            devicePlugin={
                "enabled": True,
                "repository": "nvcr.io/nvidia",
                "image": "k8s-device-plugin",
                "version": "v0.20.0",
            },
            validator={"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": DIGEST},
        ),
    )
    assert o.passed, o.text


def test_latest_or_no_version_violates_naming_the_config_key() -> None:
    o = check_resource(
        ITEM,
        validators.T_RELEASE,
        with_images(
            toolkit={"repository": "nvcr.io/nvidia/k8s", "image": "container-toolkit", "version": "latest"},
            dcgmExporter={"repository": "nvcr.io/nvidia/k8s", "image": "dcgm-exporter"},
        ),
    )
    assert len(o.violations) == 1
    assert "toolkit: nvcr.io/nvidia/k8s/container-toolkit:latest" in o.text
    assert "dcgmExporter: nvcr.io/nvidia/k8s/dcgm-exporter:(no version)" in o.text
    assert "pin toolkitImage, dcgmExporterImage" in o.text and "devicePlugin: chart default" in o.text
