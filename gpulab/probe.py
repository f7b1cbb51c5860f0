"""Host probe: what GPUs, driver and CUDA ceiling this machine has.

Two sources, one result shape (:class:`HostFacts`):

* ``nvidia-smi`` (a GPU host): ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits``
  for the GPUs and the plain ``nvidia-smi`` table header for the newest CUDA the driver
  supports. The exit code is checked first; an error message is never parsed as a table.
* a capture (the simulated lab): real nvidia-smi output recorded on H200 hosts and
  shipped in ``gpulab/captures/<name>/``; the facts are real but not *this* machine's, so
  ``simulated`` is true and the source says which capture.

The command runner is injectable so the probe is tested without a GPU.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpulab import nvsmi
from gpulab.preflight import Finding, PreflightError, check_nvidia_smi

CAPTURES_DIR = Path(__file__).resolve().parent / "captures"

#: (argv) -> (returncode or None when the program is missing, stdout, stderr)
Runner = Callable[[Sequence[str]], tuple[int | None, str, str]]


def run_command(argv: Sequence[str], timeout: int = 60) -> tuple[int | None, str, str]:
    """Run argv; ``(None, "", reason)`` when the program is not on PATH."""
    if shutil.which(argv[0]) is None:
        return None, "", f"{argv[0]}: not found on PATH"
    try:
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} timed out after {timeout}s"
    return p.returncode, p.stdout, p.stderr


@dataclass(frozen=True)
class HostFacts:
    """GPU facts of the host (or of a capture).

    Attributes:
        gpus: one :class:`gpulab.nvsmi.GpuInfo` per physical GPU (MIG instances excluded).
        driver_version: e.g. ``"580.159.04"``.
        max_cuda: newest CUDA the driver supports, e.g. ``"13.0"`` (None on very old drivers).
        source: ``"nvidia-smi"`` or ``"capture:<name>"``.
        simulated: True when the facts are not this machine's.
        warnings: human-readable notes (e.g. mixed GPU models).
    """

    gpus: tuple[nvsmi.GpuInfo, ...]
    driver_version: str
    max_cuda: str | None
    source: str
    simulated: bool
    warnings: tuple[str, ...] = field(default=())

    @property
    def count(self) -> int:
        return len(self.gpus)

    @property
    def models(self) -> list[str]:
        return sorted({g.name for g in self.gpus})

    def gpus_json(self) -> list[dict[str, int | str | None]]:
        return [g.to_json() for g in self.gpus]


def facts_from_outputs(query_csv: str, table: str, source: str, simulated: bool) -> HostFacts:
    """Build :class:`HostFacts` from recorded ``--query-gpu`` CSV and plain table output.

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
    """Probe this host with nvidia-smi.

    Raises:
        PreflightError: nvidia-smi missing or failing (cause and first fix).
        gpulab.nvsmi.NvidiaSmiParseError: output in an unknown format.
    """
    rc, out, err = run(nvsmi.query_command())
    finding = check_nvidia_smi(rc, out, err)
    if not finding.ok:
        raise PreflightError([finding])
    rc2, table, err2 = run(["nvidia-smi"])
    finding2 = check_nvidia_smi(rc2, table, err2)
    if not finding2.ok:
        raise PreflightError([finding2])
    return facts_from_outputs(out, table, "nvidia-smi", simulated=False)


def probe_capture(name: str, captures_dir: Path = CAPTURES_DIR) -> HostFacts:
    """Read the shipped capture ``name`` (e.g. ``"h200-1gpu"``); the result is simulated.

    Raises:
        FileNotFoundError: no such capture (names the directory searched).
    """
    d = captures_dir / name
    csv_path, table_path = d / "query-gpu.csv", d / "nvidia-smi.txt"
    if not csv_path.is_file() or not table_path.is_file():
        known = sorted(p.name for p in captures_dir.iterdir()) if captures_dir.is_dir() else []
        raise FileNotFoundError(f"capture {name!r} not found in {captures_dir} (known: {known})")
    return facts_from_outputs(csv_path.read_text(), table_path.read_text(), f"capture:{name}", simulated=True)
