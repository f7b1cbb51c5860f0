"""gpulab.config.mig: the MIG strategies' resources, the lab's MIG plan, and preflight's MIG lines."""

from __future__ import annotations

import pytest

from gpulab.config import mig
from gpulab.host.nvsmi import GpuInfo, MigDevice

H200 = "NVIDIA H200"


def gpu(index: int = 0, mode: str | None = "Disabled", pending: str | None = None) -> GpuInfo:
    return GpuInfo(
        index=index,
        name=H200,
        uuid=f"GPU-{index}",
        driver_version="580.159.04",
        memory_total_mib=143771,
        pci_bus_id=f"00000000:0{index}:00.0",
        mig_mode=mode,
        mig_mode_pending=pending or mode,
    )


def seven(gpu_index: int = 0) -> list[MigDevice]:
    return [MigDevice(gpu_index, i, "1g.18gb", f"MIG-{gpu_index}-{i}") for i in range(7)]


def test_parse_devices_reads_profile_counts_and_refuses_what_the_plugin_would_not_name() -> None:
    assert mig.parse_devices("1g.18gb=7, 2g.35gb=1") == {"1g.18gb": 7, "2g.35gb": 1}
    assert mig.parse_devices("nvidia.com/mig-3g.71gb=2") == {"3g.71gb": 2}
    assert mig.parse_devices("") == {}
    for bad in ("1g.18gb", "1g.18gb=0", "big=1", "1g.18gb=7,1g.18gb=1", "1g.18gb=x"):
        with pytest.raises(ValueError):
            mig.parse_devices(bad)
    assert mig.format_devices({"2g.35gb": 1, "1g.18gb": 7}) == "1g.18gb=7,2g.35gb=1"


def test_mig_totals_sum_the_mixed_strategys_resources_over_nodes() -> None:
    """A mixed H100 node shows nvidia.com/gpu 0 beside its MIG resources
    (davidB/kubectl-view-allocations#258)."""
    node = {
        "status": {
            "allocatable": {
                "nvidia.com/gpu": "0",
                "nvidia.com/mig-1g.12gb": "2",
                "nvidia.com/mig-2g.24gb": "1",
                "nvidia.com/mig-3g.47gb": "1",
            }
        }
    }
    assert mig.mig_totals([node, node]) == {
        "nvidia.com/mig-1g.12gb": 4,
        "nvidia.com/mig-2g.24gb": 2,
        "nvidia.com/mig-3g.47gb": 2,
    }
    assert mig.mig_totals([{"status": {"allocatable": {"nvidia.com/gpu": "1"}}}]) == {}


def test_plan_none_expects_physical_gpus_times_replicas() -> None:
    p = mig.plan("none", 2, 3, gpu_mig_modes=["Disabled", "Disabled"])
    assert p.expected == mig.Expected("none", 6) and p.smoke_resource == "nvidia.com/gpu"
    assert p.expected.mig_resources() is None and not p.problems


def test_plan_mixed_takes_the_probes_listing_and_asks_the_smallest_profile() -> None:
    p = mig.plan("mixed", 1, 1, gpu_mig_modes=["Enabled"], probed={"1g.18gb": 7, "3g.71gb": 1})
    assert p.expected.mig == {"nvidia.com/mig-1g.18gb": 7, "nvidia.com/mig-3g.71gb": 1}
    # Every GPU has MIG: nvidia.com/gpu is expected 0 (the plugin advertises it so).
    assert p.expected.gpus == 0
    assert p.smoke_resource == "nvidia.com/mig-1g.18gb" and p.devices_source == "host probe"
    assert p.expected.mig_resources() == {"nvidia.com/mig-1g.18gb": 7, "nvidia.com/mig-3g.71gb": 1}
    assert not p.problems


def test_plan_mixed_config_overrides_the_probe_and_checks_the_smoke_resource() -> None:
    p = mig.plan(
        "mixed",
        1,
        1,
        gpu_mig_modes=["Enabled"],
        configured={"2g.35gb": 3},
        probed={"1g.18gb": 7},
        smoke_resource="nvidia.com/mig-1g.18gb",
    )
    assert p.expected.mig == {"nvidia.com/mig-2g.35gb": 3} and p.devices_source == "config:expectedMigDevices"
    [(cause, fix)] = p.problems
    assert "not among the expected MIG resources" in cause and "nvidia.com/mig-2g.35gb" in fix


