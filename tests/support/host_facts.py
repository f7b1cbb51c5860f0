"""Saved host probes read back, and two readings of one host compared: test support only.

The product writes :meth:`gpulab.host.facts.HostFacts.to_json` (the debug bundle, the
real-node runs' ``host-probe.json``) and never reads it back; the tests read it back to prove
the JSON form loses nothing, and compare the NVML and ``nvidia-smi`` readings of one host
(tests/data/device-h200). The real-node replay (hack/node/replay.py) reads a run's probe
with :func:`facts_from_json`.
"""

from __future__ import annotations

from typing import Any

from gpulab.host import nvsmi
from gpulab.host.facts import HostFacts
from gpulab.host.topology import GpuTopology, NicTopology, Topology, parse_link


def facts_from_json(doc: dict[str, Any]) -> HostFacts:
    """Rebuild :class:`HostFacts` from :meth:`HostFacts.to_json` output (e.g. a saved probe).

    Raises ``KeyError`` for a missing key.
    """
    gpus = tuple(
        nvsmi.GpuInfo(
            index=int(g["index"]),
            name=str(g["name"]),
            uuid=g["uuid"],
            driver_version=g["driverVersion"],
            memory_total_mib=g["memoryMiB"],
            pci_bus_id=g["pciBusId"],
            compute_cap=g.get("computeCap"),
            mig_mode=g.get("migMode"),
            mig_mode_pending=g.get("migModePending"),
        )
        for g in doc["gpus"]
    )
    return HostFacts(
        gpus=gpus,
        driver_version=str(doc["driverVersion"]),
        max_cuda=doc["maxCuda"],
        source=str(doc["source"]),
        simulated=bool(doc["simulated"]),
        warnings=tuple(doc.get("warnings", ())),
        notes=tuple(doc.get("notes", ())),
        mig_devices=None
        if doc.get("migDevices") is None
        else tuple(
            nvsmi.MigDevice(int(d["gpuIndex"]), int(d["deviceIndex"]), str(d["profile"]), str(d["uuid"]))
            for d in doc["migDevices"]
        ),
        topology=None if doc.get("topology") is None else topology_from_json(doc["topology"]),
        topology_note=doc.get("topologyNote"),
    )


#: Per-GPU fields :func:`compare_facts` compares (``compute_cap`` only where both sides have it:
#: the nvidia-smi path does not ask for it, see :data:`gpulab.host.nvsmi.QUERY_FIELDS`).
COMPARED_GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "memory_total_mib",
    "pci_bus_id",
    "mig_mode",
    "mig_mode_pending",
)


def compare_facts(a: HostFacts, b: HostFacts) -> list[str]:
    """Differences between two probes of one host (``source``, ``notes`` and ``simulated`` aside).

    Compares the driver version, max CUDA, the GPU count, and per GPU (in order) the fields of
    :data:`COMPARED_GPU_FIELDS` plus ``compute_cap`` where both carry it. Returns one line per
    difference, e.g. ``"gpu 0 mig_mode: nvml 'Disabled' != nvidia-smi None"``; ``[]`` when
    they agree.
    """
    diffs: list[str] = []

    def differ(what: str, x: object, y: object) -> None:
        if x != y:
            diffs.append(f"{what}: {a.source} {x!r} != {b.source} {y!r}")

    differ("driver_version", a.driver_version, b.driver_version)
    differ("max_cuda", a.max_cuda, b.max_cuda)
    differ("gpu count", a.count, b.count)
    for ga, gb in zip(a.gpus, b.gpus, strict=False):
        for name in COMPARED_GPU_FIELDS:
            differ(f"gpu {ga.index} {name}", getattr(ga, name), getattr(gb, name))
        if ga.compute_cap is not None and gb.compute_cap is not None:
            differ(f"gpu {ga.index} compute_cap", ga.compute_cap, gb.compute_cap)
    return diffs


def compare_topologies(a: Topology, b: Topology) -> list[str]:
    """Differences between two readings of one host's GPU topology (NICs aside: NVML has none).

    Compares the GPU count and per GPU the links to other GPUs, CPU affinity, NUMA affinity,
    NUMA node and GPU NUMA id. Returns one line per difference; ``[]`` when they agree.
    """
    diffs: list[str] = []
    if len(a.gpus) != len(b.gpus):
        diffs.append(f"gpu count: {a.source} {len(a.gpus)} != {b.source} {len(b.gpus)}")
    for ga, gb in zip(a.gpus, b.gpus, strict=False):
        for name in ("links", "cpu_affinity", "numa_affinity", "numa_node", "gpu_numa_id"):
            x, y = getattr(ga, name), getattr(gb, name)
            if x != y:
                diffs.append(f"gpu {ga.index} {name}: {a.source} {x!r} != {b.source} {y!r}")
    return diffs


def topology_from_json(doc: dict[str, Any]) -> Topology:
    """Rebuild a :class:`gpulab.host.topology.Topology` from its ``to_json()`` form.

    Raises:
        KeyError: a missing key. TopologyError: an unknown link code.
    """

    def ranges(cells: list[list[int]]) -> tuple[tuple[int, int], ...]:
        return tuple((int(a), int(b)) for a, b in cells)

    return Topology(
        gpus=tuple(
            GpuTopology(
                index=int(g["index"]),
                links={int(k): parse_link(v) for k, v in g["links"].items()},
                nics={k: parse_link(v) for k, v in g["nics"].items()},
                cpu_affinity=ranges(g["cpuAffinity"]),
                numa_affinity=ranges(g["numaAffinity"]),
                numa_node=g["numaNode"],
                gpu_numa_id=g["gpuNumaId"],
            )
            for g in doc["gpus"]
        ),
        nics=tuple(
            NicTopology(n["label"], n["name"], {k: parse_link(v) for k, v in n["links"].items()})
            for n in doc["nics"]
        ),
        source=str(doc["source"]),
    )
