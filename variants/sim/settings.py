"""The sim variant's own settings: the simulated node's GPUs.

Its type and default are Pulumi.yaml's (gpulab.config.schema); its range is here. The
capture the lab reads is the host probe's (``LabConfig.capture``: ``hostProbe: capture`` reads
one in any lab); the sim variant only picks its default, the one matching ``simGpus``
(:attr:`SimSettings.capture`). ``simMigDevices`` and ``simNodes`` are parsed with the MIG and
fleet sections (gpulab.config.gpus, gpulab.config.fleet), sim-only by ``exclusive_keys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE
from gpulab.config.variant import VariantSettings
from variants.base import Getter, get_int

#: The allowed range of ``simGpus``, inclusive: 0 is a node without nvidia.com/gpu (a device
#: plugin that never registered, for the gate); 8 the largest capture-backed node, one 8-GPU server.
BOUNDS: Final[Mapping[str, tuple[int, int]]] = {"simGpus": (0, 8)}


@dataclass(frozen=True)
class SimSettings(VariantSettings):
    """The simulated kwok node.

    Attributes:
        gpus: ``simGpus``, GPUs of the node (0-8); it advertises gpus x timeSlicingReplicas
            nvidia.com/gpu.
    """

    gpus: int = schema.default("simGpus")

    @property
    def simulated(self) -> bool:
        """Always: no operator process runs on a kwok node, and the host facts are a capture's."""
        return True

    @property
    def capture(self) -> str | None:
        """The capture matching ``simGpus``: two H200s from 2 GPUs on, else one
        (gpulab/host/captures)."""
        return "h200-2gpu" if self.gpus >= 2 else "h200-1gpu"

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """A line when ``simGpus`` is outside :data:`BOUNDS` (the whole range and why, once)."""
        lowest, highest = BOUNDS["simGpus"]
        gpus = get_int(get, "simGpus")
        if not lowest <= gpus <= highest:
            problems.append(f"{NAMESPACE}:simGpus={gpus} must be {lowest}..{highest} (one simulated node)")

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> SimSettings:
        """:func:`parse`, with the fleet (``simNodes``) and the smoke Pod's GPUs checked against
        the simulated node."""
        _fleet_problems(get, problems)
        sim_gpus, replicas = (get_int(get, k) for k in ("simGpus", "timeSlicingReplicas"))
        smoke = str(get("smokeGpus"))
        smoke_gpus = int(smoke) if smoke.isdigit() else 0  # "all": the node's own count
        # simGpus=0 is the node without GPUs the gate must refuse (it fails before the smoke Pod);
        # with simMigDevices the smoke Pod's resource is checked against the MIG plan instead.
        if sim_gpus and not get("simMigDevices") and smoke_gpus > sim_gpus * replicas:
            # The scheduler would leave the Pod Pending until smokeTimeoutSeconds: say it now.
            problems.append(
                f"gpu-lab:smokeGpus={smoke_gpus} is more than the simulated node offers "
                f"(simGpus={sim_gpus} x timeSlicingReplicas={replicas}); lower smokeGpus or raise simGpus"
            )
        return parse(get)


def parse(get: Getter) -> SimSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return SimSettings(gpus=get_int(get, "simGpus"))


def _fleet_problems(get: Getter, problems: list[str]) -> None:
    """``simNodes``: each ``NAME=GPUS[/ADVERTISED]`` (variants.sim.ctl.fleet), only with
    ``gpuStack: found`` (the simulated fleet's stack is found installed, as on a cluster the lab
    does not own) or ``device-plugin`` (the lab installs NVIDIA's chart, then checks each node)."""
    from variants.sim.ctl.fleet import parse_node_specs

    items = [i.strip() for i in str(get("simNodes")).split(",") if i.strip()]
    if not items:
        return
    try:
        parse_node_specs(items)
    except ValueError as exc:
        problems.append(f"gpu-lab:simNodes={get('simNodes')!r}: {exc}")
    if get("gpuStack") not in ("found", "device-plugin"):
        problems.append(
            "gpu-lab:simNodes needs gpu-lab:gpuStack=found or device-plugin (a fleet's nodes are checked "
            "one by one: found installed, or NVIDIA's device plugin chart installed by the lab)"
        )
