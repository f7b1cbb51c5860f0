"""gpulab.host.nvml with a fake pynvml (shaped after what NVML answered on an H200, see
tests/data/device-h200/explore/nvml-dump.json), and the saved H200 NVML facts."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpulab.host import nvml, nvml_facts
from gpulab.host.facts import HostFacts

DEVICE = Path(__file__).resolve().parents[2] / "data" / "device-h200"
H200_BUS = "00000000:00:06.0"
H200_UUID = "GPU-00000000-0000-4000-8000-000000000000"


class FakeNVMLError(Exception):
    """Like pynvml.NVMLError: ``value`` is the NVML_ERROR_* code."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return {3: "Not Supported", 9: "Driver Not Loaded", 12: "NVML Shared Library Not Found"}.get(
            self.value, f"NVML error {self.value}"
        )


def _unsupported(*_: Any) -> Any:
    raise FakeNVMLError(3)


class FakeNvml:
    """A pynvml stand-in. ``gpus``: per GPU a dict of overrides (name, uuid, bus, mig, cpus,
    nodes, numa, nvlinks: {link: (remote bus, remote type)}, ancestors: {peer: level})."""

    NVMLError = FakeNVMLError
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(
        self,
        gpus: list[dict[str, Any]] | None = None,
        *,
        driver: str = "580.159.04",
        cuda: int | None = 13000,
        init_error: int | None = None,
    ) -> None:
        self.gpus = gpus if gpus is not None else [{}]
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.calls: list[str] = []

    def _g(self, h: int) -> dict[str, Any]:
        return self.gpus[h]

    def nvmlInit(self) -> None:
        self.calls.append("init")
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        if self.cuda is None:
            raise FakeNVMLError(3)
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return self._g(h).get("name", "NVIDIA H200")

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self._g(h).get("uuid", H200_UUID)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=self._g(h).get("total", 150754820096))

    def nvmlDeviceGetPciInfo(self, h: int) -> Any:
        # ctypes structure fields come back as bytes
        return SimpleNamespace(busId=self._g(h).get("bus", H200_BUS).encode())

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return (9, 0)

    def nvmlDeviceGetMigMode(self, h: int) -> list[int]:
        mig = self._g(h).get("mig", [0, 0])
        if mig is None:
            raise FakeNVMLError(3)
        return list(mig)

    def nvmlDeviceGetCpuAffinity(self, h: int, words: int) -> list[int]:
        return self._g(h).get("cpus", [0xFFFF])[:words]

    def nvmlDeviceGetMemoryAffinity(self, h: int, words: int, scope: int) -> list[int]:
        return self._g(h).get("nodes", [1])[:words]

    def nvmlDeviceGetNumaNodeId(self, h: int) -> int:
        numa = self._g(h).get("numa")
        if numa is None:
            raise FakeNVMLError(3)
        return int(numa)

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:
        ancestors = self._g(a).get("ancestors")
        if ancestors is None:
            raise FakeNVMLError(3)
        return int(ancestors[b])

    def _link(self, h: int, link: int) -> tuple[str, int]:
        links = self._g(h).get("nvlinks")
        if links is None or link not in links:
            raise FakeNVMLError(3)
        return links[link]

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        self._link(h, link)
        return 1

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: int, link: int) -> int:
        return self._link(h, link)[1]

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: int, link: int) -> Any:
        return SimpleNamespace(busId=self._link(h, link)[0].encode())


def test_reads_the_h200_facts_like_nvidia_smi_does() -> None:
    fake = FakeNvml()
    facts = nvml_facts.probe_nvml(lambda: fake)
    assert fake.calls == ["init", "shutdown"]
    assert facts.source == "nvml" and not facts.simulated
    assert (facts.driver_version, facts.max_cuda) == ("580.159.04", "13.0")
    (gpu,) = facts.gpus
    assert gpu.index == 0 and gpu.name == "NVIDIA H200" and gpu.uuid == H200_UUID
    assert gpu.memory_total_mib == 143771  # 150754820096 B, what nvidia-smi prints
    assert gpu.pci_bus_id == H200_BUS  # decoded from bytes
    assert (gpu.compute_cap, gpu.mig_mode, gpu.mig_mode_pending) == ("9.0", "Disabled", "Disabled")


