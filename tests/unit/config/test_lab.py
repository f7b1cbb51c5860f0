"""Config parsing, and Pulumi.yaml's config block kept in step with gpulab.config.lab."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpulab.config.lab import CHART_PATH_ENV, SCHEMA, ConfigError, LabConfig
from variants.minikube.settings import MinikubeSettings
from variants.registry import parse_config

ROOT = Path(__file__).resolve().parents[3]
TYPES = {"str": "string", "int": "integer", "bool": "boolean"}


def test_pulumi_yaml_declares_every_key_with_type_description_and_the_same_default() -> None:
    block = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    assert set(block) == set(SCHEMA)
    for key, (kind, default) in SCHEMA.items():
        decl = block[key]
        assert decl["type"] == TYPES[kind], key
        assert decl.get("description"), key
        assert decl["default"] == default, key


def test_defaults_are_the_chapters_lab() -> None:
    cfg = parse_config({}, env={})
    assert cfg == LabConfig(variant_settings=MinikubeSettings())
    assert cfg.cluster == "minikube" and cfg.settings(MinikubeSettings) == MinikubeSettings(4, 8192, False)
    assert cfg.operator.chart_version == "v26.7.0" and cfg.operator.chart_path is None
    assert cfg.smoke_image == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert cfg.effective_host_probe == "nvidia-smi"


def test_sim_defaults_read_the_capture_matching_the_gpu_count() -> None:
    assert parse_config({"gpu-lab:cluster": "sim"}, env={}).capture == "h200-1gpu"
    two = parse_config({"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "2"}, env={})
    assert two.capture == "h200-2gpu" and two.effective_host_probe == "capture"


def test_other_namespaces_are_ignored() -> None:
    cfg = parse_config({"kubernetes:context": "x", "gpu-lab:cpus": "8"}, env={})
    assert cfg.settings(MinikubeSettings).cpus == 8


def test_chart_path_env_override_and_its_check(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("name: gpu-operator\n")
    cfg = parse_config({}, env={CHART_PATH_ENV: str(tmp_path)})
    assert cfg.operator.chart_path == str(tmp_path)
    with pytest.raises(ConfigError, match=r"has no Chart\.yaml"):
        parse_config({}, env={CHART_PATH_ENV: str(tmp_path / "nope")})


def test_all_problems_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"gpu-lab:cpus": "1", "gpu-lab:memoryMiB": "1024", "gpu-lab:profile": "A"}, env={})
    assert len(err.value.problems) == 3
    assert "nothing was created" in str(err.value)


@pytest.mark.parametrize(
    "image",
    [
        "nvidia/cuda:12.4.1-base-ubuntu22.04",
        "nvcr.io/nvidia/cuda:13.0.2-base-ubuntu24.04",
        "nvidia/cuda@sha256:" + "a" * 64,
        "localhost:5000/cuda:12.4.1-base",
    ],
)
def test_pinned_images_accepted(image: str) -> None:
    assert parse_config({"gpu-lab:smokeImage": image}, env={}).smoke_image == image


@pytest.mark.parametrize("image", ["nvidia/cuda", "nvidia/cuda:latest", "nvidia/cuda:12.4 ; id", "$(id)"])
def test_unpinned_or_unsafe_images_rejected(image: str) -> None:
    with pytest.raises(ConfigError, match="smokeImage"):
        parse_config({"gpu-lab:smokeImage": image}, env={})


def test_sim_smoke_pod_cannot_ask_for_more_gpus_than_the_node_offers() -> None:
    with pytest.raises(ConfigError, match="smokeGpus=2 is more than the simulated node offers"):
        parse_config({"gpu-lab:cluster": "sim", "gpu-lab:smokeGpus": "2"}, env={})
    ok = parse_config({"gpu-lab:cluster": "sim", "gpu-lab:smokeGpus": "2", "gpu-lab:simGpus": "2"}, env={})
    assert ok.smoke_gpus == 2


def test_shell_characters_in_an_image_are_named_as_such() -> None:
    with pytest.raises(ConfigError, match="is not a valid image reference"):
        parse_config({"gpu-lab:smokeImage": "nvidia/cuda:12.4.1-base-ubuntu22.04;rm"}, env={})


# --- the compute check ---------------------------------------------------------------
def test_the_compute_check_is_on_by_default_with_nvidias_vectoradd_sample() -> None:
    cfg = parse_config({}, env={})
    assert cfg.compute_check is True
    assert cfg.compute_image == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    assert parse_config({"gpu-lab:computeCheck": "false"}, env={}).compute_check is False


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        ("nvcr.io/nvidia/k8s/cuda-sample:latest", "is not pinned"),
        ("nvcr.io/nvidia/k8s/cuda-sample", "is not pinned"),
        ("cuda sample", "is not a valid image reference"),
    ],
)
def test_the_compute_image_is_validated_like_the_smoke_image(image: str, needle: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"gpu-lab:computeImage": image}, env={})
    assert f"gpu-lab:computeImage={image!r} {needle}" in str(err.value)
    digest = "nvcr.io/nvidia/k8s/cuda-sample@sha256:" + "a" * 64
    assert parse_config({"gpu-lab:computeImage": digest}, env={}).compute_image == digest
