"""The host probe's topology step: how the GPUs are linked, read once with the other host facts.

:func:`read_host_topology` asks NVML first (:func:`gpulab.topology.read_nvml_topology`, in a
session of its own) and falls back to ``nvidia-smi topo -m``
(:func:`gpulab.topology.parse_topo_matrix`); :func:`read_capture_topology` reads a shipped
capture's ``topo-m.txt`` (the simulated lab). Neither ever fails the probe: whatever goes
wrong (NVML's topology calls not supported, an old driver, a matrix this parser does not
know) becomes a note, and the topology is then None. The GPU facts are what the lab needs;
the topology is shown on the card, nothing decides on it (placement is not built).

:func:`output_json` is the ``hostTopology`` stack output (gpulab.outputs.HOST_TOPOLOGY)::

    {"source": "nvml" | "nvidia-smi topo -m" | "capture:h200-2gpu (nvidia-smi topo -m)" | None,
     "gpus": [{"index": 0, "uuid": "GPU-..." | None,
               "links": [{"peer": 1, "peerUuid": "GPU-..." | None, "kind": "NV", "nvlinks": 18,
                          "code": "NV18"}],
               "cpuAffinity": "0-55,112-167", "numaNode": 0 | None, "gpuNumaId": None}],
     "note": None | "why there is no topology, or how it was read"}

``kind`` is one of :data:`gpulab.topology.KINDS` (``NV``, ``PIX``, ``PXB``, ``PHB``, ``NODE``,
``SYS``), ``nvlinks`` the NVLink count for ``NV`` (0 otherwise), ``cpuAffinity`` nvidia-smi's
range text (``"N/A"`` when unknown), ``numaNode`` the GPU's single NUMA node (None when none
or several). ``gpus`` is ``[]`` when nothing was read (``source`` None, ``note`` says why).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from gpulab import topology
from gpulab.run import Probe

if TYPE_CHECKING:
    from gpulab.probe import HostFacts

#: The command of the fallback (the matrix: ``--matrix``).
TOPO_COMMAND: Final = ["nvidia-smi", "topo", "-m"]
#: A capture's topology file (``nvidia-smi topo -m`` into a file).
CAPTURE_FILE: Final = "topo-m.txt"


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _nvml_topology(loader: Callable[[], Any]) -> topology.Topology:
    from gpulab import nvml

    nv = loader()
    with nvml.session(nv):
        return topology.read_nvml_topology(nv, os.cpu_count() or 1)


def _smi_topology(run: Probe) -> topology.Topology:
    rc, out, err = run(TOPO_COMMAND)
    if rc != 0:
        first = next((ln.strip() for ln in f"{err}\n{out}".splitlines() if ln.strip()), "")
        shown = "not found" if rc is None else f"exited {rc}"
        raise topology.TopologyError(f"`{' '.join(TOPO_COMMAND)}` {shown}: {first!r}")
    return topology.parse_topo_matrix(out)


def read_host_topology(
    run: Probe, nvml_loader: Callable[[], Any] | None, gpu_count: int
) -> tuple[topology.Topology | None, str | None]:
    """This host's topology: NVML when ``nvml_loader`` is given (the probe read the facts
    with NVML), else, or when NVML's topology fails, ``nvidia-smi topo -m`` through ``run``.

    Returns ``(topology, note)``: the note says why NVML was not used for it, or why there
    is no topology (then None); a topology that does not list ``gpu_count`` GPUs is dropped
    with a note. Never raises for a topology failure: the probe's GPU facts stand without it.
    """
    notes: list[str] = []
    topo: topology.Topology | None = None
    if nvml_loader is not None:
        try:
            topo = _nvml_topology(nvml_loader)
        # A topology failure must never fail the probe; any error (NVML's, a binding without
        # a function, a level this module does not know) is reported, then nvidia-smi is asked.
        except Exception as exc:
            notes.append(f"NVML topology not read ({_why(exc)}); asked nvidia-smi topo -m")
    if topo is None:
        try:
            topo = _smi_topology(run)
        except Exception as exc:  # the same rule: a note, never a preflight failure
            notes.append(f"topology not read: {_why(exc)}")
    if topo is not None and len(topo.gpus) != gpu_count:
        notes.append(f"topology not used: {topo.source} lists {len(topo.gpus)} GPUs, the probe {gpu_count}")
        topo = None
    return topo, "; ".join(notes) or None


def read_capture_topology(directory: Path, gpu_count: int) -> tuple[topology.Topology | None, str | None]:
    """A capture's topology (``directory/topo-m.txt``); ``(None, note)`` when it has none or it
    does not parse (never raises for that)."""
    path = directory / CAPTURE_FILE
    if not path.is_file():
        return None, f"topology not read: the capture {directory.name} has no {CAPTURE_FILE}"
    try:
        topo = topology.parse_topo_matrix(path.read_text())
    except topology.TopologyError as exc:
        return None, f"topology not read: {path.name}: {exc}"
    if len(topo.gpus) != gpu_count:
        return None, f"topology not used: {path.name} lists {len(topo.gpus)} GPUs, the capture {gpu_count}"
    return topo, None


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


def topology_from_json(doc: dict[str, Any]) -> topology.Topology:
    """Rebuild a :class:`gpulab.topology.Topology` from its ``to_json()`` form.

    Raises:
        KeyError: a missing key. topology.TopologyError: an unknown link code.
    """

    def ranges(cells: list[list[int]]) -> tuple[tuple[int, int], ...]:
        return tuple((int(a), int(b)) for a, b in cells)

    return topology.Topology(
        gpus=tuple(
            topology.GpuTopology(
                index=int(g["index"]),
                links={int(k): topology.parse_link(v) for k, v in g["links"].items()},
                nics={k: topology.parse_link(v) for k, v in g["nics"].items()},
                cpu_affinity=ranges(g["cpuAffinity"]),
                numa_affinity=ranges(g["numaAffinity"]),
                numa_node=g["numaNode"],
                gpu_numa_id=g["gpuNumaId"],
            )
            for g in doc["gpus"]
        ),
        nics=tuple(
            topology.NicTopology(
                n["label"], n["name"], {k: topology.parse_link(v) for k, v in n["links"].items()}
            )
            for n in doc["nics"]
        ),
        source=str(doc["source"]),
    )
