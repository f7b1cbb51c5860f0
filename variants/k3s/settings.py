"""The k3s variant's own settings: the k3s release the installer installs.

Its type and default are Pulumi.yaml's (gpulab.config.schema); the pattern it must match is
here. ``k3sNriPlugin`` stays in the operator's settings (``OperatorConfig.nri_plugin``): it is
a chart value, and the Helm-value hooks are given the operator's settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE
from variants.base import Getter, get_text

#: A k3s release as the installer's INSTALL_K3S_VERSION takes it, e.g. v1.34.1+k3s1.
K3S_VERSION: Final = re.compile(r"^v1\.\d+\.\d+\+k3s\d+$")


@dataclass(frozen=True)
class K3sSettings:
    """What the k3s installer is given.

    Attributes:
        version: ``k3sVersion``, the release (``INSTALL_K3S_VERSION``, k3s-io/k3s install.sh),
            ``vMAJOR.MINOR.PATCH+k3sN``; it decides the Kubernetes version.
    """

    version: str = schema.default("k3sVersion")


def check(get: Getter, problems: list[str]) -> None:
    """A line when ``k3sVersion`` is not a k3s release name."""
    version = get_text(get, "k3sVersion")
    if not K3S_VERSION.match(version):
        problems.append(
            f"{NAMESPACE}:k3sVersion={version!r} must be a k3s release vMAJOR.MINOR.PATCH+k3sN, "
            "e.g. v1.34.1+k3s1"
        )


def parse(get: Getter) -> K3sSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return K3sSettings(version=get_text(get, "k3sVersion"))
