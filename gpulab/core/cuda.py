"""CUDA and driver compatibility: which driver a CUDA version needs, which image tag fits.

Pure lookups over two small tables, no I/O:

* :data:`MIN_LINUX_DRIVER`, the minimum Linux x86_64 driver per CUDA minor release;
* :data:`NVIDIA_CUDA_RELEASES`, the ``nvidia/cuda`` image releases this lab may pick;
* :data:`CUDA_SAMPLE_TAGS`, the tags of NVIDIA's CUDA sample images (``cuda-sample``) this lab
  may pick for the compute check.

Versions are strings: CUDA as ``"X.Y"`` (``"12.4"``; ``"12.4.1"`` is accepted where noted and
read as ``"12.4"``), drivers as dotted integers (``"580.159.04"``). Comparisons are numeric
per component, so ``"12.10"`` is newer than ``"12.9"``.

Why it matters: the NVIDIA container runtime compares an image's ``NVIDIA_REQUIRE_CUDA``
(``cuda>=X.Y``) with the CUDA version the host driver supports (the ``CUDA Version`` in the
``nvidia-smi`` header) and refuses to start the container with ``unsatisfied condition:
cuda>=X.Y`` when the image is newer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from gpulab.core.errors import GpuLabError

__all__ = [
    "CUDA_SAMPLE_TAGS",
    "MIN_LINUX_DRIVER",
    "NVIDIA_CUDA_RELEASES",
    "UnknownCudaVersionError",
    "cuda_fits",
    "driver_supports",
    "image_cuda_version",
    "min_driver_for",
    "newest_fitting_tag",
    "parse_version",
]

#: CUDA ``"X.Y"`` -> minimum Linux x86_64 driver version for that toolkit's GA release.
#:
#: Source: NVIDIA CUDA Toolkit Release Notes, table 3 "CUDA Toolkit and Corresponding Driver
#: Versions" (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/), column "Toolkit
#: Driver Version, Linux x86_64", GA row of each minor release; transcribed into
#: ``shared/FIELD-NOTES.md`` and copied here on 2026-11-29. Only versions the notes list are
#: present: CUDA 12.7 was never released. Add a row when a newer toolkit is needed, from the
#: same table.
MIN_LINUX_DRIVER: Final[Mapping[str, str]] = MappingProxyType(
    {
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
)

#: ``nvidia/cuda`` image releases (``X.Y.Z``) known to this lab: the last published patch of
#: each CUDA minor, from the tag list of ``docker.io/nvidia/cuda`` (also served as
#: ``nvcr.io/nvidia/cuda``). Flavours (``base``/``runtime``/``devel``, OS) vary per release;
#: :func:`newest_fitting_tag` does not check that a flavour exists for the release it picks.
NVIDIA_CUDA_RELEASES: Final[tuple[str, ...]] = (
    "11.8.0",
    "12.0.1",
    "12.1.1",
    "12.2.2",
    "12.3.2",
    "12.4.1",
    "12.5.1",
    "12.6.3",
    "12.8.1",
    "12.9.1",
    "13.0.2",
)

#: ``nvcr.io/nvidia/k8s/cuda-sample`` tags per sample, with the CUDA release each is built for:
#: the tags NVIDIA's own pages run (GPU Operator "Verification: Running Sample GPU
#: Applications": ``vectoradd-cuda12.5.0``; its older releases and the Kata/confidential
#: containers pages: ``vectoradd-cuda11.7.1-ubuntu20.04``, ``vectoradd-cuda12.5.0-ubuntu22.04``).
#: The NGC tag list was not reachable from this workplace; add a row when NVIDIA publishes a
#: newer sample, from its tag list.
CUDA_SAMPLE_TAGS: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        "vectoradd": MappingProxyType(
            {
                "11.7.1": "vectoradd-cuda11.7.1-ubuntu20.04",
                "12.5.0": "vectoradd-cuda12.5.0",
            }
        ),
    }
)

_VERSION_RE: Final = re.compile(r"^\d+(?:\.\d+)*$")
_CUDA_RE: Final = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$")
_CUDA_TAG_RE: Final = re.compile(r"^(?P<version>(?P<xy>\d+\.\d+)(?:\.\d+)?)(?P<flavour>-.*)?$")
_CUDA_REPOSITORY: Final = "nvidia/cuda"
#: NVIDIA's CUDA sample images: ``<sample>-cuda<X.Y.Z>[-<os>]`` (``vectoradd-cuda12.5.0``).
_SAMPLE_REPOSITORY: Final = "nvidia/k8s/cuda-sample"
_SAMPLE_TAG_RE: Final = re.compile(
    r"^(?P<sample>[A-Za-z][A-Za-z0-9]*)-cuda(?P<version>(?P<xy>\d+\.\d+)(?:\.\d+)?)(?P<flavour>-.*)?$"
)


class UnknownCudaVersionError(GpuLabError, KeyError):
    """A CUDA version missing from :data:`MIN_LINUX_DRIVER`; the message lists known ones."""

    def __str__(self) -> str:
        # KeyError's own __str__ repr()s the message, which would print it in quotes.
        return str(self.args[0]) if self.args else ""


def parse_version(v: str) -> tuple[int, ...]:
    """Split a dotted version into integers: ``"580.159.04"`` -> ``(580, 159, 4)``.

    Surrounding whitespace is ignored. Raises ``ValueError`` naming the value when it is not
    dotted decimal integers (``""``, ``"abc"``, ``"580..1"``, ``"v580"``).
    """
    stripped = v.strip()
    if not _VERSION_RE.match(stripped):
        raise ValueError(f"not a dotted numeric version: {v!r}")
    return tuple(int(part) for part in stripped.split("."))


def _compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    # Pad with zeros so "570.26" and "570.26.0" compare equal.
    width = max(len(a), len(b))
    pa = a + (0,) * (width - len(a))
    pb = b + (0,) * (width - len(b))
    return (pa > pb) - (pa < pb)


def _cuda_xy(cuda: str) -> tuple[int, int]:
    m = _CUDA_RE.match(cuda.strip())
    if m is None:
        raise ValueError(f"not a CUDA version (X.Y or X.Y.Z): {cuda!r}")
    return int(m.group(1)), int(m.group(2))


def _xy_key(cuda: str) -> str:
    major, minor = _cuda_xy(cuda)
    return f"{major}.{minor}"


def min_driver_for(cuda: str) -> str:
    """Return the minimum Linux driver for CUDA ``"X.Y"`` (``"X.Y.Z"`` is read as ``"X.Y"``).

    ``min_driver_for("12.4")`` -> ``"550.54.14"``. Raises :class:`UnknownCudaVersionError`
    (a ``KeyError``) naming the known versions when the version is not in
    :data:`MIN_LINUX_DRIVER`, and ``ValueError`` when it is not a version at all.
    """
    key = _xy_key(cuda)
    try:
        return MIN_LINUX_DRIVER[key]
    except KeyError:
        known = ", ".join(sorted(MIN_LINUX_DRIVER, key=_cuda_xy))
        raise UnknownCudaVersionError(
            f"no minimum driver known for CUDA {cuda!r}; known CUDA versions: {known}"
        ) from None


def driver_supports(driver: str, cuda: str) -> bool:
    """True when Linux driver ``driver`` is at least the minimum for CUDA ``cuda``.

    A driver exactly at the minimum supports it. Raises like :func:`parse_version` and
    :func:`min_driver_for` (an unknown CUDA version is an error, not ``False``).
    """
    return _compare(parse_version(driver), parse_version(min_driver_for(cuda))) >= 0


def _split_image(image: str) -> tuple[str, str | None]:
    """Split ``[registry/]repo[:tag][@digest]`` into ``(repository, tag | None)``."""
    name = image.strip().split("@", 1)[0]
    last_slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > last_slash:
        return name[:colon], name[colon + 1 :]
    return name, None


def _is_cuda_repository(repository: str) -> bool:
    # "nvidia/cuda", "docker.io/nvidia/cuda", "nvcr.io/nvidia/cuda", a mirror's ".../nvidia/cuda".
    return repository == _CUDA_REPOSITORY or repository.endswith("/" + _CUDA_REPOSITORY)


def _is_sample_repository(repository: str) -> bool:
    # "nvcr.io/nvidia/k8s/cuda-sample", or a mirror's ".../nvidia/k8s/cuda-sample".
    return repository == _SAMPLE_REPOSITORY or repository.endswith("/" + _SAMPLE_REPOSITORY)


def image_cuda_version(image: str) -> str | None:
    """Return the CUDA ``"X.Y"`` an ``nvidia/cuda`` image reference carries in its tag.

    ``"nvidia/cuda:12.4.1-base-ubuntu22.04"`` -> ``"12.4"``;
    ``"nvcr.io/nvidia/cuda:13.1.0-runtime-ubuntu24.04"`` -> ``"13.1"``; NVIDIA's CUDA sample
    images too: ``"nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"`` -> ``"12.5"``.
    Returns ``None`` for an image pinned by digest only, an untagged reference, a tag that
    does not start with ``X.Y`` (``<sample>-cudaX.Y`` for samples), or an image outside an
    ``nvidia/cuda`` or ``nvidia/k8s/cuda-sample`` repository (other images, such as framework
    images with ``cuda12.1`` inside their tag, are not read).
    """
    repository, tag = _split_image(image)
    if tag is not None and _is_sample_repository(repository):
        sample = _SAMPLE_TAG_RE.match(tag)
        return _xy_key(sample.group("xy")) if sample else None
    if tag is None or not _is_cuda_repository(repository):
        return None
    m = _CUDA_TAG_RE.match(tag)
    if m is None:
        return None
    return _xy_key(m.group("xy"))


def cuda_fits(image_cuda: str, max_cuda: str) -> bool:
    """True when CUDA ``image_cuda`` is at most ``max_cuda`` (numeric X.Y compare).

    ``max_cuda`` is the newest CUDA the driver supports (``nvidia-smi`` header). Patch levels
    are ignored: ``cuda_fits("13.0.2", "13.0")`` is ``True``; ``cuda_fits("12.10", "12.9")``
    is ``False``. Raises ``ValueError`` when either is not ``X.Y``/``X.Y.Z``.
    """
    return _cuda_xy(image_cuda) <= _cuda_xy(max_cuda)


def newest_fitting_tag(image: str, max_cuda: str) -> str | None:
    """Return ``image`` retagged to the newest known CUDA release that fits ``max_cuda``.

    Picks the newest ``X.Y.Z`` in :data:`NVIDIA_CUDA_RELEASES` with ``X.Y <= max_cuda`` and
    keeps the repository and flavour suffix; a digest is dropped, since it pins the old tag's
    content. ``("nvidia/cuda:13.1.0-base-ubuntu22.04", "12.4")`` ->
    ``"nvidia/cuda:12.4.1-base-ubuntu22.04"``.

    A CUDA sample image (``cuda-sample:vectoradd-cuda12.5.0``) gets the newest tag of the same
    sample in :data:`CUDA_SAMPLE_TAGS` that fits, as listed there (flavour included).

    Returns ``None`` when the image is not a tagged ``nvidia/cuda`` or known sample image (see
    :func:`image_cuda_version`) or no known release fits. Raises ``ValueError`` when
    ``max_cuda`` is not a version. Whether the registry has that flavour for the chosen
    ``nvidia/cuda`` release is not checked.
    """
    repository, tag = _split_image(image)
    if tag is not None and _is_sample_repository(repository):
        return _newest_sample_tag(repository, tag, max_cuda)
    if tag is None or not _is_cuda_repository(repository):
        return None
    m = _CUDA_TAG_RE.match(tag)
    if m is None:
        return None
    limit = _cuda_xy(max_cuda)
    fitting = [r for r in NVIDIA_CUDA_RELEASES if _cuda_xy(r) <= limit]
    if not fitting:
        return None
    newest = max(fitting, key=parse_version)
    return f"{repository}:{newest}{m.group('flavour') or ''}"


def _newest_sample_tag(repository: str, tag: str, max_cuda: str) -> str | None:
    """``repository:<tag>`` of the newest :data:`CUDA_SAMPLE_TAGS` entry of ``tag``'s sample
    whose CUDA fits ``max_cuda``; None for an unknown sample or when none fits."""
    m = _SAMPLE_TAG_RE.match(tag)
    limit = _cuda_xy(max_cuda)
    known = CUDA_SAMPLE_TAGS.get(m.group("sample").lower()) if m else None
    fitting = [r for r in (known or {}) if _cuda_xy(r) <= limit]
    if not known or not fitting:
        return None
    return f"{repository}:{known[max(fitting, key=parse_version)]}"
