"""The host's GPU facts as one record: :class:`HostFacts` and its JSON forms.

Every source of the host probe (NVML, nvidia-smi, a shipped capture: :mod:`gpulab.host.probe`)
returns this one shape; the ``host*`` stack outputs are made from it.

:func:`output_json` is the ``hostTopology`` stack output (gpulab.core.outputs.HOST_TOPOLOGY)::

    {"source": "nvml" | "nvidia-smi topo -m" | "capture:h200-2gpu (nvidia-smi topo -m)" | None,
     "gpus": [{"index": 0, "uuid": "GPU-..." | None,
               "links": [{"peer": 1, "peerUuid": "GPU-..." | None, "kind": "NV", "nvlinks": 18,
                          "code": "NV18"}],
               "cpuAffinity": "0-55,112-167", "numaNode": 0 | None, "gpuNumaId": None}],
     "note": None | "why there is no topology, or how it was read"}

``kind`` is one of :data:`gpulab.host.topology.KINDS` (``NV``, ``PIX``, ``PXB``, ``PHB``, ``NODE``,
``SYS``), ``nvlinks`` the NVLink count for ``NV`` (0 otherwise), ``cpuAffinity`` nvidia-smi's
range text (``"N/A"`` when unknown), ``numaNode`` the GPU's single NUMA node (None when none
or several). ``gpus`` is ``[]`` when nothing was read (``source`` None, ``note`` says why).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpulab.host import nvsmi, topology
from gpulab.host.node_runtime import NodeRuntime
from gpulab.host.topology import Topology


@dataclass(frozen=True)
class HostFacts:
    """GPU facts of the host (or of a capture).

    Attributes:
        gpus: one :class:`gpulab.host.nvsmi.GpuInfo` per physical GPU (MIG instances excluded).
        driver_version: e.g. ``"580.159.04"``.
        max_cuda: newest CUDA the driver supports, e.g. ``"13.0"`` (None on very old drivers).
        source: how the facts were read, for export (the ``hostProbeSource`` output):
            ``"nvml"``, ``"nvidia-smi"`` or ``"capture:<name>"``.
        simulated: True when the facts are not this machine's.
        warnings: human-readable warnings (e.g. mixed GPU models); the lab logs them.
        notes: how the probe got there, e.g. why NVML was not used or why the MIG mode is
            unknown; informational, not logged as warnings.

    Per GPU, ``gpus[i].mig_mode`` / ``mig_mode_pending`` is the MIG mode (``"Enabled"``,
    ``"Disabled"``, None when the GPU has no MIG or the source could not tell).
    ``mig_devices``: the MIG devices ``nvidia-smi -L`` lists (:class:`gpulab.host.nvsmi.MigDevice`:
    parent GPU index, device index, profile such as ``"1g.18gb"``, UUID); ``()`` when it lists
    none, None when it was not asked (no GPU has MIG enabled) or could not be read (``notes``
    says why).
    """

    gpus: tuple[nvsmi.GpuInfo, ...]
    driver_version: str
    max_cuda: str | None
    source: str
    simulated: bool
    warnings: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())
    mig_devices: tuple[nvsmi.MigDevice, ...] | None = None
    #: How the GPUs are linked (gpulab.host.topology_probe: NVML, else ``nvidia-smi topo -m``, or the
    #: capture's ``topo-m.txt``); None when not read, and then ``topology_note`` says why.
    topology: Topology | None = None
    topology_note: str | None = None
    #: The node below NVML's view (gpulab.host.node_runtime): runtime configuration, CDI specs,
    #: the toolkit, the PCI bus; None when not read (``hostProbe: off``, a capture without one).
    node_runtime: NodeRuntime | None = None

    @property
    def count(self) -> int:
        return len(self.gpus)

    @property
    def models(self) -> list[str]:
        return sorted({g.name for g in self.gpus})

    def gpus_json(self) -> list[dict[str, object]]:
        """Per-GPU dicts (:meth:`gpulab.host.nvsmi.GpuInfo.to_json`), the ``hostGpus`` output."""
        return [g.to_json() for g in self.gpus]

    def topology_json(self) -> dict[str, Any]:
        """The ``hostTopology`` output (:func:`output_json`)."""
        return output_json(self)

    def to_json(self) -> dict[str, Any]:
        """The whole result as plain JSON: ``gpus`` (see :meth:`gpus_json`), ``driverVersion``,
        ``maxCuda``, ``source``, ``simulated``, ``warnings``, ``notes``, and ``migDevices``
        (``[{"gpuIndex", "deviceIndex", "profile", "uuid"}]``) only when they were listed."""
        doc: dict[str, Any] = {
            "gpus": self.gpus_json(),
            "driverVersion": self.driver_version,
            "maxCuda": self.max_cuda,
            "source": self.source,
            "simulated": self.simulated,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }
        if self.mig_devices is not None:
            doc["migDevices"] = [
                {"gpuIndex": d.gpu_index, "deviceIndex": d.device_index, "profile": d.profile, "uuid": d.uuid}
                for d in self.mig_devices
            ]
        if self.topology is not None or self.topology_note is not None:
            # Only when the probe read it: saved probes from before the topology step stay equal.
            doc["topology"] = self.topology.to_json() if self.topology is not None else None
            doc["topologyNote"] = self.topology_note
        return doc


def output_json(facts: HostFacts) -> dict[str, Any]:
    """The ``hostTopology`` output (shape in the module docstring) of probed facts."""
    topo = facts.topology
    if topo is None:
        return {"source": None, "gpus": [], "note": facts.topology_note}
    uuids = {g.index: g.uuid for g in facts.gpus}
    source = f"{facts.source} ({topo.source})" if facts.simulated else topo.source
    return {
        "source": source,
        "gpus": [
            {
                "index": g.index,
                "uuid": uuids.get(g.index),
                "links": [
                    {
                        "peer": peer,
                        "peerUuid": uuids.get(peer),
                        "kind": link.kind,
                        "nvlinks": link.nvlinks,
                        "code": link.code,
                    }
                    for peer, link in sorted(g.links.items())
                ],
                "cpuAffinity": topology.ranges_text(g.cpu_affinity),
                "numaNode": g.numa_node,
                "gpuNumaId": g.gpu_numa_id,
            }
            for g in topo.gpus
        ],
        "note": facts.topology_note,
    }
