"""Host probe: what GPUs, driver and CUDA ceiling this machine has.

Three sources, one result shape (:class:`HostFacts`):

* NVML (a GPU host, :mod:`gpulab.nvml`): the driver's own library through ``pynvml``; no
  text is parsed. ``source`` ``"nvml"``.
* ``nvidia-smi`` (a GPU host): ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``
  for the GPUs, a separate ``--query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending``
  for the MIG mode (an old driver that does not know those fields fails that query alone; the
  MIG mode is then None and a note says why), and the plain ``nvidia-smi`` table header for
  the newest CUDA the driver supports. The exit code is checked first; an error message is
  never parsed as a table. ``source`` ``"nvidia-smi"``.
* a capture (the simulated lab): real nvidia-smi output recorded on H200 hosts and
  shipped in ``gpulab/captures/<name>/``; the facts are real but not *this* machine's, so
  ``simulated`` is true and the source says which capture.

:func:`probe_host` is the host probe: NVML where it loads and answers, nvidia-smi otherwise.
On an H200 host both give the same facts (``tests/data/device-h200/``). The command runner
and the NVML loader are injectable so the probe is tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpulab import nvsmi
from gpulab.preflight import Finding, PreflightError, check_nvidia_smi
from gpulab.run import Probe, probe

if TYPE_CHECKING:  # gpulab.topology imports gpulab.nvml, which imports this module
    from gpulab.topology import Topology

CAPTURES_DIR = Path(__file__).resolve().parent / "captures"

#: (argv) -> (returncode or None when the program is missing, stdout, stderr): the host
#: checks' convention of the one runner (gpulab.run).
Runner = Probe
run_command = probe


@dataclass(frozen=True)
class HostFacts:
    """GPU facts of the host (or of a capture).

    Attributes:
        gpus: one :class:`gpulab.nvsmi.GpuInfo` per physical GPU (MIG instances excluded).
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
    ``mig_devices``: the MIG devices ``nvidia-smi -L`` lists (:class:`gpulab.nvsmi.MigDevice`:
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
    #: How the GPUs are linked (gpulab.host_topology: NVML, else ``nvidia-smi topo -m``, or the
    #: capture's ``topo-m.txt``); None when not read, and then ``topology_note`` says why.
    topology: Topology | None = None
    topology_note: str | None = None

    @property
    def count(self) -> int:
        return len(self.gpus)

    @property
    def models(self) -> list[str]:
        return sorted({g.name for g in self.gpus})

    def gpus_json(self) -> list[dict[str, int | str | None]]:
        """Per-GPU dicts (:meth:`gpulab.nvsmi.GpuInfo.to_json`), the ``hostGpus`` output."""
        return [g.to_json() for g in self.gpus]

    def topology_json(self) -> dict[str, Any]:
        """The ``hostTopology`` output (:func:`gpulab.host_topology.output_json`)."""
        from gpulab.host_topology import output_json

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
        topology=_topology_from_json(doc.get("topology")),
        topology_note=doc.get("topologyNote"),
    )


def _topology_from_json(doc: dict[str, Any] | None) -> Topology | None:
    from gpulab.host_topology import topology_from_json

    return None if doc is None else topology_from_json(doc)


#: Per-GPU fields :func:`compare_facts` compares (``compute_cap`` only where both sides have it:
#: the nvidia-smi path does not ask for it, see :data:`gpulab.nvsmi.QUERY_FIELDS`).
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


def _with_mig(gpus: list[nvsmi.GpuInfo], mig_csv: str) -> list[nvsmi.GpuInfo]:
    """Fill the MIG fields from the separate MIG query, matched by index (and bus id).

    Raises:
        gpulab.nvsmi.NvidiaSmiParseError: unreadable MIG rows, or rows that name other GPUs.
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

    ``mig_csv``: the output of :func:`gpulab.nvsmi.mig_query_command`, or None when it was not
    run or failed (the MIG fields then keep what ``query_csv`` carried, usually None).

    Raises:
        gpulab.nvsmi.NvidiaSmiParseError: unparseable output (the message quotes it).
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
        gpulab.nvsmi.NvidiaSmiParseError: output in an unknown format.
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
    :func:`gpulab.nvml.load_pynvml`. When NVML is not used, ``notes`` says why (e.g. the
    binding is not installed) and the facts come from :func:`probe_nvidia_smi`.

    Raises:
        PreflightError: neither source works; lists NVML's cause and fix, then nvidia-smi's.
        gpulab.nvsmi.NvidiaSmiParseError: NVML failed and nvidia-smi printed something
            unparseable.
    """
    from gpulab import nvml

    loader = nvml_loader or nvml.load_pynvml
    try:
        return with_topology(with_mig_listing(nvml.probe_nvml(loader), run), run, loader)
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
    """``facts`` with the host's topology (:func:`gpulab.host_topology.read_host_topology`:
    NVML through ``nvml_loader`` when given, else ``nvidia-smi topo -m``). A failure is a note
    (``topology_note`` and ``notes``), never a preflight failure."""
    from gpulab.host_topology import read_host_topology

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
    :func:`gpulab.nvsmi.mig_query_command`; without it the MIG mode is None) and
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
    return with_capture_topology(facts, d)


def with_capture_topology(facts: HostFacts, directory: Path) -> HostFacts:
    """``facts`` with the capture's topology (``topo-m.txt``, gpulab.host_topology); without
    one, a note says so."""
    from gpulab.host_topology import read_capture_topology

    topo, note = read_capture_topology(directory, facts.count)
    return replace(facts, topology=topo, topology_note=note, notes=(*facts.notes, *([note] if note else [])))
