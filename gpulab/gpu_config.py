"""The config keys of what the lab expects the nodes to advertise: the gate's grace, MIG and
the smoke Pod's resource (:class:`GpuSettings`, one field of :class:`gpulab.config.LabConfig`).

Their schema (:data:`SCHEMA`) is part of :data:`gpulab.config.SCHEMA`; Pulumi.yaml describes
each key once. Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from gpulab import mig

#: key -> (kind, default), as :data:`gpulab.config.SCHEMA`.
SCHEMA: Final[dict[str, tuple[str, object]]] = {
    "gpuGraceSeconds": ("int", 60),
    "migStrategy": ("str", "none"),
    "expectedMigDevices": ("str", ""),
    "smokeResource": ("str", ""),
    "simMigDevices": ("str", ""),
}

Devices = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class GpuSettings:
    """What the nodes should advertise and how long the gate allows for it.

    Attributes:
        grace_seconds: ``gpuGraceSeconds``: seconds a stuck state (a device-plugin DaemonSet
            on no node, a Ready node without the resource, another count) may last before the
            gate fails.
        mig_strategy: ``migStrategy``: ``none``, ``single`` or ``mixed`` (the chart's
            ``mig.strategy``; :mod:`gpulab.mig`).
        expected_mig_devices: ``expectedMigDevices`` as ``(("1g.18gb", 7),)``; empty: from
            the host probe's ``nvidia-smi -L``.
        smoke_resource: ``smokeResource``: the resource the smoke Pod asks for; ``""`` is
            ``nvidia.com/gpu``, or under ``mixed`` the smallest expected MIG profile's.
        sim_mig_devices: ``simMigDevices`` (sim only): the MIG devices of the kwok node's
            GPUs, ``(("1g.18gb", 7),)``; empty: no MIG.
    """

    grace_seconds: int = 60
    mig_strategy: str = "none"
    expected_mig_devices: Devices = ()
    smoke_resource: str = ""
    sim_mig_devices: Devices = ()

    @property
    def expected_mig(self) -> dict[str, int]:
        """``expected_mig_devices`` as a dict (``{}`` when not set)."""
        return dict(self.expected_mig_devices)

    @property
    def sim_mig(self) -> dict[str, int]:
        """``sim_mig_devices`` as a dict (``{}`` when not set)."""
        return dict(self.sim_mig_devices)


def parse(
    get: Callable[[str], object], cluster: str, problems: list[str], ns: str = "gpu-lab"
) -> GpuSettings:
    """The :class:`GpuSettings` from the parsed config values (``get(key)``: the value or its
    default); one line per bad key is appended to ``problems``.

    Problems: a grace <= 0; an unknown strategy; devices not ``<profile>=<count>,...``; a
    smoke resource not ``nvidia.com/gpu`` or ``nvidia.com/mig-<profile>``, or a MIG resource
    without ``migStrategy mixed``; ``simMigDevices`` outside the sim lab.
    """
    grace = int(str(get("gpuGraceSeconds")))
    if grace <= 0:
        problems.append(f"{ns}:gpuGraceSeconds={grace} must be > 0")
    strategy = str(get("migStrategy"))
    if strategy not in mig.STRATEGIES:
        problems.append(f"{ns}:migStrategy={strategy!r} is unknown; allowed: {', '.join(mig.STRATEGIES)}")

    def devices(key: str) -> Devices:
        try:
            return tuple(sorted(mig.parse_devices(str(get(key))).items()))
        except ValueError as exc:
            problems.append(f"{ns}:{key}={get(key)!r}: {exc} (e.g. 1g.18gb=7,2g.35gb=1)")
            return ()

    expected, sim = devices("expectedMigDevices"), devices("simMigDevices")
    resource = str(get("smokeResource"))
    if resource and not mig.RESOURCE.match(resource):
        problems.append(
            f"{ns}:smokeResource={resource!r} must be nvidia.com/gpu or nvidia.com/mig-<profile> "
            "(e.g. nvidia.com/mig-1g.18gb)"
        )
    elif resource.startswith(mig.MIG_RESOURCE_PREFIX) and strategy != "mixed":
        problems.append(
            f"{ns}:smokeResource={resource} exists only with migStrategy mixed (got {strategy!r}); "
            f"set {ns}:migStrategy mixed or use nvidia.com/gpu"
        )
    if sim and cluster != "sim":
        problems.append(f"{ns}:simMigDevices applies to cluster=sim only (got cluster={cluster!r})")
    return GpuSettings(grace, strategy, expected, resource, sim)
