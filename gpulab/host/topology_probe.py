"""The host probe's topology step: how the GPUs are linked, read once with the other host facts.

:func:`read_host_topology` asks NVML first (:func:`gpulab.host.topology.read_nvml_topology`, in a
session of its own) and falls back to ``nvidia-smi topo -m``
(:func:`gpulab.host.topology.parse_topo_matrix`); :func:`read_capture_topology` reads a shipped
capture's ``topo-m.txt`` (the simulated lab). Neither ever fails the probe: whatever goes
wrong (NVML's topology calls not supported, an old driver, a matrix this parser does not
know) becomes a note, and the topology is then None. The GPU facts are what the lab needs;
the topology is shown on the card, nothing decides on it (placement is not built).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from gpulab.core.run import Probe
from gpulab.host import nvml, topology

#: The command of the fallback (the matrix: ``--matrix``).
TOPO_COMMAND: Final = ["nvidia-smi", "topo", "-m"]
#: A capture's topology file (``nvidia-smi topo -m`` into a file).
CAPTURE_FILE: Final = "topo-m.txt"


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _nvml_topology(loader: Callable[[], Any]) -> topology.Topology:
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
