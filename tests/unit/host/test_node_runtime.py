"""The node below NVML's view (:mod:`gpulab.host.node_runtime`): what a root holds, each
mismatch a finding with its first fix, and the capture roots the simulated lab reads.

Upstream facts the module rests on, read in the sources at the versions named:

* NVIDIA/nvidia-container-toolkit v1.20.2, ``cmd/nvidia-ctk/runtime/configure/configure.go``:
  ``defaultDockerConfigFilePath = "/etc/docker/daemon.json"``, ``defaultContainerdConfigFilePath
  = "/etc/containerd/config.toml"``, ``defaultContainerdDropInConfigFilePath =
  "/etc/containerd/conf.d/99-nvidia.toml"``, ``defaultCrioConfigFilePath = "/etc/crio/crio.conf"``,
  ``defaultCrioDropInConfigFilePath = "/etc/crio/crio.conf.d/99-nvidia.toml"``;
  ``cmd/nvidia-ctk/main.go`` names the CLI ``NVIDIA Container Toolkit CLI`` (urfave/cli prints
  ``<name> version <v>``), ``internal/info/version.go`` adds ``commit: <sha>`` on a second line;
* tags.cncf.io/container-device-interface v1.1.1, ``pkg/cdi/spec-dirs.go``: ``DefaultStaticDir
  = "/etc/cdi"``, ``DefaultDynamicDir = "/var/run/cdi"``.

:func:`test_the_paths_are_upstream_s` re-reads them where the Go module cache holds those
versions (``go mod download``), and skips with the reason where it does not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpulab.host import node_runtime as nr
from gpulab.host import probe

BUS = "00000000:1B:00.0"
GONE = "0000:3d:00.0"


def _pci(root: Path, address: str, cls: str = "0x030200", vendor: str = "0x10de") -> None:
    d = root / "sys/bus/pci/devices" / address
    d.mkdir(parents=True)
    (d / "vendor").write_text(vendor + "\n")
    (d / "class").write_text(cls + "\n")
    (d / "device").write_text("0x2335\n")


def _runner(ctk: str | None, smi_q: str = ""):  # type: ignore[no-untyped-def]
    calls: list[list[str]] = []

    def run(argv):  # type: ignore[no-untyped-def]
        calls.append(list(argv))
        if argv[0] == "nvidia-ctk":
            return (0, ctk, "") if ctk else (None, "", "")
        if argv[:2] == ["nvidia-smi", "-q"]:
            return 0, smi_q, ""
        return None, "", ""

    return run, calls


def _broken_host(root: Path) -> None:
    """A host as failure reports describe them: the toolkit made nvidia containerd's default,
    a CDI spec left from the driver before an upgrade, a GPU the kernel lost, an NVSwitch
    system whose fabric manager never started."""
    (root / "etc/containerd/conf.d").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(
        'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    )
    (root / "etc/containerd/conf.d/99-nvidia.toml").write_text(
        "version = 3\n"
        '[plugins."io.containerd.cri.v1.runtime"]\n'
        "  enable_cdi = true\n"
        '[plugins."io.containerd.cri.v1.runtime".containerd]\n'
        '  default_runtime_name = "nvidia"\n'
        '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]\n'
        '  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
    )
    (root / "var/run/cdi").mkdir(parents=True)
    (root / "var/run/cdi/nvidia.yaml").write_text(
        "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: '0'\n- name: all\n"
        "containerEdits:\n  mounts:\n  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06\n"
    )
    _pci(root, "0000:1b:00.0")
    _pci(root, GONE)
    _pci(root, "0000:05:00.0", cls="0x068000")  # an NVSwitch
    _pci(root, "0000:00:1f.3", cls="0x040300", vendor="0x8086")  # not NVIDIA: not counted
    (root / "var/log").mkdir(parents=True)
    (root / "var/log/kern.log").write_text(
        "Dec  3 10:00:00 host kernel: NVRM: GPU at PCI:0000:3d:00: GPU-b\n"
        "Dec  3 10:00:01 host kernel: NVRM: GPU 0000:3d:00.0: GPU has fallen off the bus.\n"
        "Dec  3 10:00:02 host kernel: e1000e 0000:00:1f.6: link up\n"
    )


SMI_Q = (
    "GPU 00000000:1B:00.0\n    Fabric\n"
    "        State                  : In Progress\n        Status                 : N/A\n"
)


def test_a_broken_host_gives_one_finding_per_mismatch_each_with_its_fix(tmp_path: Path) -> None:
    _broken_host(tmp_path)
    run, calls = _runner("NVIDIA Container Toolkit CLI version 1.17.3\ncommit: 0000000\n", SMI_Q)
    facts = nr.read_node_runtime(tmp_path, run, driver_version="580.159.04", nvml_bus_ids=[BUS])
    doc = json.loads(json.dumps(facts.to_json()))
    (containerd, dropin) = doc["runtimes"]
    assert containerd["path"] == "/etc/containerd/config.toml" and containerd["nvidiaRuntimes"] == []
    assert (
        dropin["nvidiaRuntimes"] == ["nvidia"]
        and dropin["defaultRuntime"] == "nvidia"
        and dropin["cdi"] is True
    )
    assert doc["cdi"] == [
        {
            "path": "/var/run/cdi/nvidia.yaml",
            "kind": "nvidia.com/gpu",
            "devices": 2,
            "driverVersion": "570.124.06",
            "error": None,
        }
    ]
    assert doc["toolkit"] == "1.17.3" and doc["toolkitAdvisories"] == ["CVE-2025-23359", "CVE-2025-23266"]
    assert [(g["address"], g["inNvml"]) for g in doc["pciGpus"]] == [("0000:1b:00.0", True), (GONE, False)]
    assert doc["pciGpus"][1]["kernel"][-1].endswith("GPU has fallen off the bus.")
    assert doc["nvswitches"] == 1 and doc["fabric"] == ["In Progress/N/A"]
    by_id: dict[str, list[dict[str, str]]] = {}
    for f in doc["findings"]:
        by_id.setdefault(f["id"], []).append(f)
    assert sorted(by_id) == [
        "cdi-spec-stale",
        "fabric-not-ready",
        "gpu-on-pci-not-in-nvml",
        "toolkit-advisory",
    ]
    assert (
        "generated for driver 570.124.06; driver 580.159.04 is loaded"
        in by_id["cdi-spec-stale"][0]["observed"]
    )
    assert "nvidia-ctk cdi generate" in by_id["cdi-spec-stale"][0]["fix"]
    assert (
        len(by_id["toolkit-advisory"]) == 2
        and "upgrade the NVIDIA Container Toolkit" in by_id["toolkit-advisory"][0]["fix"]
    )
    lost = by_id["gpu-on-pci-not-in-nvml"][0]
    assert (
        GONE in lost["observed"]
        and "fallen off the bus" in lost["observed"]
        and "nvidia-smi -r" in lost["fix"]
    )
    assert "nvidia-fabricmanager" in by_id["fabric-not-ready"][0]["fix"]
    assert all(f.blocking is False for f in facts.findings)
    assert ["nvidia-smi", "-q"] in calls  # asked only because an NVSwitch is on the bus


def test_what_cannot_be_read_is_said_never_raised(tmp_path: Path) -> None:
    (tmp_path / "etc/docker").mkdir(parents=True)
    (tmp_path / "etc/docker/daemon.json").write_text('{"runtimes": {"nvidia": ')
    run, calls = _runner(None)
    facts = nr.read_node_runtime(tmp_path, run, driver_version="580.159.04", nvml_bus_ids=[BUS])
    assert facts.runtimes[0].error is not None and facts.toolkit is None
    assert [f.id for f in facts.findings] == ["runtime-config-unreadable"]
    assert any("nvidia-ctk --version` not found" in u for u in facts.unread)
    assert any(u.startswith("PCI bus: ") for u in facts.unread)
    assert ["nvidia-smi", "-q"] not in calls  # no NVSwitch: the fabric is not asked


def test_advisories_follow_the_cve_records_ranges() -> None:
    assert nr.advisories_for("1.16.1") == ("CVE-2024-0132", "CVE-2025-23359", "CVE-2025-23266")
    assert nr.advisories_for("1.16.2") == ("CVE-2025-23359", "CVE-2025-23266")
    assert nr.advisories_for("1.17.7") == ("CVE-2025-23266",)
    assert nr.advisories_for("1.17.8") == () and nr.advisories_for("1.20.2") == ()


@pytest.mark.parametrize("capture,gpus", [("h200-1gpu", 1), ("h200-2gpu", 2)])
def test_the_simulated_lab_reads_its_capture_root_and_finds_it_consistent(capture: str, gpus: int) -> None:
    facts = probe.probe_capture(capture)
    rt = facts.node_runtime
    assert rt is not None and rt.simulated and rt.root == f"capture:{capture}/root"
    assert rt.toolkit == "1.20.2" and rt.findings == () and rt.unread == ()
    assert [r.nvidia_runtimes for r in rt.runtimes] == [("nvidia",)]
    assert rt.cdi[0].driver_version == facts.driver_version
    assert len(rt.pci_gpus) == gpus and all(g.in_nvml for g in rt.pci_gpus)


def test_a_capture_without_a_root_says_so(tmp_path: Path) -> None:
    d = tmp_path / "x"
    d.mkdir()
    for name in ("query-gpu.csv", "nvidia-smi.txt"):
        (d / name).write_text((Path(probe.CAPTURES_DIR) / "h200-1gpu" / name).read_text())
    facts = probe.probe_capture("x", captures_dir=tmp_path)
    assert facts.node_runtime is None
    assert "node runtime not read: the capture x has no root/" in facts.notes


def _module(path: str) -> Path:
    cache = Path(os.environ.get("GOMODCACHE") or Path.home() / "go" / "pkg" / "mod")
    d = cache / path
    if not d.is_dir():
        pytest.skip(f"{path} is not in the Go module cache ({cache}): `go mod download` it to re-read")
    return d


def test_the_paths_are_upstream_s() -> None:
    ctk = _module("github.com/!n!v!i!d!i!a/nvidia-container-toolkit@v1.20.2")
    configure = (ctk / "cmd/nvidia-ctk/runtime/configure/configure.go").read_text()
    for _, rel in nr.RUNTIME_FILES:
        assert f'"/{rel}"' in configure, rel
    assert '"NVIDIA Container Toolkit CLI"' in (ctk / "cmd/nvidia-ctk/main.go").read_text()
    assert '"commit: "' in (ctk / "internal/info/version.go").read_text()
    cdi = (_module("tags.cncf.io/container-device-interface@v1.1.1") / "pkg/cdi/spec-dirs.go").read_text()
    for rel in nr.CDI_DIRS:
        assert f'"/{rel}"' in cdi, rel


def test_destroy_names_a_runtime_file_changed_since_up(tmp_path: Path) -> None:
    (tmp_path / "etc/docker").mkdir(parents=True)
    daemon = tmp_path / "etc/docker/daemon.json"
    daemon.write_text('{"runtimes": {}}')
    run, _ = _runner(None)
    at_up = nr.read_node_runtime(tmp_path, run, driver_version=None, nvml_bus_ids=[]).to_json()
    assert (
        nr.runtime_changes(at_up, nr.read_node_runtime(tmp_path, run, driver_version=None, nvml_bus_ids=[]))
        == []
    )
    daemon.write_text(
        '{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}, "default-runtime": "nvidia"}'
    )
    (tmp_path / "etc/containerd/conf.d").mkdir(parents=True)
    (tmp_path / "etc/containerd/conf.d/99-nvidia.toml").write_text("version = 3\n")
    now = nr.read_node_runtime(tmp_path, run, driver_version=None, nvml_bus_ids=[])
    lines = nr.runtime_changes(at_up, now)
    assert len(lines) == 2
    assert lines[0].startswith("/etc/containerd/conf.d/99-nvidia.toml appeared while the lab ran")
    assert lines[1].startswith("/etc/docker/daemon.json changed while the lab ran (sha256 ")
    assert nr.runtime_changes(None, now) == []


def test_the_card_shows_each_mismatch_with_its_first_fix(tmp_path: Path) -> None:
    from gpulab.verdict.card import hardware

    _broken_host(tmp_path)
    run, _ = _runner("NVIDIA Container Toolkit CLI version 1.17.3\n", SMI_Q)
    facts = nr.read_node_runtime(tmp_path, run, driver_version="580.159.04", nvml_bus_ids=[BUS], label="/")
    md = "\n".join(hardware.markdown_node_runtime({"value": facts.to_json(), "simulated": False}))
    dropin = "containerd config /etc/containerd/conf.d/99-nvidia.toml"
    assert f"| {dropin} | nvidia runtimes nvidia; default nvidia; CDI on;" in md
    assert "| PCI census | 2 NVIDIA GPU(s) on the bus, 1 of them listed by NVML; 1 NVSwitch(es) |" in md
    assert "Findings: 5" in md
    for f in facts.findings:
        assert f"- `{f.id}`: {f.observed}. First fix: {f.fix}" in md
