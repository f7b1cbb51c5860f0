"""The finding record (:class:`Diagnosis`) and the names every diagnosis shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

GPU_RESOURCE: Final = "nvidia.com/gpu"
DEFAULT_PROFILE: Final = "gpu-lab"
DEFAULT_PROBE_IMAGE: Final = "nvidia/cuda:12.4.1-base-ubuntu22.04"

Json = Mapping[str, Any]


@dataclass(frozen=True)
class Diagnosis:
    """One finding.

    ``row``: stable kebab-case id of the troubleshooting row (the table in :mod:`gpulab.diagnose`);
    ``object``: the failing object, e.g.
    ``"pod gpu-operator/nvidia-device-plugin-daemonset-x2k/container nvidia-device-plugin"``,
    ``"node minikube"``, ``"daemonset gpu-operator/nvidia-container-toolkit-daemonset"``;
    ``reason``: one sentence, what is wrong; ``detail``: the evidence (an event message, the
    last log line, counts); ``fix``: the first reaction, as commands to run;
    ``blocking``: False when the lab still works (e.g. the DCGM exporter);
    ``variant``: a sub-case of the row (e.g. ``"not-registered"``), ``""`` when none.
    """

    row: str
    object: str
    reason: str
    detail: str
    fix: str
    blocking: bool = True
    variant: str = ""
