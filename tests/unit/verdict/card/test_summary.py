"""gpulab.verdict.card.summary and the CLI's last line: the one-line summary, and the exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from gpulab.verdict.card.summary import summary_line
from tests.unit.samples import DATA, NOW, tflops_fixture


def test_simulated_lab_summary(sim: dict[str, Any]) -> None:
    assert summary_line(card.build_card(LabOutputs.from_json(sim), now=NOW)) == (
        "gpu-lab: GPUs 1 allocatable / 1 physical (simulated); smoke Succeeded (simulated); "
        "driver 580.159.04 in Pod / 580.159.04 on host (simulated); compute passed on 1 GPU (simulated); "
        "checklist pass (simulated lab)"
    )


def test_gpu_lab_summary_with_compute(real: dict[str, Any]) -> None:
    line = summary_line(card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW))
    assert line == (
        "gpu-lab: GPUs 1 allocatable / 1 physical; smoke Succeeded; "
        "driver 580.159.04 in Pod / 580.159.04 on host; "
        "compute passed on 1 GPU, bf16 667.9 (68% of peak; burst 790.9), "
        "fp16 639.5 (65% of peak; burst 764.2), fp32 51.3 (76% of peak; burst 51.2), "
        "tf32 345.3 (70% of peak; burst 405.2) TFLOP/s; "
        "checklist pass"
    )
    assert "\n" not in line


def test_summary_flags_earlier_run_and_failures(real: dict[str, Any]) -> None:
    real[o.RUN_AT] = "2026-11-30T06:00:00+00:00"  # a later no-op run
    real[o.SMOKE_DRIVER_VERSION] = "570.195.03"
    real[o.ALLOCATABLE_GPUS] = None
    line = summary_line(card.build_card(LabOutputs.from_json(real), now=NOW))
    assert "GPUs none allocatable / 1 physical (earlier run)" in line
    assert "smoke Succeeded (earlier run)" in line
    assert "driver 570.195.03 in Pod / 580.159.04 on host (earlier run)" in line
    assert line.endswith("checklist fail")


def test_summary_unknown_values(real: dict[str, Any]) -> None:
    for key in (o.ALLOCATABLE_GPUS, o.SMOKE_PHASE, o.SMOKE_MEASURED_AT):
        del real[key]
    line = summary_line(card.build_card(LabOutputs.from_json(real), now=NOW))
    assert "GPUs ? allocatable / 1 physical;" in line
    assert "smoke ? (time not recorded)" in line
    assert "checklist not-evaluated" in line


def write(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    ("change", "rc", "verdict"),
    [({}, 0, "checklist pass"), ({o.SMOKE_DRIVER_VERSION: "570.195.03"}, 1, "checklist fail")],
)
def test_cli_ends_with_the_summary_and_the_verdicts_exit_code(
    real: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, Any],
    rc: int,
    verdict: str,
) -> None:
    real.update(change)
    assert card.main(["--outputs", write(tmp_path, real), "--out-dir", str(tmp_path)]) == rc
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("gpu-lab: GPUs 1 allocatable / 1 physical;") and last.endswith(verdict)
    for ext in ("md", "json", "html"):
        assert (tmp_path / f"baseline-card.{ext}").is_file()


def test_cli_usage_error_exits_2_without_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert card.main(["--out-dir", "x"]) == 2  # --outputs is required
    assert card.main(["--outputs", str(DATA / "nope.json")]) == 2
    out = capsys.readouterr().out
    assert "gpu-lab: GPUs" not in out


def with_compute(outputs: dict[str, Any], result: str, at: str | None) -> dict[str, Any]:
    outputs.update(
        {
            o.COMPUTE_RESULT: result,
            o.COMPUTE_PHASE: "Succeeded" if result == "passed" else None,
            o.COMPUTE_IMAGE: "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
            o.COMPUTE_MEASURED_AT: at,
        }
    )
    return outputs


def test_compute_check_passed_with_and_without_tflops(real: dict[str, Any]) -> None:
    with_compute(real, "passed", "2026-11-29T23:32:30+00:00")
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert c["compute"]["result"]["freshness"] == "current"
    assert "; compute passed on 1 GPU; checklist pass" in summary_line(c)
    line = summary_line(card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW))
    assert "; compute passed on 1 GPU, bf16 667.9 (68% of peak; burst 790.9), " in line
    assert "| Result (vector add on the GPU) | passed | 2026-11-29 23:32:30 UTC (this run) |" in (
        card.render_markdown(c)
    )


def test_compute_check_from_an_earlier_run(real: dict[str, Any]) -> None:
    with_compute(real, "passed", "2026-11-29T23:32:30+00:00")
    real[o.RUN_AT] = "2026-11-30T06:00:00+00:00"
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert "compute" in c["measurements"]["groups"]
    assert "; compute passed on 1 GPU (earlier run); " in summary_line(c)


def test_the_card_shows_how_many_gpus_the_compute_check_covered(real: dict[str, Any]) -> None:
    real.update({o.COMPUTE_GPUS: 2, o.HOST_GPU_COUNT: 2})
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert c["compute"]["gpus"]["value"] == 2 and c["compute"]["gpus"]["source"] == o.COMPUTE_GPUS
    assert "; compute passed on 2 GPUs; " in summary_line(c)
    md = card.render_markdown(c)
    assert "| GPUs covered (vectorAdd containers that passed, one GPU each) | 2 |" in md
    assert "GPUs covered (vectorAdd containers that passed, one GPU each)" in card.render_html(c)
    # Outputs from before the per-GPU check: the result alone, no invented count.
    del real[o.COMPUTE_GPUS]
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert c["compute"]["gpus"]["known"] is False
    assert "; compute passed; " in summary_line(c)


def test_compute_check_off_is_not_tested(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(with_compute(sim, "not-tested", None)), now=NOW)
    assert "compute" not in c["measurements"]["groups"]
    assert c["compute"]["result"]["freshness"] == "configured"
    assert "; compute not tested; " in summary_line(c)


def test_a_renamed_shared_resource_is_named_in_the_summary_card_and_boundary(sim: dict[str, Any]) -> None:
    """Time-slicing's rename: allocatable counts nvidia.com/gpu.shared (gpulab.config.time_slicing)."""
    sim[o.GPU_RESOURCE_NAME] = "nvidia.com/gpu.shared"
    sim[o.ALLOCATABLE_GPUS] = sim[o.CAPACITY_GPUS] = 4
    sim[o.OPERATOR_COMPONENTS] = {**sim[o.OPERATOR_COMPONENTS], "timeSlicingReplicas": 4}
    built = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert summary_line(built).startswith("gpu-lab: GPUs 4 allocatable as nvidia.com/gpu.shared / 1 physical")
    assert built["cluster"]["gpuResource"]["value"] == "nvidia.com/gpu.shared"
    [row] = [r for r in built["capabilityBoundary"] if r["capability"].startswith("GPU sharing")]
    assert "here: 4 replica(s) per GPU as nvidia.com/gpu.shared" in row["status"]
    md = card.render_markdown(built)
    assert "| GPU resource | nvidia.com/gpu.shared" in md
