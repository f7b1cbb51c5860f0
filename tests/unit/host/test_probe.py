"""gpulab.host.probe: the nvidia-smi path with its MIG query, probe_host (NVML first, nvidia-smi as
the fallback), and the H200 check that both paths read the same facts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpulab.host import nvml, nvsmi, probe
from gpulab.host.preflight import PreflightError
from tests.support.host_facts import compare_facts, facts_from_json
from tests.unit.host.test_nvml import FakeNvml

FINAL = Path(__file__).resolve().parents[2] / "data" / "device-h200" / "final"
SMI_FAILED = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def saved(name: str) -> str:
    return (FINAL / name).read_text()


def runner(
    query: str | None = None,
    mig: tuple[int, str] | None = None,
    table: str | None = None,
    fail: tuple[int, str] | None = None,
) -> tuple[probe.Runner, list[list[str]]]:
    """A fake nvidia-smi answering from the saved H200 outputs (or the given ones)."""
    calls: list[list[str]] = []

    def run(argv: Sequence[str]) -> tuple[int | None, str, str]:
        calls.append(list(argv))
        if fail is not None:
            return fail[0], fail[1], ""
        if list(argv) == ["nvidia-smi"]:
            return 0, table if table is not None else saved("nvidia-smi.txt"), ""
        if list(argv) == nvsmi.mig_query_command():
            rc, out = mig if mig is not None else (0, saved("query-mig.csv"))
            return rc, out, ""
        return 0, query if query is not None else saved("query-gpu.csv"), ""

    return run, calls


def test_nvidia_smi_path_reads_mig_mode_from_its_own_query() -> None:
    run, calls = runner()
    facts = probe.probe_nvidia_smi(run)
    assert calls == [nvsmi.query_command(), nvsmi.mig_query_command(), ["nvidia-smi"]]
    (gpu,) = facts.gpus
    assert (gpu.mig_mode, gpu.mig_mode_pending) == ("Disabled", "Disabled")
    assert facts.source == "nvidia-smi" and facts.notes == ()
    assert nvsmi.mig_query_command() == [
        "nvidia-smi",
        "--query-gpu=index,pci.bus_id,mig.mode.current,mig.mode.pending",
        "--format=csv,noheader,nounits",
    ]


def test_an_old_driver_failing_the_mig_query_does_not_fail_the_probe() -> None:
    # What nvidia-smi prints for a field it does not know (seen on the H200 for a made-up
    # field: tests/data/device-h200/explore/query-unknown-field.txt), exit 2.
    unknown = 'Field "mig.mode.current" is not a valid field to query.\n'
    facts = probe.probe_nvidia_smi(runner(mig=(2, unknown))[0])
    assert facts.gpus[0].mig_mode is None and facts.gpus[0].mig_mode_pending is None
    assert facts.driver_version == "580.159.04"
    assert len(facts.notes) == 1 and "exited 2" in facts.notes[0] and "not a valid field" in facts.notes[0]


def test_unreadable_or_mismatched_mig_rows_leave_the_mig_mode_unknown() -> None:
    facts = probe.probe_nvidia_smi(runner(mig=(0, "0, 00000000:00:06.0, Maybe, Disabled\n"))[0])
    assert facts.gpus[0].mig_mode is None and "Enabled/Disabled" in facts.notes[0]
    facts = probe.probe_nvidia_smi(runner(mig=(0, "0, 00000000:00:07.0, Enabled, Enabled\n"))[0])
    assert facts.gpus[0].mig_mode is None and "do not match GPU 0" in facts.notes[0]


def test_mig_rows_fill_each_gpu_by_index() -> None:
    query = (
        "0, NVIDIA H200, GPU-a, 580.159.04, 143771, 00000000:00:06.0\n"
        "1, NVIDIA H200, GPU-b, 580.159.04, 143771, 00000000:00:07.0\n"
    )
    mig = "0, 00000000:00:06.0, Enabled, Enabled\n1, 00000000:00:07.0, Disabled, Enabled\n"
    facts = probe.facts_from_outputs(query, saved("nvidia-smi.txt"), "nvidia-smi", False, mig_csv=mig)
    assert [(g.mig_mode, g.mig_mode_pending) for g in facts.gpus] == [
        ("Enabled", "Enabled"),
        ("Disabled", "Enabled"),
    ]


def test_probe_host_prefers_nvml() -> None:
    run, calls = runner()
    facts = probe.probe_host(run, nvml_loader=lambda: FakeNvml())
    assert facts.source == "nvml" and calls == []
    assert facts.gpus[0].mig_mode == "Disabled"


def test_probe_host_falls_back_to_nvidia_smi_and_says_why() -> None:
    def missing() -> Any:
        raise nvml.NvmlUnavailable(
            nvml.Finding(nvml.CHECK_NVML, False, "the NVML binding pynvml is not importable", "pip")
        )

    facts = probe.probe_host(runner()[0], nvml_loader=missing)
    assert facts.source == "nvidia-smi"
    assert facts.notes[0].startswith("NVML not used (the NVML binding pynvml is not importable")

    facts = probe.probe_host(runner()[0], nvml_loader=lambda: FakeNvml(init_error=9))
    assert facts.source == "nvidia-smi" and "kernel driver is not loaded" in facts.notes[0]


def test_probe_host_with_neither_lists_both_causes_and_fixes() -> None:
    with pytest.raises(PreflightError) as info:
        probe.probe_host(runner(fail=(9, SMI_FAILED))[0], nvml_loader=lambda: FakeNvml(init_error=12))
    checks = [f.check for f in info.value.failures]
    assert checks[0] == nvml.CHECK_NVML and len(checks) == 2
    text = str(info.value)
    assert "libnvidia-ml.so.1" in text and "fix: install the NVIDIA driver" in text


def test_probe_host_with_nvml_listing_no_gpu_falls_back() -> None:
    facts = probe.probe_host(runner()[0], nvml_loader=lambda: FakeNvml([]))
    assert facts.source == "nvidia-smi" and "NVML lists no GPU" in facts.notes[0]


def test_capture_probe_is_unchanged() -> None:
    facts = probe.probe_capture("h200-1gpu")
    assert facts.simulated and facts.source == "capture:h200-1gpu"
    # The shipped capture's query CSV has a header with mig.mode.current; no MIG query file.
    assert (facts.gpus[0].mig_mode, facts.gpus[0].mig_mode_pending) == ("Disabled", None)


def test_json_round_trip_and_compare() -> None:
    facts = probe.probe_nvidia_smi(runner()[0])
    assert facts_from_json(json.loads(json.dumps(facts.to_json()))) == facts
    other = replace(facts, source="nvml", gpus=(replace(facts.gpus[0], mig_mode="Enabled"),))
    assert compare_facts(facts, other) == ["gpu 0 mig_mode: nvidia-smi 'Disabled' != nvml 'Enabled'"]
    with_cap = replace(other, gpus=(replace(facts.gpus[0], compute_cap="9.0"),))
    assert compare_facts(facts, with_cap) == []  # compute_cap: only NVML reads it


def test_saved_h200_nvml_and_nvidia_smi_outputs_agree() -> None:
    """The two paths on one H200 (2026-12-01, tests/data/device-h200/README.md): the NVML
    facts as saved there, and the facts parsed here from the raw nvidia-smi outputs saved in
    the same run, are the same."""
    by_nvml = facts_from_json(json.loads(saved("probe-nvml.json")))
    by_smi = probe.facts_from_outputs(
        saved("query-gpu.csv"), saved("nvidia-smi.txt"), "nvidia-smi", False, mig_csv=saved("query-mig.csv")
    )
    assert by_nvml.source == "nvml"
    assert compare_facts(by_nvml, by_smi) == []
    assert by_smi.to_json() == json.loads(saved("probe-nvidia-smi.json"))
    assert json.loads(saved("probe-compare.json")) == {"differences": []}
    (gpu,) = by_nvml.gpus
    assert (gpu.name, gpu.memory_total_mib, gpu.pci_bus_id) == ("NVIDIA H200", 143771, "00000000:00:06.0")
    assert (by_nvml.driver_version, by_nvml.max_cuda, gpu.mig_mode, gpu.compute_cap) == (
        "580.159.04",
        "13.0",
        "Disabled",
        "9.0",
    )
