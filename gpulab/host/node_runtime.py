"""The node below NVML's view: container runtime configuration, CDI specs, the container
toolkit's version, the GPUs on the PCI bus and the NVSwitch fabric.

NVML and the Kubernetes API say what the driver and the kubelet see. What lives underneath
stays invisible until a Pod fails: a runtime configuration the toolkit changed, a CDI spec
generated for a driver that is no longer loaded, a toolkit with published advisories, a GPU
the kernel found on the PCI bus that NVML does not list, an NVSwitch fabric that never
initialised. :func:`read_node_runtime` reads each under a root directory (``/`` on a host, a
shipped root in the simulated lab) and returns a :class:`NodeRuntime`: the facts (the card's
``nodeRuntime``) and one :class:`~gpulab.core.findings.Finding` per mismatch, each with its
first fix. Never raises for what it cannot read: that is listed in ``unread`` with the reason.

Where each fact lives, at the versions the lab targets:

* runtime configuration files: ``/etc/docker/daemon.json``, ``/etc/containerd/config.toml``
  and its drop-in ``/etc/containerd/conf.d/99-nvidia.toml``, ``/etc/crio/crio.conf`` and
  ``/etc/crio/crio.conf.d/99-nvidia.toml``: the files ``nvidia-ctk runtime configure`` writes
  (NVIDIA/nvidia-container-toolkit v1.20.2, ``cmd/nvidia-ctk/runtime/configure/configure.go``);
* CDI specs: ``/etc/cdi`` and ``/var/run/cdi`` (``DefaultStaticDir``, ``DefaultDynamicDir``:
  tags.cncf.io/container-device-interface v1.1.1, ``pkg/cdi/spec-dirs.go``); NVIDIA's spec
  mounts the driver's libraries by their versioned names (``libcuda.so.<driver version>``),
  which says the driver it was generated for;
* the toolkit's version: ``nvidia-ctk --version`` prints ``NVIDIA Container Toolkit CLI version
  <v>`` (``cmd/nvidia-ctk/main.go``, ``internal/info/version.go``, v1.20.2), else
  ``nvidia-container-cli --version`` (``cli-version: <v>``);
* the PCI bus: ``/sys/bus/pci/devices/<address>/{vendor,class}``: NVIDIA is vendor ``0x10de``,
  a GPU class ``0x0300xx`` (VGA) or ``0x0302xx`` (3D controller), an NVSwitch ``0x0680xx``;
  the kernel's own lines about a device are the driver's ``NVRM:`` lines in the kernel log;
* the fabric: ``nvidia-smi -q``'s ``Fabric`` section per GPU (``State``, ``Status``), read
  only where NVSwitches are on the bus.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from gpulab.core.findings import Finding, Status

#: (argv) -> (returncode or None when the program is missing, stdout, stderr).
Runner = Callable[[Sequence[str]], tuple[int | None, str, str]]

#: Runtime configuration files by engine (nvidia-ctk's defaults, v1.20.2).
RUNTIME_FILES: Final[tuple[tuple[str, str], ...]] = (
    ("docker", "etc/docker/daemon.json"),
    ("containerd", "etc/containerd/config.toml"),
    ("containerd", "etc/containerd/conf.d/99-nvidia.toml"),
    ("crio", "etc/crio/crio.conf"),
    ("crio", "etc/crio/crio.conf.d/99-nvidia.toml"),
)
#: Where CDI specs are read from (the CDI spec's default directories).
CDI_DIRS: Final = ("etc/cdi", "var/run/cdi")
#: Kernel logs searched for the driver's lines about a PCI device.
KERNEL_LOGS: Final = ("var/log/kern.log", "var/log/messages", "var/log/dmesg")
NVIDIA_VENDOR: Final = "0x10de"

#: Published advisories of the NVIDIA Container Toolkit: (id, last affected version, what,
#: source). A toolkit at or below the version is affected. CVE-2024-0132 and CVE-2025-23266:
#: read in their CVE records (CVEProject/cvelistV5, the source column); CVE-2025-23359's range
#: ("1.17.3 and below") from a cloud provider's advisory, its CVE record not read here.
TOOLKIT_ADVISORIES: Final[tuple[tuple[str, str, str, str], ...]] = (
    (
        "CVE-2024-0132",
        "1.16.1",
        "TOCTOU: a crafted image may gain access to the host file system (not with CDI)",
        "https://raw.githubusercontent.com/CVEProject/cvelistV5/main/cves/2024/0xxx/CVE-2024-0132.json",
    ),
    (
        "CVE-2025-23359",
        "1.17.3",
        "TOCTOU in the CUDA compat path: a crafted image may mount host directories",
        "https://www.cve.org/CVERecord?id=CVE-2025-23359",
    ),
    (
        "CVE-2025-23266",
        "1.17.7",
        "a hook that initialises the container runs attacker code with elevated permissions "
        "(CDI mode only before 1.17.5)",
        "https://raw.githubusercontent.com/CVEProject/cvelistV5/main/cves/2025/23xxx/CVE-2025-23266.json",
    ),
)

_LIB_VERSION_RE: Final = re.compile(r"lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)")
_CTK_VERSION_RE: Final = re.compile(r"(?:version|cli-version:)\s+v?(\d+\.\d+\.\d+(?:[-~][\w.]+)?)")
_FABRIC_RE: Final = re.compile(r"^\s*Fabric\s*$\n^\s*State\s*:\s*(.+?)\s*$\n^\s*Status\s*:\s*(.+?)\s*$", re.M)


@dataclass(frozen=True)
class RuntimeConfig:
    """One runtime configuration file as found: ``engine`` (docker, containerd, crio),
    ``path`` (as on the host), ``sha256`` (of its bytes), ``nvidia_runtimes`` (the runtimes
    it declares whose name or binary says nvidia), ``default_runtime`` (None: the engine's
    own), ``cdi`` (CDI switched on: True/False, None where the file does not say), ``error``
    (why it could not be parsed; then the rest is empty)."""

    engine: str
    path: str
    sha256: str
    nvidia_runtimes: tuple[str, ...] = ()
    default_runtime: str | None = None
    cdi: bool | None = None
    error: str | None = None


@dataclass(frozen=True)
class CdiSpec:
    """One CDI spec file: ``path``, ``kind`` (``nvidia.com/gpu``), ``devices`` (how many it
    names), ``driver_version`` (of the libraries it mounts; None when it mounts none by a
    versioned name), ``error`` (why it could not be parsed)."""

    path: str
    kind: str | None = None
    devices: int = 0
    driver_version: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class PciGpu:
    """An NVIDIA GPU on the PCI bus: ``address`` (sysfs form, ``0000:1b:00.0``), ``device``
    (the PCI device id), ``in_nvml`` (NVML lists a GPU at that address), ``kernel`` (the
    driver's kernel log lines about it, newest last, at most five)."""

    address: str
    device: str
    in_nvml: bool
    kernel: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeRuntime:
    """What :func:`read_node_runtime` found. ``root``: where it read; ``simulated``: a shipped
    root, not this machine; ``runtimes``, ``cdi``: the files found; ``toolkit``: the
    toolkit's version (None: no toolkit CLI answered) and ``toolkit_advisories`` (the ids of
    :data:`TOOLKIT_ADVISORIES` that version is affected by); ``pci_gpus``; ``nvswitches``
    (NVSwitches on the bus); ``fabric`` (per GPU ``State/Status`` of its Fabric section, only
    with NVSwitches); ``unread``: what could not be read, and why; ``findings``."""

    root: str
    simulated: bool
    runtimes: tuple[RuntimeConfig, ...] = ()
    cdi: tuple[CdiSpec, ...] = ()
    toolkit: str | None = None
    toolkit_advisories: tuple[str, ...] = ()
    pci_gpus: tuple[PciGpu, ...] = ()
    nvswitches: int = 0
    fabric: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The ``nodeRuntime`` output: every field, findings as ``{id, status, observed, fix}``."""
        doc = _camel_keys(asdict(self))
        doc["findings"] = [
            {"id": f.id, "status": str(f.status), "observed": f.observed, "fix": f.fix} for f in self.findings
        ]
        return doc


def _camel_keys(value: Any) -> Any:
    """``value`` with every mapping key in camelCase (``nvidia_runtimes`` -> ``nvidiaRuntimes``)."""
    if isinstance(value, Mapping):
        return {re.sub(r"_(\w)", lambda m: m.group(1).upper(), k): _camel_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_camel_keys(v) for v in value]
    return value


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v.split("-")[0].split("~")[0])[:3])


def advisories_for(version: str) -> tuple[str, ...]:
    """The ids of :data:`TOOLKIT_ADVISORIES` that toolkit ``version`` (``"1.17.3"``) is
    affected by (at or below the row's last affected version)."""
    have = _version_tuple(version)
    return tuple(cve for cve, last, _, _ in TOOLKIT_ADVISORIES if have <= _version_tuple(last))


def _walk(doc: Any) -> Iterable[tuple[str, Any]]:
    """Every (key, value) pair of a nested mapping, depth first."""
    if isinstance(doc, Mapping):
        for k, v in doc.items():
            yield str(k), v
            yield from _walk(v)


def parse_runtime_config(engine: str, path: str, data: bytes) -> RuntimeConfig:
    """Read one runtime configuration file (``data``: its bytes). docker's is JSON
    (``runtimes``, ``default-runtime``, ``features.cdi``); containerd's and CRI-O's TOML, read
    by key wherever the version of the format puts it (``runtimes`` tables, ``BinaryName`` /
    ``runtime_path``, ``default_runtime_name`` / ``default_runtime``, ``enable_cdi``).
    A file that does not parse comes back with ``error`` set."""
    digest = hashlib.sha256(data).hexdigest()
    try:
        doc = json.loads(data) if engine == "docker" else tomllib.loads(data.decode())
    except (ValueError, UnicodeDecodeError) as exc:
        return RuntimeConfig(engine, path, digest, error=f"{type(exc).__name__}: {exc}")
    nvidia: list[str] = []
    default: str | None = None
    cdi: bool | None = None
    if engine == "docker":
        runtimes = doc.get("runtimes") or {}
        nvidia = [n for n, spec in runtimes.items() if "nvidia" in f"{n} {json.dumps(spec)}".lower()]
        default = doc.get("default-runtime")
        features = doc.get("features") or {}
        cdi = features.get("cdi") if isinstance(features.get("cdi"), bool) else None
    else:
        for key, value in _walk(doc):
            if key == "runtimes" and isinstance(value, Mapping):
                nvidia += [n for n, spec in value.items() if "nvidia" in f"{n} {spec}".lower()]
            elif key in ("default_runtime_name", "default_runtime") and isinstance(value, str):
                default = value
            elif key == "enable_cdi" and isinstance(value, bool):
                cdi = value
    return RuntimeConfig(engine, path, digest, tuple(sorted(set(nvidia))), default, cdi)


def parse_cdi_spec(path: str, text: str) -> CdiSpec:
    """Read one CDI spec (YAML or JSON): its ``kind``, device count and the driver version of
    the NVIDIA libraries it mounts. An unreadable spec comes back with ``error`` set."""
    import yaml  # a dependency of the lab already (gpulab.core.yamlio)

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return CdiSpec(path, error=f"YAML: {str(exc).splitlines()[0]}")
    if not isinstance(doc, Mapping):
        return CdiSpec(path, error="not a CDI spec (no mapping at the top)")
    versions = sorted(set(_LIB_VERSION_RE.findall(text)))
    return CdiSpec(
        path,
        kind=doc.get("kind") if isinstance(doc.get("kind"), str) else None,
        devices=len(doc.get("devices") or []),
        driver_version=versions[-1] if versions else None,
    )


def _bus_key(address: str) -> str:
    """``00000000:1B:00.0`` (NVML, nvidia-smi) and ``0000:1b:00.0`` (sysfs) as one key."""
    parts = address.strip().lower().split(":")
    if len(parts) == 3:
        return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"
    return "0000:" + ":".join(parts)


def read_pci(root: Path) -> tuple[list[tuple[str, str]], int, str | None]:
    """NVIDIA GPUs (address, device id) and the NVSwitch count on the PCI bus under ``root``;
    the third value says why the bus could not be read (then the lists are empty)."""
    devices = root / "sys/bus/pci/devices"
    if not devices.is_dir():
        return [], 0, f"PCI bus: {devices} not readable"
    gpus: list[tuple[str, str]] = []
    switches = 0
    for d in sorted(devices.iterdir()):
        try:
            vendor = (d / "vendor").read_text().strip().lower()
            cls = (d / "class").read_text().strip().lower()
        except OSError:
            continue
        if vendor != NVIDIA_VENDOR:
            continue
        if cls.startswith(("0x0300", "0x0302")):
            dev = (d / "device").read_text().strip() if (d / "device").is_file() else "?"
            gpus.append((d.name.lower(), dev))
        elif cls.startswith("0x0680"):
            switches += 1
    return gpus, switches, None


def _nvrm_lines(root: Path) -> list[str]:
    """The driver's ``NVRM`` lines of the kernel logs under ``root``, oldest first (each log read
    once, line by line: a long-lived host's kern.log can be large)."""
    lines: list[str] = []
    for rel in KERNEL_LOGS:
        try:
            with (root / rel).open(errors="replace") as f:
                lines += [ln.strip() for ln in f if "NVRM" in ln]
        except OSError:
            continue
    return lines


def _kernel_lines(nvrm: list[str], address: str) -> tuple[str, ...]:
    """The last five of ``nvrm`` about PCI ``address`` (the kernel writes ``0000:1b:00.0`` or
    ``1b:00.0``)."""
    short = address.split(":", 1)[1]
    return tuple([ln for ln in nvrm if short in ln.lower()][-5:])


def _read_files(root: Path) -> tuple[list[RuntimeConfig], list[CdiSpec], list[str]]:
    runtimes: list[RuntimeConfig] = []
    unread: list[str] = []
    for engine, rel in RUNTIME_FILES:
        p = root / rel
        try:
            runtimes.append(parse_runtime_config(engine, f"/{rel}", p.read_bytes()))
        except FileNotFoundError:
            continue
        except OSError as exc:
            unread.append(f"/{rel}: {exc.strerror}")
    specs: list[CdiSpec] = []
    for rel in CDI_DIRS:
        d = root / rel
        for p in sorted(d.glob("*")) if d.is_dir() else []:
            if p.suffix in (".yaml", ".yml", ".json"):
                try:
                    specs.append(parse_cdi_spec(f"/{rel}/{p.name}", p.read_text()))
                except OSError as exc:
                    unread.append(f"/{rel}/{p.name}: {exc.strerror}")
    return runtimes, specs, unread


def toolkit_version(run: Runner) -> tuple[str | None, str | None]:
    """The installed toolkit's version from ``nvidia-ctk --version``, else ``nvidia-container-cli
    --version``; ``(None, why)`` when neither answers with a version."""
    tried = []
    for argv in (["nvidia-ctk", "--version"], ["nvidia-container-cli", "--version"]):
        rc, out, _ = run(argv)
        m = _CTK_VERSION_RE.search(out) if rc == 0 else None
        if m:
            return m.group(1), None
        tried.append(f"`{' '.join(argv)}` " + ("not found" if rc is None else f"exit {rc}"))
    return None, "toolkit: " + "; ".join(tried)


def read_node_runtime(
    root: Path,
    run: Runner,
    *,
    driver_version: str | None,
    nvml_bus_ids: Sequence[str],
    simulated: bool = False,
    label: str | None = None,
) -> NodeRuntime:
    """Read the node below NVML (see module docstring) under ``root`` (``Path("/")`` on a host)
    with ``run`` for the toolkit CLI and ``nvidia-smi -q``; compare with what NVML said
    (``driver_version``, ``nvml_bus_ids``: the GPUs' PCI bus ids in any of NVML's, nvidia-smi's
    or sysfs's forms). ``label`` names the root in the result (default: its path). Never raises
    for a missing or unreadable piece: it is in ``unread``."""
    runtimes, specs, unread = _read_files(root)
    toolkit, why = toolkit_version(run)
    if why:
        unread.append(why)
    found, switches, pci_why = read_pci(root)
    if pci_why:
        unread.append(pci_why)
    nvml = {_bus_key(b) for b in nvml_bus_ids if b}
    nvrm = _nvrm_lines(root) if found else []
    pci = tuple(PciGpu(a, dev, _bus_key(a) in nvml, _kernel_lines(nvrm, a)) for a, dev in found)
    fabric: tuple[str, ...] = ()
    if switches:
        rc, out, _ = run(["nvidia-smi", "-q"])
        fabric = tuple(f"{s}/{st}" for s, st in _FABRIC_RE.findall(out)) if rc == 0 else ()
        if rc != 0:
            unread.append("fabric: `nvidia-smi -q` " + ("not found" if rc is None else f"exit {rc}"))
    facts = NodeRuntime(
        root=label or str(root),
        simulated=simulated,
        runtimes=tuple(runtimes),
        cdi=tuple(specs),
        toolkit=toolkit,
        toolkit_advisories=advisories_for(toolkit) if toolkit else (),
        pci_gpus=pci,
        nvswitches=switches,
        fabric=fabric,
        unread=tuple(unread),
    )
    return replace(facts, findings=tuple(findings(facts, driver_version, nvml)))


def findings(facts: NodeRuntime, driver_version: str | None, nvml: set[str]) -> list[Finding]:
    """One finding per mismatch (none when all agree): each ``blocking=False`` (the lab goes
    on; the card and preflight's log show it) with its first fix."""
    out: list[Finding] = []
    sim = facts.simulated
    for r in facts.runtimes:
        if r.error:
            out.append(
                _warn(
                    "runtime-config-unreadable", f"{r.path} does not parse: {r.error}", f"fix {r.path}", sim
                )
            )
    for s in facts.cdi:
        if s.error:
            out.append(_warn("cdi-spec-unreadable", f"{s.path}: {s.error}", _CDI_FIX, sim))
        elif driver_version and s.driver_version and s.driver_version != driver_version:
            out.append(
                _warn(
                    "cdi-spec-stale",
                    f"{s.path} was generated for driver {s.driver_version}; "
                    f"driver {driver_version} is loaded",
                    _CDI_FIX,
                    sim,
                )
            )
    for cve in facts.toolkit_advisories:
        row = next(r for r in TOOLKIT_ADVISORIES if r[0] == cve)
        out.append(
            _warn(
                "toolkit-advisory",
                f"NVIDIA Container Toolkit {facts.toolkit} is affected by {cve} "
                f"(up to {row[1]}): {row[2]} ({row[3]})",
                "upgrade the NVIDIA Container Toolkit (`sudo apt-get install --only-upgrade "
                "nvidia-container-toolkit`, or your distribution's package manager) past "
                f"{row[1]}, then restart the container runtime",
                sim,
            )
        )
    missing = [g for g in facts.pci_gpus if not g.in_nvml]
    if missing and nvml:
        for g in missing:
            said = (
                f"; the kernel said: {g.kernel[-1]}"
                if g.kernel
                else "; no NVRM line about it in the kernel log"
            )
            out.append(
                _warn(
                    "gpu-on-pci-not-in-nvml",
                    f"GPU {g.address} (device {g.device}) is on the PCI bus but NVML does not list it{said}",
                    f"read `sudo dmesg | grep -i 'NVRM.*{g.address.split(':', 1)[1]}'`; a GPU that fell off "
                    "the bus needs a reset (`sudo nvidia-smi -r -i <index>`) or a reboot, "
                    "then `make lab` again",
                    sim,
                )
            )
    for i, state in enumerate(facts.fabric):
        if state.split("/")[0] != "Completed" or state.split("/")[-1] != "Success":
            out.append(
                _warn(
                    "fabric-not-ready",
                    f"GPU {i}: NVSwitch fabric State/Status is {state} with "
                    f"{facts.nvswitches} NVSwitch(es) on the bus",
                    "start the fabric manager of the same version as the driver: `sudo systemctl enable "
                    "--now nvidia-fabricmanager`, then `make lab` again",
                    sim,
                )
            )
    return out


_CDI_FIX: Final = (
    "generate the spec again for the loaded driver: "
    "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` "
    "(toolkit 1.18+: `sudo systemctl restart nvidia-cdi-refresh`)"
)


def _warn(check: str, observed: str, fix: str, simulated: bool) -> Finding:
    return Finding(check, Status.FAIL, observed, fix=fix, simulated=simulated, blocking=False)


def runtime_changes(recorded: Mapping[str, Any] | None, now: NodeRuntime) -> list[str]:
    """What changed in the runtime configuration files between ``recorded`` (a ``nodeRuntime``
    output: what the lab found at ``up``) and ``now`` (read again, e.g. after destroy): one line
    per file added, removed or changed (by sha256). ``[]`` when all are as found, or when
    nothing was recorded."""
    if not isinstance(recorded, Mapping):
        return []
    before: dict[str, Any] = {
        str(r.get("path")): r.get("sha256") for r in recorded.get("runtimes") or [] if isinstance(r, Mapping)
    }
    after: dict[str, Any] = {r.path: r.sha256 for r in now.runtimes}
    lines = []
    for path in sorted(set(before) | set(after)):
        was, now_sha = before.get(path), after.get(path)
        if was == now_sha:
            continue
        if was is None:
            lines.append(f"{path} appeared while the lab ran (sha256 {str(now_sha)[:12]})")
        elif now_sha is None:
            lines.append(f"{path} was removed while the lab ran (it had sha256 {str(was)[:12]})")
        else:
            lines.append(f"{path} changed while the lab ran (sha256 {str(was)[:12]} -> {str(now_sha)[:12]})")
    return lines
