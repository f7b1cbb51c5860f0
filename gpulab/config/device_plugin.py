"""The config keys of NVIDIA's device plugin chart installed alone (``gpuStack: device-plugin``):
:class:`DevicePluginChart`, one field of :class:`gpulab.config.lab.LabConfig`.

The lab installs NVIDIA's ``nvidia-device-plugin`` chart (NVIDIA/k8s-device-plugin,
``deployments/helm/nvidia-device-plugin``) as a Helm release, with GPU Feature Discovery on
(``gfd.enabled``) and so the chart's Node Feature Discovery subchart (its dependency's
condition is ``nfd.enabled,gfd.enabled``; the lab sets ``nfd.enabled`` from ``nfd``). The
values it sets, each checked in the chart at v0.19.0 and v0.20.0 (tests/contract/test_device_plugin_chart.py):

* ``gfd.enabled: true``, ``nfd.enabled``;
* ``config.map`` / ``config.default`` (the chart's own config mechanism: a ConfigMap the chart
  makes, which its config-manager init container and sidecar copy to ``/config/config.yaml``)
  with the time-slicing config of gpulab.config.time_slicing when ``timeSlicingReplicas`` > 1;
* ``migStrategy``, ``deviceListStrategy`` (the variant's: how the node's runtime reads the
  allocated GPUs), ``runtimeClassName`` (``runtimeClass``);
* ``image.repository`` / ``image.tag`` (``devicePluginImage``) and ``nfd.image.repository`` /
  ``nfd.image.tag`` (``nfdImage``): the chart joins ``repository:tag`` (``_helpers.tpl``
  ``nvidia-device-plugin.fullimage``), so a reference must carry a tag here.

The chart refuses the default namespace (``allowDefaultNamespace: false``, templates/
validation.yml); the release goes to :data:`NAMESPACE`, as NVIDIA's README installs it.

Pure: no Pulumi, no I/O but the chart path's existence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import operand_images, schema

#: This module's keys (Pulumi.yaml declares each once); part of gpulab.config.lab.SCHEMA.
SCHEMA: Final[dict[str, tuple[str, object]]] = schema.section(
    "devicePluginChartVersion", "devicePluginChartRepo", "devicePluginChartPath", "nfdImage", "runtimeClass"
)
#: The chart's name in NVIDIA's repository, the release's name and namespace (NVIDIA's README:
#: ``helm upgrade -i nvdp nvdp/nvidia-device-plugin --namespace nvidia-device-plugin``; the lab
#: names the release after the chart, so the chart's fullname is the release name).
CHART: Final = "nvidia-device-plugin"
RELEASE: Final = "nvidia-device-plugin"
NAMESPACE: Final = "nvidia-device-plugin"
#: The environment variable that points an empty ``devicePluginChartPath`` at a local chart.
CHART_PATH_ENV: Final = "GPULAB_DEVICE_PLUGIN_CHART_PATH"
#: NVIDIA's repository names versions without a leading v (Chart.yaml ``version: "0.19.0"``).
_VERSION: Final = re.compile(r"^\d+\.\d+\.\d+$")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class ImageRef:
    """An image as the chart takes it: ``repository`` (``nvcr.io/nvidia/k8s-device-plugin``)
    and ``tag`` (``v0.19.0``, or ``v0.19.0@sha256:<digest>``: the chart writes ``repository:tag``)."""

    repository: str
    tag: str

    def helm_values(self) -> dict[str, str]:
        """``{"repository", "tag"}`` for the chart's ``image`` section."""
        return {"repository": self.repository, "tag": self.tag}


@dataclass(frozen=True)
class DevicePluginChart:
    """NVIDIA's device plugin chart as the lab installs it.

    Attributes:
        version: ``devicePluginChartVersion`` (``0.20.0``).
        repo: ``devicePluginChartRepo``.
        path: an unpacked chart directory (``devicePluginChartPath`` or
            ``$GPULAB_DEVICE_PLUGIN_CHART_PATH``), absolute; None: from ``repo`` at ``version``.
        image: ``devicePluginImage`` split for the chart (None: the chart's default).
        nfd_image: ``nfdImage`` split for the NFD subchart (None: its default).
        runtime_class: ``runtimeClass`` ("" : the variant's choice).
    """

    version: str = "0.20.0"
    repo: str = "https://nvidia.github.io/k8s-device-plugin"
    path: str | None = None
    image: ImageRef | None = None
    nfd_image: ImageRef | None = None
    runtime_class: str = ""

    @property
    def source(self) -> str:
        """``"local:<path>"`` or the repository URL (the ``chartSource`` output)."""
        return f"local:{self.path}" if self.path else self.repo

    def local_version(self) -> str | None:
        """The local chart's Chart.yaml ``version`` (None: no local chart, or none found)."""
        return chart_file_version(self.path)


def chart_file_version(path: str | None) -> str | None:
    """The ``version`` of the unpacked chart at ``path`` (its Chart.yaml; None: no path, no
    file, or no version line). Shared by every chart the lab installs from a local directory."""
    if not path:
        return None
    try:
        with open(os.path.join(path, "Chart.yaml"), encoding="utf-8") as f:
            for line in f:
                m = re.match(r"^version:\s*[\"']?([^\"'\s]+)", line)
                if m:
                    return m.group(1)
    except OSError:
        return None
    return None


