"""What a simulated GPU node advertises: its extended resources and GPU Feature Discovery's labels.

A kwok node has no device plugin; this module writes what NVIDIA's would register for the
node's GPUs (:class:`NodeGpus`): ``nvidia.com/gpu`` (GPUs x time-slicing replicas), nothing
at all for ``gpus=0`` (a plugin that never registered: NVIDIA/k8s-device-plugin#834), or,
with MIG devices, what the MIG strategy makes of them (:mod:`gpulab.config.mig`):

* ``mixed``: ``nvidia.com/mig-<profile>: <count>`` per profile and ``nvidia.com/gpu: 0``
  (every GPU has MIG; davidB/kubectl-view-allocations#258 shows a mixed H100 so);
* ``single``: ``nvidia.com/gpu`` = the MIG devices x replicas;
* ``none``: the whole GPUs as ``nvidia.com/gpu`` (what NVIDIA/gpu-operator#637 reports).

The MIG labels are GFD's (NVIDIA/k8s-device-plugin ``internal/lm/resource.go`` and
``mig-strategy.go``): ``nvidia.com/mig.strategy``, per resource ``<resource>.count``,
``.replicas``, ``.product`` (``<model>-MIG-<profile>``), ``.memory`` and the MIG attributes
(``.multiprocessors``, ``.slices.gi``, ``.slices.ci``, ``.engines.*``); the full GPUs keep
``nvidia.com/gpu.count`` = physical GPUs (NVIDIA/k8s-device-plugin#738) and
``nvidia.com/gpu.replicas: 0`` when they have MIG. Time-slicing: ``nvidia.com/gpu.replicas``,
``nvidia.com/gpu.product`` ``<model>-SHARED`` and ``nvidia.com/gpu.sharing-strategy:
time-slicing`` (``none`` otherwise); with ``renameByDefault`` (``rename``) the GPUs are
``nvidia.com/gpu.shared`` and the product label has no ``-SHARED`` (the labels keep the
``nvidia.com/gpu.`` prefix: GFD keys them by the configured resource,
``internal/lm/resource.go``). The MIG attribute values are those of an
H200 1g.18gb device (16 SMs, about 16 GiB usable), written down, not measured here.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config.mig import MIG_RESOURCE_PREFIX, STRATEGIES, resource_of
from gpulab.config.time_slicing import TimeSlicing
from gpulab.core.names import WHOLE_GPU_RESOURCES

#: MIG attribute labels per profile (GFD's ``<resource>.<attribute>``); the memory in MB.
_MIG_ATTRIBUTES: Final[Mapping[str, Mapping[str, str]]] = {
    "1g.18gb": {
        "memory": "16384",
        "multiprocessors": "16",
        "slices.gi": "1",
        "slices.ci": "1",
        "engines.copy": "1",
        "engines.decoder": "1",
        "engines.encoder": "0",
        "engines.jpeg": "1",
        "engines.ofa": "0",
    },
}


@dataclass(frozen=True)
class NodeGpus:
    """One simulated node's GPUs.

    Attributes:
        gpus: physical GPUs (0: the node advertises no GPU resource at all).
        replicas: time-slicing replicas of ``nvidia.com/gpu`` (>= 1).
        mig: MIG devices of the node's GPUs, ``(("1g.18gb", 7),)``; empty: no MIG.
        strategy: ``none``, ``single`` or ``mixed``.
        rename: time-slicing's ``renameByDefault``: the GPUs are ``nvidia.com/gpu.shared``
            (only with ``replicas > 1``).

    Raises:
        ValueError: a count out of range or an unknown strategy.
    """

    gpus: int = 1
    replicas: int = 1
    mig: tuple[tuple[str, int], ...] = ()
    strategy: str = "none"
    rename: bool = False

    @property
    def gpu_key(self) -> str:
        """The whole-GPU resource name: ``nvidia.com/gpu.shared`` when shared and renamed."""
        return TimeSlicing(self.replicas, self.rename).resource

    def __post_init__(self) -> None:
        if not 0 <= self.gpus <= 8 or self.replicas < 1:
            raise ValueError(f"gpus must be 0..8 and replicas >= 1, got {self.gpus} and {self.replicas}")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"MIG strategy {self.strategy!r} is not one of {', '.join(STRATEGIES)}")

    def resources(self) -> dict[str, str]:
        """The extended resources of ``status.capacity``/``allocatable`` (module docstring)."""
        if self.gpus == 0:
            return {}
        key = self.gpu_key
        if self.mig and self.strategy == "mixed":
            return {key: "0", **{resource_of(p): str(n) for p, n in self.mig}}
        if self.mig and self.strategy == "single":
            return {key: str(sum(n for _, n in self.mig) * self.replicas)}
        return {key: str(self.gpus * self.replicas)}

    def labels(self, model: str) -> dict[str, str]:
        """GFD's labels for these GPUs beyond the node's base labels; ``model`` is the product
        label of the full GPU (e.g. ``NVIDIA-H200``)."""
        # GFD's sharing label: none (its default), time-slicing or mps (NVIDIA/k8s-device-plugin
        # docs/gpu-feature-discovery: "nvidia.com/gpu.sharing-strategy").
        shared = self.replicas > 1 and not self.mig
        labels = {
            "nvidia.com/gpu.count": str(self.gpus),
            "nvidia.com/gpu.sharing-strategy": "time-slicing" if shared else "none",
        }
        if shared:
            labels |= {
                "nvidia.com/gpu.replicas": str(self.replicas),
                "nvidia.com/gpu.product": model if self.rename else f"{model}-SHARED",
            }
        if not self.mig:
            return labels
        labels |= {
            "nvidia.com/mig.capable": "true",
            "nvidia.com/mig.strategy": self.strategy,
            "nvidia.com/mig.config": "all-" + "-".join(p for p, _ in self.mig),
            "nvidia.com/mig.config.state": "success",
            "nvidia.com/gpu.replicas": "0",
        }
        if self.strategy == "mixed":
            for profile, count in self.mig:
                base = resource_of(profile)
                labels |= {
                    f"{base}.count": str(count),
                    f"{base}.replicas": "1",
                    f"{base}.product": f"{model}-MIG-{profile}",
                    **{f"{base}.{k}": v for k, v in _MIG_ATTRIBUTES.get(profile, {}).items()},
                }
        elif self.strategy == "single" and len(self.mig) == 1:
            profile, count = self.mig[0]
            labels |= {
                "nvidia.com/gpu.count": str(count),
                "nvidia.com/gpu.replicas": str(self.replicas),
                "nvidia.com/gpu.product": f"{model}-MIG-{profile}",
                **{f"nvidia.com/gpu.{k}": v for k, v in _MIG_ATTRIBUTES.get(profile, {}).items()},
            }
        return labels

    def advertised_by(self, allocatable: Mapping[str, str]) -> bool:
        """True when a node's ``status.allocatable`` shows exactly these GPU resources (and no
        ``nvidia.com/gpu`` where there should be none)."""
        want = self.resources()
        gpu_keys = {k for k in allocatable if k in WHOLE_GPU_RESOURCES or k.startswith(MIG_RESOURCE_PREFIX)}
        return gpu_keys == set(want) and all(str(allocatable.get(k)) == v for k, v in want.items())

    def stale(self) -> dict[str, None]:
        """Whole-GPU keys a merge patch must remove from an earlier ``up``'s status
        (``nvidia.com/gpu`` or ``nvidia.com/gpu.shared`` when there is none now)."""
        now = self.resources()
        return {k: None for k in WHOLE_GPU_RESOURCES if k not in now}
