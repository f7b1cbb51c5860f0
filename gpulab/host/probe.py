"""Host probe: what GPUs, driver and CUDA ceiling this machine has.

Three sources, one result shape (:class:`HostFacts`):

* NVML (a GPU host, :mod:`gpulab.host.nvml`): the driver's own library through ``pynvml``; no
  text is parsed. ``source`` ``"nvml"``.
* ``nvidia-smi`` (a GPU host): ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``
  for the GPUs, a separate ``--query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending``
  for the MIG mode (an old driver that does not know those fields fails that query alone; the
  MIG mode is then None and a note says why), and the plain ``nvidia-smi`` table header for
  the newest CUDA the driver supports. The exit code is checked first; an error message is
  never parsed as a table. ``source`` ``"nvidia-smi"``.
* a capture (the simulated lab): real nvidia-smi output recorded on H200 hosts and
  shipped in ``gpulab/host/captures/<name>/``; the facts are real but not *this* machine's, so
  ``simulated`` is true and the source says which capture.

:func:`probe_host` is the host probe: NVML where it loads and answers, nvidia-smi otherwise.
On an H200 host both give the same facts (``tests/data/device-h200/``). The command runner
and the NVML loader are injectable so the probe is tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from gpulab.core.run import Probe, probe
from gpulab.host import node_runtime, nvml, nvml_facts, nvsmi
from gpulab.host.facts import HostFacts
from gpulab.host.preflight import Finding, PreflightError, check_nvidia_smi
from gpulab.host.topology_probe import read_capture_topology, read_host_topology

CAPTURES_DIR = Path(__file__).resolve().parent / "captures"

#: (argv) -> (returncode or None when the program is missing, stdout, stderr): the host
#: checks' convention of the one runner (gpulab.core.run).
Runner = Probe
run_command = probe


def _with_mig(gpus: list[nvsmi.GpuInfo], mig_csv: str) -> list[nvsmi.GpuInfo]:
    """Fill the MIG fields from the separate MIG query, matched by index (and bus id).

    Raises:
        gpulab.host.nvsmi.NvidiaSmiParseError: unreadable MIG rows, or rows that name other GPUs.
    """
    modes = {m.index: m for m in nvsmi.parse_mig_csv(mig_csv)}
    out = []
    for g in gpus:
        m = modes.get(g.index)
        if m is None or (m.pci_bus_id and g.pci_bus_id and m.pci_bus_id != g.pci_bus_id):
            raise nvsmi.NvidiaSmiParseError(
                f"MIG query rows {sorted(modes)} do not match GPU {g.index} ({g.pci_bus_id})"
            )
        out.append(replace(g, mig_mode=m.current, mig_mode_pending=m.pending))
    return out


def facts_from_outputs(
    query_csv: str,
    table: str,
    source: str,
    simulated: bool,
    mig_csv: str | None = None,
) -> HostFacts:
    """Build :class:`HostFacts` from recorded ``--query-gpu`` CSV and plain table output.

    ``mig_csv``: the output of :func:`gpulab.host.nvsmi.mig_query_command`, or None when it was not
    run or failed (the MIG fields then keep what ``query_csv`` carried, usually None).

    Raises:
        gpulab.host.nvsmi.NvidiaSmiParseError: unparseable output (the message quotes it).
        PreflightError: no GPU listed.
    """
    gpus = nvsmi.parse_query_csv(query_csv)
    header = nvsmi.parse_header(table)
    if not gpus:
        raise PreflightError(
            [Finding("gpus-present", False, f"{source}: no GPU listed", "check `nvidia-smi -L`")]
        )
    if mig_csv is not None:
        gpus = _with_mig(gpus, mig_csv)
    warn = nvsmi.model_warning(gpus)
    driver = gpus[0].driver_version or header.driver_version
    return HostFacts(
        gpus=tuple(gpus),
        driver_version=driver,
        max_cuda=header.cuda_version,
        source=source,
        simulated=simulated,
        warnings=(warn,) if warn else (),
    )


def probe_nvidia_smi(run: Runner = run_command) -> HostFacts:
    """Probe this host with nvidia-smi (three commands: the GPU query, the MIG query, the table).

    A failing MIG query (a driver that does not know ``mig.mode.*``, or output this parser
    cannot read) does not fail the probe: the MIG fields stay None and ``notes`` says why.

    Raises:
        PreflightError: nvidia-smi missing or failing (cause and first fix).
        gpulab.host.nvsmi.NvidiaSmiParseError: output in an unknown format.
    """
    rc, out, err = run(nvsmi.query_command())
    finding = check_nvidia_smi(rc, out, err)
    if not finding.ok:
        raise PreflightError([finding])
    rc_mig, mig_out, mig_err = run(nvsmi.mig_query_command())
    rc2, table, err2 = run(["nvidia-smi"])
    finding2 = check_nvidia_smi(rc2, table, err2)
    if not finding2.ok:
        raise PreflightError([finding2])
    notes: list[str] = []
    mig_csv: str | None = mig_out
    if rc_mig != 0:
        first = next((ln.strip() for ln in f"{mig_err}\n{mig_out}".splitlines() if ln.strip()), "")
        notes.append(f"MIG mode unknown: the nvidia-smi MIG query exited {rc_mig}: {first!r}")
        mig_csv = None
    try:
        facts = facts_from_outputs(out, table, "nvidia-smi", simulated=False, mig_csv=mig_csv)
    except nvsmi.NvidiaSmiParseError as exc:
        if mig_csv is None:
            raise
        notes.append(f"MIG mode unknown: {exc}")
        facts = facts_from_outputs(out, table, "nvidia-smi", simulated=False)
    return replace(facts, notes=tuple(notes))


def probe_host(run: Runner = run_command, nvml_loader: Callable[[], Any] | None = None) -> HostFacts:
    """Probe this host: NVML where it loads and answers, nvidia-smi otherwise.

    ``nvml_loader`` (tests) returns the ``pynvml`` module or a fake; default
    :func:`gpulab.host.nvml.load_pynvml`. When NVML is not used, ``notes`` says why (e.g. the
    binding is not installed) and the facts come from :func:`probe_nvidia_smi`.

    Raises:
        PreflightError: neither source works; lists NVML's cause and fix, then nvidia-smi's.
        gpulab.host.nvsmi.NvidiaSmiParseError: NVML failed and nvidia-smi printed something
            unparseable.
    """
    loader = nvml_loader or nvml.load_pynvml
    try:
        return with_topology(with_mig_listing(nvml_facts.probe_nvml(loader), run), run, loader)
    except nvml.NvmlUnavailable as exc:
        nvml_finding = exc.finding
    try:
        facts = probe_nvidia_smi(run)
    except PreflightError as exc:
        raise PreflightError([nvml_finding, *exc.failures]) from exc
    note = f"NVML not used ({nvml_finding.message}); read with nvidia-smi"
    return with_topology(with_mig_listing(replace(facts, notes=(note, *facts.notes)), run), run, None)


def with_topology(
    facts: HostFacts, run: Runner = run_command, nvml_loader: Callable[[], Any] | None = None
) -> HostFacts:
    """``facts`` with the host's topology (:func:`gpulab.host.topology_probe.read_host_topology`:
    NVML through ``nvml_loader`` when given, else ``nvidia-smi topo -m``). A failure is a note
    (``topology_note`` and ``notes``), never a preflight failure."""
    topo, note = read_host_topology(run, nvml_loader, facts.count)
    return replace(facts, topology=topo, topology_note=note, notes=(*facts.notes, *([note] if note else [])))


def with_mig_listing(facts: HostFacts, run: Runner = run_command) -> HostFacts:
    """``facts`` with :attr:`HostFacts.mig_devices` from ``nvidia-smi -L`` when a GPU has MIG
    enabled (otherwise unchanged: no command runs). A failing or unreadable listing leaves
    them None and adds a note; it never fails the probe."""
    if not any(g.mig_mode == "Enabled" for g in facts.gpus):
        return facts
    rc, out, err = run(["nvidia-smi", "-L"])
    try:
        if rc != 0:
            raise nvsmi.NvidiaSmiParseError(f"exit {rc}: {(err or out).strip()[:200]!r}")
        return replace(facts, mig_devices=tuple(nvsmi.parse_list_mig(out)))
    except nvsmi.NvidiaSmiParseError as exc:
        return replace(facts, notes=(*facts.notes, f"MIG devices unknown: nvidia-smi -L: {exc}"))


def probe_capture(name: str, captures_dir: Path = CAPTURES_DIR) -> HostFacts:
    """Read the shipped capture ``name`` (e.g. ``"h200-1gpu"``); the result is simulated.

    A capture may carry ``query-mig.csv`` (the output of
    :func:`gpulab.host.nvsmi.mig_query_command`; without it the MIG mode is None) and
    ``nvidia-smi-L.txt`` (``nvidia-smi -L``: the MIG devices; without it they are None).

    Raises:
        FileNotFoundError: no such capture (names the directory searched).
    """
    d = captures_dir / name
    csv_path, table_path = d / "query-gpu.csv", d / "nvidia-smi.txt"
    if not csv_path.is_file() or not table_path.is_file():
        known = sorted(p.name for p in captures_dir.iterdir()) if captures_dir.is_dir() else []
        raise FileNotFoundError(f"capture {name!r} not found in {captures_dir} (known: {known})")
    mig_path, list_path = d / "query-mig.csv", d / "nvidia-smi-L.txt"
    facts = facts_from_outputs(
        csv_path.read_text(),
        table_path.read_text(),
        f"capture:{name}",
        simulated=True,
        mig_csv=mig_path.read_text() if mig_path.is_file() else None,
    )
    # As on a host: the MIG devices are listed only where a GPU has MIG on (the listing is
    # also the simulated smoke Pod's `nvidia-smi -L`, variants/sim/ctl/render.py).
    if list_path.is_file() and any(g.mig_mode == "Enabled" for g in facts.gpus):
        facts = replace(facts, mig_devices=tuple(nvsmi.parse_list_mig(list_path.read_text())))
    return with_capture_node_runtime(with_capture_topology(facts, d), d)


def with_node_runtime(
    facts: HostFacts, run: Runner = run_command, root: Path = Path("/"), label: str | None = None
) -> HostFacts:
    """``facts`` with the node below NVML (:func:`gpulab.host.node_runtime.read_node_runtime`
    under ``root``); each mismatch it finds is also a warning, which the lab logs at preflight.
    Never fails the probe."""
    runtime = node_runtime.read_node_runtime(
        root,
        run,
        driver_version=facts.driver_version,
        nvml_bus_ids=[g.pci_bus_id or "" for g in facts.gpus],
        simulated=facts.simulated,
        label=label,
    )
    lines = tuple(f"[{f.id}] {f.observed}; fix: {f.fix}" for f in runtime.findings)
    return replace(facts, node_runtime=runtime, warnings=(*facts.warnings, *lines))


#: A capture's node root (``root/``: files as under ``/``) and the toolkit CLI's answer.
CAPTURE_ROOT: Final = "root"
CAPTURE_TOOLKIT: Final = "nvidia-ctk-version.txt"


def with_capture_node_runtime(facts: HostFacts, directory: Path) -> HostFacts:
    """``facts`` with the capture's node root (``directory/root``) read as a host's; the toolkit
    CLI answers with ``directory/nvidia-ctk-version.txt`` (no other command runs: any other is
    "not found"). Without a root, a note says so and ``node_runtime`` stays None."""
    root = directory / CAPTURE_ROOT
    if not root.is_dir():
        return replace(
            facts, notes=(*facts.notes, f"node runtime not read: the capture {directory.name} has no root/")
        )
    answer = directory / CAPTURE_TOOLKIT

    def run(argv: Sequence[str]) -> tuple[int | None, str, str]:
        if list(argv) == ["nvidia-ctk", "--version"] and answer.is_file():
            return 0, answer.read_text(), ""
        return None, "", ""

    return with_node_runtime(facts, run, root, f"capture:{directory.name}/{CAPTURE_ROOT}")


def with_capture_topology(facts: HostFacts, directory: Path) -> HostFacts:
    """``facts`` with the capture's topology (``topo-m.txt``, gpulab.host.topology_probe); without
    one, a note says so."""
    topo, note = read_capture_topology(directory, facts.count)
    return replace(facts, topology=topo, topology_note=note, notes=(*facts.notes, *([note] if note else [])))