def test_plan_mixed_without_any_known_device_asks_for_config() -> None:
    [(cause, fix)] = mig.plan("mixed", 1, 1, gpu_mig_modes=["Enabled"]).problems
    assert "no MIG device known" in cause and "expectedMigDevices" in fix
    # A GPU without MIG is there: the smoke Pod can ask for nvidia.com/gpu.
    both = mig.plan("mixed", 2, 1, gpu_mig_modes=["Enabled", "Disabled"])
    assert both.smoke_resource == "nvidia.com/gpu" and both.expected.gpus == 1 and not both.problems


def test_plan_single_counts_mig_devices_as_gpus_and_refuses_two_profiles() -> None:
    p = mig.plan("single", 1, 2, gpu_mig_modes=["Enabled"], probed={"1g.18gb": 7})
    assert p.expected.gpus == 14 and p.expected.mig_resources() == {"nvidia.com/gpu": 14}
    [(cause, _fix)] = mig.plan("single", 1, 1, configured={"1g.18gb": 4, "3g.71gb": 1}).problems
    assert "more than one MIG device type" in cause
    assert mig.plan("single", 1, 1, gpu_mig_modes=["Disabled"]).expected.gpus == 1


def test_a_mig_resource_for_the_smoke_pod_needs_mixed() -> None:
    [(cause, _fix)] = mig.plan("none", 1, 1, smoke_resource="nvidia.com/mig-1g.18gb").problems
    assert "only with migStrategy mixed" in cause


def test_preflight_fails_a_mig_enabled_gpu_under_strategy_none() -> None:
    """A MIG-enabled GPU handed out whole as nvidia.com/gpu cannot run CUDA
    (NVIDIA/gpu-operator#637: nvidia.com/gpu: 2 next to nvidia.com/mig-1g.10gb: 6, "the
    nvidia.com/gpu request fails to inject GPU")."""
    [f] = mig.mig_findings([gpu(0, "Enabled")], "none", seven())
    assert not f.ok and f.subject == "gpu 0"
    assert "MIG mode Enabled, migStrategy none" in f.message and "gpu-operator#637" in f.message
    assert "migStrategy mixed" in f.fix and "nvidia-smi -i 0 -mig 0" in f.fix


def test_preflight_reports_each_gpus_mig_mode_and_devices() -> None:
    found = mig.mig_findings([gpu(0, "Enabled"), gpu(1, "Disabled", "Enabled")], "mixed", seven())
    assert [f.ok for f in found] == [True, True]
    assert (
        "GPU 0 (NVIDIA H200): MIG mode Enabled, migStrategy mixed; MIG devices: 1g.18gb=7" in found[0].message
    )
    assert "pending Enabled after a GPU reset" in found[1].message
    [plain] = mig.mig_findings([gpu(0, None)], "none")
    assert plain.ok and "not supported or unknown" in plain.message


def test_single_strategy_refuses_a_mix_of_mig_and_plain_gpus_and_empty_mig_gpus() -> None:
    """GFD under single: 'devices with MIG enabled and disable detected' and 'at least one MIG
    device is enabled but empty' give <model>-MIG-INVALID and count 0
    (NVIDIA/k8s-device-plugin internal/lm/mig-strategy.go)."""
    mixed_modes = mig.mig_findings([gpu(0, "Enabled"), gpu(1, "Disabled")], "single", seven())
    assert [f.id for f in mixed_modes if not f.ok] == ["mig-strategy"]
    [empty] = mig.mig_findings([gpu(0, "Enabled")], "single", [])
    assert not empty.ok and "no MIG device created" in empty.message and "-cgi" in empty.fix


def test_expected_describes_itself_for_messages() -> None:
    assert mig.Expected("none", 2).describe() == "nvidia.com/gpu=2"
    assert mig.Expected("none").describe() == "nvidia.com/gpu > 0"
    assert mig.Expected("mixed", 0, {"nvidia.com/mig-1g.18gb": 7}).describe() == "nvidia.com/mig-1g.18gb=7"
    assert mig.Expected("mixed").describe() == "some nvidia.com/mig-* > 0"