def test_mig_enabled_pending_and_not_supported() -> None:
    fake = FakeNvml([{"mig": [1, 0]}, {"mig": None, "name": "NVIDIA L4", "bus": "00000000:00:07.0"}])
    facts = nvml_facts.probe_nvml(lambda: fake)
    assert [(g.mig_mode, g.mig_mode_pending) for g in facts.gpus] == [("Enabled", "Disabled"), (None, None)]
    assert facts.warnings and "2 different models" in facts.warnings[0]


def test_cuda_and_mig_words() -> None:
    assert nvml.cuda_version_text(13000) == "13.0"
    assert nvml.cuda_version_text(12040) == "12.4"
    assert nvml.cuda_version_text(11080) == "11.8"
    with pytest.raises(ValueError):
        nvml.cuda_version_text(0)
    assert nvml.mig_word(1) == "Enabled"
    with pytest.raises(ValueError, match="unknown NVML MIG mode"):
        nvml.mig_word(7)
    assert nvml_facts.probe_nvml(lambda: FakeNvml(cuda=None)).max_cuda is None


@pytest.mark.parametrize(
    ("code", "cause", "fix"),
    [
        (12, "libnvidia-ml.so.1", "install the NVIDIA driver"),
        (9, "kernel driver is not loaded", "modprobe nvidia"),
        (4, "no permission", "/dev/nvidia"),
        (18, "different versions", "reboot"),
        (999, "NVML failed", "nvidia-smi"),
    ],
)
def test_init_errors_name_the_cause_and_first_fix(code: int, cause: str, fix: str) -> None:
    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml_facts.probe_nvml(lambda: FakeNvml(init_error=code))
    finding = info.value.finding
    assert finding.check == nvml.CHECK_NVML and not finding.ok
    assert cause in finding.message and "nvmlInit" in finding.message
    assert fix in finding.fix


def test_missing_binding_names_the_pinned_package() -> None:
    def nothing(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml.load_pynvml(nothing)
    assert "pynvml" in info.value.finding.message
    assert nvml.PYNVML_REQUIREMENT in info.value.finding.fix
    requirements = (Path(__file__).resolve().parents[3] / "requirements.txt").read_text()
    assert nvml.PYNVML_REQUIREMENT in requirements.splitlines()


def test_no_gpu_is_a_failure_and_shutdown_still_runs() -> None:
    fake = FakeNvml([])
    with pytest.raises(nvml.NvmlUnavailable, match="no GPU"):
        nvml_facts.probe_nvml(lambda: fake)
    assert fake.calls == ["init", "shutdown"]


def test_a_required_call_failing_mid_read_is_reported() -> None:
    fake = FakeNvml()
    fake.nvmlDeviceGetName = lambda h: (_ for _ in ()).throw(FakeNVMLError(15))  # type: ignore[method-assign]
    with pytest.raises(nvml.NvmlUnavailable) as info:
        nvml_facts.probe_nvml(lambda: fake)
    assert "nvmlDeviceGetName" in info.value.finding.message
    assert "fallen off the bus" in info.value.finding.message


def test_bitmask_ranges() -> None:
    assert nvml.bitmask_ranges([0xFFFF]) == ((0, 15),)
    assert nvml.bitmask_ranges([0b1011]) == ((0, 1), (3, 3))
    assert nvml.bitmask_ranges([0, 1]) == ((64, 64),)
    assert nvml.bitmask_ranges([1 << 63, 1]) == ((63, 64),)
    assert nvml.bitmask_ranges([]) == ()


def test_saved_h200_nvml_facts_are_this_shape() -> None:
    saved = json.loads((DEVICE / "final" / "probe-nvml.json").read_text())
    assert saved["source"] == "nvml"
    assert saved["driverVersion"] == "580.159.04" and saved["maxCuda"] == "13.0"
    assert saved["gpus"][0]["migMode"] == "Disabled"
    rebuilt = HostFacts(
        gpus=(),
        driver_version=saved["driverVersion"],
        max_cuda=saved["maxCuda"],
        source="nvml",
        simulated=False,
    )
    assert rebuilt.to_json()["driverVersion"] == saved["driverVersion"]
