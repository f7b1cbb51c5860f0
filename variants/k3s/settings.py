"""The k3s variant's own settings: the k3s release the installer installs.

Its type and default are Pulumi.yaml's (gpulab.config.schema); the pattern it must match is
here. ``k3sNriPlugin`` stays in the operator's settings (``OperatorConfig.nri_plugin``): it is
a chart value, and the Helm-value hooks are given the operator's settings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import CHART_VERSION, NAMESPACE
from gpulab.config.variant import VariantSettings
from variants.base import Getter, get_text, refuse_cdi

#: Oldest chart whose ClusterPolicy takes ``cdi.nriPluginEnabled`` as the way to inject GPUs
#: (RKE2's GPU Operator docs recommend it from v26.3.x; it needs containerd >= 2.1).
MIN_NRI_CHART: Final = (26, 3, 0)
#: Why k3s's nvidia runtime handler takes no CDI annotation (without the NRI plugin).
NO_CDI: Final = (
    "k3s renders its containerd config from its own template on every start (docs.k3s.io, "
    "'Configuring containerd'), and the nvidia runtime handler it renders has only runtime_type and "
    "BinaryName, no container_annotations (k3s-io/k3s pkg/agent/templates, ExtraRuntimes), so the "
    "chart's cdi-annotations never reach that runtime; with cdi.enabled the operator's toolkit puts it "
    "in cdi mode (NVIDIA/gpu-operator v26.7.0 transformToolkitCtrForCDI: NVIDIA_CONTAINER_RUNTIME_MODE=cdi), "
    "where the image's NVIDIA_VISIBLE_DEVICES=all asks for every GPU"
)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.lstrip("v").split("."))


#: A k3s release as the installer's INSTALL_K3S_VERSION takes it, e.g. v1.34.1+k3s1.
K3S_VERSION: Final = re.compile(r"^v1\.\d+\.\d+\+k3s\d+$")


@dataclass(frozen=True)
class K3sSettings(VariantSettings):
    """What the k3s installer is given.

    Attributes:
        version: ``k3sVersion``, the release (``INSTALL_K3S_VERSION``, k3s-io/k3s install.sh),
            ``vMAJOR.MINOR.PATCH+k3sN``; it decides the Kubernetes version.
    """

    version: str = schema.default("k3sVersion")

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """A line when ``k3sVersion`` is not a k3s release name."""
        version = get_text(get, "k3sVersion")
        if not K3S_VERSION.match(version):
            problems.append(
                f"{NAMESPACE}:k3sVersion={version!r} must be a k3s release vMAJOR.MINOR.PATCH+k3sN, "
                "e.g. v1.34.1+k3s1"
            )

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> K3sSettings:
        """:func:`parse`, refusing ``cdi=true`` without the NRI plugin (:data:`NO_CDI`), and with
        it a chart older than :data:`MIN_NRI_CHART` or ``cdi``/``toolkit`` off (the chart refuses
        the NRI plugin without them)."""
        if not get("k3sNriPlugin"):
            refuse_cdi(
                "k3s", values, problems, NO_CDI + " (set k3sNriPlugin=true to inject GPUs by CDI through NRI)"
            )
            return parse(get)
        chart_version = str(get("chartVersion"))
        if CHART_VERSION.match(chart_version) and _version_tuple(chart_version) < MIN_NRI_CHART:
            problems.append(
                f"{NAMESPACE}:k3sNriPlugin=true needs chartVersion >= v{'.'.join(map(str, MIN_NRI_CHART))} "
                f"(got {chart_version!r})"
            )
        for key in ("cdi", "toolkit"):
            if not bool(get(key)):
                problems.append(
                    f"{NAMESPACE}:k3sNriPlugin=true needs {key}=true "
                    "(the chart refuses the NRI plugin without it)"
                )
        return parse(get)


def parse(get: Getter) -> K3sSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return K3sSettings(version=get_text(get, "k3sVersion"))
