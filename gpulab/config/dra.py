"""The config keys of NVIDIA's DRA driver (``gpuStack: dra``): :class:`DraChart`, one field of
:class:`gpulab.config.lab.LabConfig`.

In DRA mode Pods get GPUs through Dynamic Resource Allocation, never through the device
plugin's counted ``nvidia.com/gpu``: the lab installs NVIDIA's DRA driver chart
(sigs.k8s.io/dra-driver-nvidia-gpu ``deployments/helm/dra-driver-nvidia-gpu``, pinned), whose
GPU kubelet plugin publishes a ResourceSlice per GPU node, and the smoke Pod claims its GPUs
through a ResourceClaimTemplate of the chart's DeviceClass :data:`DEVICE_CLASS`. The values the
lab sets, each checked in the chart at v0.5.0 (tests/contract/test_dra_driver.py):

* ``resources.gpus.enabled: true`` with ``gpuResourcesEnabledOverride: true``: the chart
  refuses GPUs without the override (templates/validation.yaml: the DRA driver cannot share a
  node with the device plugin), and the lab installs no device plugin in this mode;
* ``resources.computeDomains.enabled: false``: ComputeDomains (IMEX, multi-node NVLink) are
  not what the lab proves, and their controller is not installed;
* ``resourceApiVersion: resource.k8s.io/v1`` (components/dra.py says why);
* ``nvidiaDriverRoot``: where the host's driver is (``/`` for a driver installed on the host,
  the chart's default; ``/run/nvidia/driver`` under NVIDIA's driver container).

The chart refuses the default namespace (``allowDefaultNamespace: false``); the release goes to
:data:`NAMESPACE`, as upstream's kind demo installs it (demo/clusters/kind/install-dra-driver-gpu.sh).

Pure: no Pulumi, no I/O but the chart path's existence.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.device_plugin import LocalChart, chart_path, chart_pin

#: This module's keys (Pulumi.yaml declares each once); part of gpulab.config.lab.SCHEMA.
SCHEMA: Final[dict[str, tuple[str, object]]] = schema.section(
    "draChartVersion", "draChartRepo", "draChartPath", "draDriverRoot"
)
#: The chart's name, the release's name and namespace (upstream's kind demo:
#: ``helm upgrade -i --namespace dra-driver-nvidia-gpu dra-driver-nvidia-gpu ...``).
CHART: Final = "dra-driver-nvidia-gpu"
RELEASE: Final = "dra-driver-nvidia-gpu"
NAMESPACE: Final = "dra-driver-nvidia-gpu"
#: The DeviceClass of a full GPU (templates/deviceclass-gpu.yaml) and the driver that
#: publishes its devices (cmd/gpu-kubelet-plugin/main.go ``DriverName``), both at v0.5.0.
DEVICE_CLASS: Final = "gpu.nvidia.com"
DRIVER: Final = "gpu.nvidia.com"
#: The environment variable that points an empty ``draChartPath`` at a local chart.
CHART_PATH_ENV: Final = "GPULAB_DRA_CHART_PATH"


@dataclass(frozen=True)
class DraChart(LocalChart):
    """NVIDIA's DRA driver chart as the lab installs it.

    Attributes:
        version: ``draChartVersion`` (``0.5.0``: Chart.yaml's ``version``, no leading v).
        repo: ``draChartRepo`` (an ``oci://`` or ``https://`` chart repository).
        path: an unpacked chart directory (``draChartPath`` or ``$GPULAB_DRA_CHART_PATH``),
            absolute; None: from ``repo`` at ``version``.
        driver_root: ``draDriverRoot``, the chart's ``nvidiaDriverRoot``.
    """

    version: str = "0.5.0"
    repo: str = "oci://registry.k8s.io/dra-driver-nvidia/charts"
    path: str | None = None
    driver_root: str = "/"


def parse(
    get: Callable[[str], object],
    problems: list[str],
    env: Mapping[str, str],
    ns: str = "gpu-lab",
    installs: bool = False,
) -> DraChart:
    """The :class:`DraChart` from the parsed values (``get(key)``: the value or its default;
    ``env``: for ``$GPULAB_DRA_CHART_PATH``); one line per bad key is appended to ``problems``.
    ``installs``: ``gpuStack: dra`` is chosen; only then is the chart path read.

    Problems: a version not ``MAJOR.MINOR.PATCH``; a repository not https:// or oci://;
    ``draDriverRoot`` not an absolute path; with ``installs``, a chart path without a Chart.yaml.
    """
    version, repo = chart_pin(get, problems, ns, "dra", "the chart's Chart.yaml is strict semver", "0.5.0")
    root = str(get("draDriverRoot"))
    if not re.match(r"^/[A-Za-z0-9._/-]*$", root):
        problems.append(
            f"{ns}:draDriverRoot={root!r} must be an absolute path (/ for a driver installed on the host, "
            "/run/nvidia/driver under NVIDIA's driver container)"
        )
    path = (
        chart_path("draChartPath", str(get("draChartPath")), CHART_PATH_ENV, env, CHART, problems, ns)
        if installs
        else None
    )
    return DraChart(version=version, repo=repo, path=path, driver_root=root)
