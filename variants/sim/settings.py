"""The sim variant's own settings: the simulated node's GPUs.

Its type and default are Pulumi.yaml's (gpulab.config.schema); its range is here. The
capture the lab reads is the host probe's (``LabConfig.capture``: ``hostProbe: capture`` reads
one in any lab); the sim variant only picks its default, the one matching ``simGpus``
(:func:`default_capture`). ``simMigDevices`` and ``simNodes`` are parsed with the MIG and
fleet sections (gpulab.config.gpus, gpulab.config.fleet), sim-only by ``exclusive_keys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE
from variants.base import Getter, get_int

#: The allowed range of ``simGpus``, inclusive: 0 is a node without nvidia.com/gpu (a device
#: plugin that never registered, for the gate); 8 the largest capture-backed node, one 8-GPU server.
BOUNDS: Final[Mapping[str, tuple[int, int]]] = {"simGpus": (0, 8)}


@dataclass(frozen=True)
class SimSettings:
    """The simulated kwok node.

    Attributes:
        gpus: ``simGpus``, GPUs of the node (0-8); it advertises gpus x timeSlicingReplicas
            nvidia.com/gpu.
    """

    gpus: int = schema.default("simGpus")


def check(get: Getter, problems: list[str]) -> None:
    """A line when ``simGpus`` is outside :data:`BOUNDS` (the whole range and why, once)."""
    lowest, highest = BOUNDS["simGpus"]
    gpus = get_int(get, "simGpus")
    if not lowest <= gpus <= highest:
        problems.append(f"{NAMESPACE}:simGpus={gpus} must be {lowest}..{highest} (one simulated node)")


def default_capture(get: Getter) -> str:
    """The capture matching ``simGpus``: two H200s from 2 GPUs on, else one
    (gpulab/host/captures)."""
    return "h200-2gpu" if get_int(get, "simGpus") >= 2 else "h200-1gpu"


def parse(get: Getter) -> SimSettings:
    """The settings as config holds them (checked by :func:`check`)."""
    return SimSettings(gpus=get_int(get, "simGpus"))
