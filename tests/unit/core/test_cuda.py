"""Tests for gpulab.core.cuda: driver minimums, version parsing and nvidia/cuda tag choice."""

from __future__ import annotations

import pytest

from gpulab.core import cuda
from gpulab.core.cuda import UnknownCudaVersionError

# CUDA Toolkit release notes, table 3, as given in shared/FIELD-NOTES.md.
RELEASE_NOTES_TABLE = {
    "13.0": "580.65.06",
    "12.9": "575.51.03",
    "12.8": "570.26",
    "12.6": "560.28.03",
    "12.5": "555.42.02",
    "12.4": "550.54.14",
    "12.3": "545.23.06",
    "12.2": "535.54.03",
    "12.1": "530.30.02",
    "12.0": "525.60.13",
    "11.8": "520.61.05",
}


def test_min_linux_driver_matches_release_notes_and_has_no_unreleased_rows() -> None:
    assert dict(cuda.MIN_LINUX_DRIVER) == RELEASE_NOTES_TABLE
    assert "12.7" not in cuda.MIN_LINUX_DRIVER


def test_min_linux_driver_is_read_only() -> None:
    with pytest.raises(TypeError):
        cuda.MIN_LINUX_DRIVER["12.7"] = "1.0"  # type: ignore[index]


# --- parse_version --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("580.159.04", (580, 159, 4)), ("570.26", (570, 26)), (" 384.90\n", (384, 90)), ("13", (13,))],
)
def test_parse_version(text: str, expected: tuple[int, ...]) -> None:
    assert cuda.parse_version(text) == expected


@pytest.mark.parametrize("junk", ["", "abc", "580..1", "v580.1", "580.1-beta", "580.1."])
def test_parse_version_rejects_junk_naming_it(junk: str) -> None:
    with pytest.raises(ValueError) as err:
        cuda.parse_version(junk)
    assert repr(junk) in str(err.value)


# --- min_driver_for / driver_supports -------------------------------------------------


def test_min_driver_for_known_and_patch_level() -> None:
    assert cuda.min_driver_for("12.4") == "550.54.14"
    assert cuda.min_driver_for("12.4.1") == "550.54.14"


def test_min_driver_for_unknown_names_known_versions() -> None:
    with pytest.raises(UnknownCudaVersionError) as err:
        cuda.min_driver_for("12.7")
    message = str(err.value)
    assert isinstance(err.value, KeyError)
    assert "'12.7'" in message
    assert "11.8, 12.0, 12.1, 12.2, 12.3, 12.4, 12.5, 12.6, 12.8, 12.9, 13.0" in message
    assert not message.startswith('"')  # not KeyError's repr() of the message


def test_min_driver_for_not_a_version() -> None:
    with pytest.raises(ValueError, match="'twelve'"):
        cuda.min_driver_for("twelve")


def test_driver_supports_exact_minimum() -> None:
    assert cuda.driver_supports("580.65.06", "13.0")
    assert cuda.driver_supports("570.26", "12.8")


def test_driver_supports_just_below_minimum() -> None:
    assert not cuda.driver_supports("580.65.05", "13.0")
    assert not cuda.driver_supports("570.25.99", "12.8")


def test_driver_supports_compares_numerically_and_pads() -> None:
    # 570.124.06 > 570.26 numerically (string compare would say otherwise).
    assert cuda.driver_supports("570.124.06", "12.8")
    assert cuda.driver_supports("570.26.0", "12.8")
    assert cuda.driver_supports("580.159.04", "13.0")
    assert not cuda.driver_supports("575.51.03", "13.0")


def test_driver_supports_unknown_cuda_raises() -> None:
    with pytest.raises(UnknownCudaVersionError):
        cuda.driver_supports("580.159.04", "13.1")


# --- image_cuda_version ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nvidia/cuda:12.4.1-base-ubuntu22.04", "12.4"),
        ("nvcr.io/nvidia/cuda:13.1.0-runtime-ubuntu24.04", "13.1"),
        ("docker.io/nvidia/cuda:11.8.0-devel-ubuntu20.04", "11.8"),
        ("nvidia/cuda:12.10.0-base-ubuntu24.04", "12.10"),
        ("localhost:5000/nvidia/cuda:12.6.3-base-ubuntu22.04", "12.6"),
        ("nvidia/cuda:12.4.1-base-ubuntu22.04@sha256:" + "a" * 64, "12.4"),
        ("nvidia/cuda@sha256:" + "a" * 64, None),
        ("nvidia/cuda", None),
        ("nvidia/cuda:latest", None),
        ("ubuntu:22.04", None),
        ("pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime", None),
        # NVIDIA's CUDA samples carry their CUDA after "-cuda" (the compute check's image).
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", "12.5"),
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04", "11.7"),
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd", None),
        ("nvcr.io/nvidia/k8s/cuda-sample@sha256:" + "a" * 64, None),
        ("example.com/other/cuda-samples:vectoradd-cuda12.5.0", None),
        ("example.com/notnvidia/cuda:12.4.1-base-ubuntu22.04", None),
    ],
)
def test_image_cuda_version(image: str, expected: str | None) -> None:
    assert cuda.image_cuda_version(image) == expected


