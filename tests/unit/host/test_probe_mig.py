"""The host probe's MIG devices: ``nvidia-smi -L`` when a GPU has MIG enabled, and the
constructed capture h200-1gpu-mig (gpulab/host/captures/README.md)."""

from __future__ import annotations

from collections.abc import Sequence

from gpulab.host import probe
from tests.support.host_facts import facts_from_json


def test_the_mig_capture_lists_seven_1g_18gb_devices() -> None:
    facts = probe.probe_capture("h200-1gpu-mig")
    assert [g.mig_mode for g in facts.gpus] == ["Enabled"] and facts.simulated
    assert facts.mig_devices is not None and len(facts.mig_devices) == 7
    assert {d.profile for d in facts.mig_devices} == {"1g.18gb"}
    again = facts_from_json(facts.to_json())
    assert again.mig_devices == facts.mig_devices
    # A capture without a listing keeps its JSON as before: no migDevices key.
    assert "migDevices" not in probe.probe_capture("h200-1gpu").to_json()


def test_the_listing_is_asked_only_when_a_gpu_has_mig_enabled() -> None:
    calls: list[list[str]] = []
    listing = (probe.CAPTURES_DIR / "h200-1gpu-mig" / "nvidia-smi-L.txt").read_text()

    def run(argv: Sequence[str]) -> tuple[int | None, str, str]:
        calls.append(list(argv))
        return 0, listing, ""

    plain = probe.probe_capture("h200-1gpu")
    assert probe.with_mig_listing(plain, run) is plain and calls == []
    mig = probe.probe_capture("h200-1gpu-mig")
    listed = probe.with_mig_listing(mig, run)
    assert calls == [["nvidia-smi", "-L"]] and listed.mig_devices is not None and len(listed.mig_devices) == 7


def test_a_failing_listing_leaves_the_devices_unknown_with_a_note() -> None:
    mig = probe.probe_capture("h200-1gpu-mig")
    failed = probe.with_mig_listing(mig, lambda argv: (9, "", "Failed to initialize NVML: Unknown Error"))
    # The capture's own listing stays; a probe without one would keep None.
    assert failed.notes[-1].startswith("MIG devices unknown: nvidia-smi -L: exit 9")
