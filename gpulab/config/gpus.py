"""The config keys of what the lab expects the nodes to advertise: the gate's grace, MIG and
the smoke Pod's resource (:class:`GpuSettings`, one field of :class:`gpulab.config.lab.LabConfig`).

Their schema (:data:`SCHEMA`) is part of :data:`gpulab.config.lab.SCHEMA`; Pulumi.yaml describes
each key once. Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from gpulab.config import mig, schema
from gpulab.core.names import GPU_RESOURCE

#: key -> (kind, default) of this module's keys, as Pulumi.yaml declares them
#: (gpulab.config.schema); part of :data:`gpulab.config.lab.SCHEMA`.
SCHEMA: Final[dict[str, tuple[str, object]]] = schema.section(
    "gpuGraceSeconds",
    "migStrategy",
    "expectedMigDevices",
    "smokeResource",
    "simMigDevices",
    "smokeGpus",
)

#: ``smokeGpus`` value meaning every physical GPU of the host.
ALL_GPUS: Final = "all"

Devices = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class GpuSettings:
    """What the nodes should advertise and how long the gate allows for it.

    Attributes:
        grace_seconds: ``gpuGraceSeconds``: seconds a stuck state (a device-plugin DaemonSet
            on no node, a Ready node without the resource, another count) may last before the
            gate fails.
        mig_strategy: ``migStrategy``: ``none``, ``single`` or ``mixed`` (the chart's
            ``mig.strategy``; :mod:`gpulab.config.mig`).
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


def parse(get: Callable[[str], object], problems: list[str], ns: str = "gpu-lab") -> GpuSettings:
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
            f"{ns}:smokeResource={resource!r} must be nvidia.com/gpu, nvidia.com/gpu.shared or "
            "nvidia.com/mig-<profile> (e.g. nvidia.com/mig-1g.18gb)"
        )
    elif resource.startswith(mig.MIG_RESOURCE_PREFIX) and strategy != "mixed":
        problems.append(
            f"{ns}:smokeResource={resource} exists only with migStrategy mixed (got {strategy!r}); "
            f"set {ns}:migStrategy mixed or use nvidia.com/gpu"
        )
    return GpuSettings(grace, strategy, expected, resource, sim)


def parse_smoke_gpus(value: object, problems: list[str], ns: str = "gpu-lab") -> int:
    """``smokeGpus``: ``"all"`` -> ``0`` (resolved later by :func:`smoke_gpu_count`), a count
    ``>= 1`` -> that count; anything else appends one line to ``problems`` and returns ``0``."""
    text = str(value).strip()
    if text == ALL_GPUS:
        return 0
    if text.isdigit() and int(text) >= 1:
        return int(text)
    problems.append(f"{ns}:smokeGpus={value!r} must be {ALL_GPUS} or a count >= 1")
    return 0


def smoke_gpu_count(
    requested: int, host_gpus: int | None, replicas: int, resource: str, strategy: str
) -> int:
    """How many ``resource`` the smoke Pod asks for.

    Args:
        requested: ``smokeGpus`` parsed (:func:`parse_smoke_gpus`): ``0`` is ``all``.
        host_gpus: physical GPUs the host probe read on this host; None when the cluster is not
            this host (``existing``, ``hostProbe: off``: one Pod cannot span nodes).
        replicas: ``timeSlicingReplicas``.
        resource: the smoke Pod's resource (:attr:`gpulab.config.mig.Plan.smoke_resource`).
        strategy: ``migStrategy``.

    ``all`` is the host's physical count only where one Pod can hold every GPU: whole GPUs
    (``nvidia.com/gpu``, ``migStrategy`` none) and no time-slicing. With time-slicing a Pod's
    N replicas need not be N distinct GPUs (NVIDIA/k8s-device-plugin README, "Shared Access to
    GPUs with CUDA Time-Slicing": "requesting more than one shared GPU ... does not guarantee
    that the pod will get access to a proportional amount of compute power", and with
    ``failRequestsGreaterThanOne`` such a request fails); under MIG the Pod gets MIG devices.
    There ``all`` is 1. An explicit count is returned as it is.
    """
    if requested >= 1:
        return requested
    if host_gpus is None or host_gpus < 1 or replicas > 1 or resource != GPU_RESOURCE or strategy != "none":
        return 1
    return host_gpus