# --- cuda_fits ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image_cuda", "max_cuda", "fits"),
    [
        ("12.4", "13.0", True),
        ("13.0", "13.0", True),
        ("13.0.2", "13.0", True),
        ("13.1", "13.0", False),
        ("12.10", "12.9", False),
        ("12.9", "12.10", True),
    ],
)
def test_cuda_fits(image_cuda: str, max_cuda: str, fits: bool) -> None:
    assert cuda.cuda_fits(image_cuda, max_cuda) is fits


def test_cuda_fits_rejects_non_versions() -> None:
    with pytest.raises(ValueError, match="'N/A'"):
        cuda.cuda_fits("12.4", "N/A")


# --- newest_fitting_tag ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "max_cuda", "expected"),
    [
        ("nvidia/cuda:13.1.0-base-ubuntu22.04", "12.4", "nvidia/cuda:12.4.1-base-ubuntu22.04"),
        ("nvidia/cuda:13.1.0-base-ubuntu24.04", "13.0", "nvidia/cuda:13.0.2-base-ubuntu24.04"),
        # 12.7 was never released: the newest fitting release is 12.6.3.
        (
            "nvidia/cuda:12.8.1-runtime-ubuntu22.04",
            "12.7",
            "nvidia/cuda:12.6.3-runtime-ubuntu22.04",
        ),
        (
            "nvcr.io/nvidia/cuda:12.9.1-devel-ubuntu22.04",
            "12.8",
            "nvcr.io/nvidia/cuda:12.8.1-devel-ubuntu22.04",
        ),
        ("nvidia/cuda:12.4.1", "12.2", "nvidia/cuda:12.2.2"),
        (
            "nvidia/cuda:13.0.2-base-ubuntu24.04@sha256:" + "b" * 64,
            "12.9",
            "nvidia/cuda:12.9.1-base-ubuntu24.04",
        ),
        ("nvidia/cuda:12.4.1-base-ubuntu22.04", "14.2", "nvidia/cuda:13.0.2-base-ubuntu22.04"),
    ],
)
def test_newest_fitting_tag(image: str, max_cuda: str, expected: str) -> None:
    assert cuda.newest_fitting_tag(image, max_cuda) == expected


@pytest.mark.parametrize(
    ("image", "max_cuda"),
    [
        ("nvidia/cuda:12.4.1-base-ubuntu22.04", "11.7"),  # older than every known release
        ("nvidia/cuda@sha256:" + "c" * 64, "13.0"),
        ("ubuntu:22.04", "13.0"),
        ("nvidia/cuda:latest", "13.0"),
    ],
)
def test_newest_fitting_tag_none(image: str, max_cuda: str) -> None:
    assert cuda.newest_fitting_tag(image, max_cuda) is None


def test_newest_fitting_tag_result_fits() -> None:
    for max_cuda in cuda.MIN_LINUX_DRIVER:
        tag = cuda.newest_fitting_tag("nvidia/cuda:13.0.2-base-ubuntu24.04", max_cuda)
        assert tag is not None
        image_cuda = cuda.image_cuda_version(tag)
        assert image_cuda == max_cuda  # every table row has a release of its own


@pytest.mark.parametrize(
    ("image", "max_cuda", "expected"),
    [
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", "13.0", "vectoradd-cuda12.5.0"),
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", "12.4", "vectoradd-cuda11.7.1-ubuntu20.04"),
        ("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0", "11.0", None),
        ("nvcr.io/nvidia/k8s/cuda-sample:nbody-cuda12.5.0", "13.0", None),
    ],
)
def test_newest_fitting_sample_tag(image: str, max_cuda: str, expected: str | None) -> None:
    found = cuda.newest_fitting_tag(image, max_cuda)
    assert found == (f"nvcr.io/nvidia/k8s/cuda-sample:{expected}" if expected else None)
