"""The MicroK8s variant's own settings: the snap channel ``snap install`` is given.

Its type and default are Pulumi.yaml's (gpulab.config.schema); the pattern it must match, and
the oldest track whose containerd reads CDI, are here (sources: variants/microk8s/__init__.py,
pinned in tests/contract/test_microk8s.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE
from gpulab.config.variant import VariantSettings
from variants.base import Getter, get_text

#: The oldest track whose containerd reads CDI by default (1.35: containerd v2.1.3, enable_cdi
#: true; 1.34: v1.7.28, false, and MicroK8s's template does not set it): the chart's
#: cdi-annotations,cdi-cri device list reaches containers from there on.
CDI_TRACK: Final = (1, 35)
#: A snap channel of MicroK8s: ``<track>/<risk>`` with a Kubernetes minor as the track.
CHANNEL: Final = re.compile(r"^(1)\.(\d+)/(stable|candidate|beta|edge)$")


@dataclass(frozen=True)
class MicroK8sSettings(VariantSettings):
    """What ``snap install`` is given.

    Attributes:
        channel: ``microk8sChannel``, ``1.MINOR/RISK`` (the snap's track is the Kubernetes
            minor; ``snap install --channel``); it decides the Kubernetes version.
    """

    channel: str = schema.default("microk8sChannel")

    @property
    def track(self) -> tuple[int, int]:
        """``(1, MINOR)`` of :attr:`channel` (checked by :meth:`check`)."""
        return track_of(self.channel)

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """A line when ``microk8sChannel`` is not a MicroK8s channel."""
        channel = get_text(get, "microk8sChannel")
        if not CHANNEL.match(channel):
            problems.append(
                f"{NAMESPACE}:microk8sChannel={channel!r} must be a MicroK8s snap channel 1.MINOR/RISK "
                "(RISK: stable, candidate, beta or edge), e.g. 1.35/stable"
            )

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> MicroK8sSettings:
        """:func:`parse`; on a track before :data:`CDI_TRACK` (containerd 1.7 reads no CDI) a
        line unless ``cdi`` is set to false: the record's CDI default (on, the chart's) is one
        for every channel, so the older tracks must turn it off themselves."""
        channel = get_text(get, "microk8sChannel")
        if CHANNEL.match(channel) and track_of(channel) < CDI_TRACK and values.get("cdi") is not False:
            problems.append(
                f"{NAMESPACE}:cdi={'true' if values.get('cdi') else 'auto'} with microk8sChannel={channel}: "
                "its containerd (v1.7) does not read CDI (enable_cdi is false and MicroK8s's template does "
                f"not set it); set cdi=false, or use a channel of track 1.{CDI_TRACK[1]} or later"
            )
        return parse(get)


def track_of(channel: str) -> tuple[int, int]:
    """``"1.35/stable"`` -> ``(1, 35)``.

    Raises:
        ValueError: ``channel`` is not a MicroK8s channel (:data:`CHANNEL`).
    """
    m = CHANNEL.match(channel)
    if not m:
        raise ValueError(f"not a MicroK8s channel: {channel!r}")
    return int(m.group(1)), int(m.group(2))


def parse(get: Getter) -> MicroK8sSettings:
    """The settings as config holds them (checked by :meth:`MicroK8sSettings.check`)."""
    return MicroK8sSettings(channel=get_text(get, "microk8sChannel"))