def chart_pin(
    get: Callable[[str], object], problems: list[str], ns: str, prefix: str, why: str, example: str
) -> tuple[str, str]:
    """``(version, repo)`` of a chart pinned by the keys ``<prefix>ChartVersion`` and
    ``<prefix>ChartRepo``; a version not ``MAJOR.MINOR.PATCH`` (``why`` says whose rule,
    ``example`` shows one) or a repository not https:// or oci:// is a problem appended. Shared by
    the charts the lab installs beside the operator (dra, queues)."""
    version = str(get(f"{prefix}ChartVersion"))
    if not _VERSION.match(version):
        problems.append(
            f"{ns}:{prefix}ChartVersion={version!r} must be MAJOR.MINOR.PATCH without a leading v ({why}), "
            f"e.g. {example}"
        )
    repo = str(get(f"{prefix}ChartRepo"))
    if not re.match(r"^(https://|oci://)[A-Za-z0-9./_-]+$", repo):
        problems.append(f"{ns}:{prefix}ChartRepo={repo!r} must be an https:// or oci:// URL")
    return version, repo


class LocalChart:
    """What a pinned chart config (a dataclass with ``repo`` and ``path``) says of its source."""

    repo: str
    path: str | None

    @property
    def source(self) -> str:
        """``"local:<path>"`` or the repository URL (the ``chartSource`` output)."""
        return f"local:{self.path}" if self.path else self.repo

    def local_version(self) -> str | None:
        """The local chart's Chart.yaml ``version`` (None: no local chart, or none found)."""
        return chart_file_version(self.path)


def chart_path(
    key: str, value: str, env_name: str, env: Mapping[str, str], chart: str, problems: list[str], ns: str
) -> str | None:
    """The absolute local chart directory from config ``key`` (``value``) or ``$env_name``;
    None: neither is set (the repository is used). A directory without a Chart.yaml is a
    problem appended, naming the key, the variable and the fix."""
    path = value or env.get(env_name, "") or None
    if path is not None and not os.path.isfile(os.path.join(path, "Chart.yaml")):
        problems.append(
            f"{chart} chart path {path!r} (from {ns}:{key} or ${env_name}) has no Chart.yaml; point it "
            f"at an unpacked {chart} chart or unset it to use the repository"
        )
    return os.path.abspath(path) if path else None


def _image(key: str, ref: str, problems: list[str], ns: str) -> ImageRef | None:
    """``ref`` split for a chart that joins ``repository:tag`` (None: empty, or a problem
    appended: not a pinned reference, or a digest without a tag)."""
    if not ref:
        return None
    try:
        parsed = operand_images.parse_ref("image", ref)  # registry/.../name, pinned
    except ValueError as exc:
        problems.append(f"{ns}:{key}={exc}")
        return None
    name, _, digest = ref.partition("@")
    tail = name.rsplit("/", 1)[-1]
    if ":" not in tail:
        problems.append(
            f"{ns}:{key}={ref!r}: the nvidia-device-plugin chart writes repository:tag, so a digest "
            "alone cannot be given; put the tag before it (name:v0.20.0@sha256:<digest>)"
        )
        return None
    tag = tail.split(":", 1)[1]
    return ImageRef(f"{parsed.repository}/{parsed.image}", f"{tag}@{digest}" if digest else tag)


def parse(
    get: Callable[[str], object],
    problems: list[str],
    env: Mapping[str, str],
    ns: str = "gpu-lab",
    installs: bool = False,
) -> DevicePluginChart:
    """The :class:`DevicePluginChart` from the parsed values (``get(key)``: the value or its
    default; ``env``: for ``$GPULAB_DEVICE_PLUGIN_CHART_PATH``); one line per bad key is
    appended to ``problems``. ``installs``: ``gpuStack: device-plugin`` is chosen; only then are
    the chart path and the images read for the chart (``devicePluginImage`` is the GPU
    Operator's operand image otherwise, checked by gpulab.config.operand_images).

    Problems: a version not ``MAJOR.MINOR.PATCH``; a repository not https:// or oci://;
    ``runtimeClass`` not a DNS subdomain; ``nfdImage`` set for another ``gpuStack``; and with
    ``installs``: a chart path without a Chart.yaml, ``devicePluginImage`` / ``nfdImage`` not a
    pinned reference with a tag.
    """
    version = str(get("devicePluginChartVersion"))
    if not _VERSION.match(version):
        problems.append(
            f"{ns}:devicePluginChartVersion={version!r} must be MAJOR.MINOR.PATCH without a leading v "
            "(NVIDIA's repository names them so), e.g. 0.20.0"
        )
    repo = str(get("devicePluginChartRepo"))
    if not re.match(r"^(https://|oci://)[A-Za-z0-9./_-]+$", repo):
        problems.append(f"{ns}:devicePluginChartRepo={repo!r} must be an https:// or oci:// URL")
    path = (
        chart_path(
            "devicePluginChartPath",
            str(get("devicePluginChartPath")),
            CHART_PATH_ENV,
            env,
            CHART,
            problems,
            ns,
        )
        if installs
        else None
    )
    if not installs and get("nfdImage"):
        problems.append(f"{ns}:nfdImage applies to gpuStack=device-plugin only (the NFD of its chart)")
    runtime_class = str(get("runtimeClass"))
    if runtime_class and (len(runtime_class) > 253 or not _DNS_SUBDOMAIN.match(runtime_class)):
        problems.append(f"{ns}:runtimeClass={runtime_class!r} is not a RuntimeClass name (a DNS subdomain)")
    return DevicePluginChart(
        version=version,
        repo=repo,
        path=path,
        image=_image("devicePluginImage", str(get("devicePluginImage") or ""), problems, ns)
        if installs
        else None,
        nfd_image=_image("nfdImage", str(get("nfdImage") or ""), problems, ns) if installs else None,
        runtime_class=runtime_class,
    )
