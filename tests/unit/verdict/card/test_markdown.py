"""gpulab.verdict.card.markdown: the SIMULATED banner and the *(simulated)* marks, only in a simulated lab."""

from __future__ import annotations

from typing import Any

from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from tests.unit.samples import NOW, tflops_fixture


def test_simulated_markdown_has_banner_and_marks(sim: dict[str, Any]) -> None:
    md = card.render_markdown(card.build_card(LabOutputs.from_json(sim), now=NOW))
    lines = md.splitlines()
    assert lines[0] == "# GPU lab baseline card"
    assert lines[2].startswith("> **SIMULATED.**")
    assert (
        "| Driver version | 580.159.04 *(simulated)* | 2026-11-30 07:58:00 UTC (this run) "
        "| `hostDriverVersion` |" in md
    )
    assert (
        "| Allocatable GPUs (of that resource) | 1 *(simulated)* | 2026-11-30 07:58:12 UTC (this run) "
        "| `allocatableGpus` |" in md
    )
    assert "not-observable-in-simulation *(simulated)*" in md
    assert "on simulated values" in md


def test_real_markdown_has_no_banner(real: dict[str, Any]) -> None:
    md = card.render_markdown(card.build_card(LabOutputs.from_json(real), now=NOW))
    assert "SIMULATED" not in md
    assert "*(simulated)*" not in md


def test_tflops_measured_elsewhere_is_warned_with_its_notes(real: dict[str, Any]) -> None:
    """A TFLOPS document from another driver: the section says so under its notes."""
    doc = {**tflops_fixture(), "driver": "570.00.01"}
    md = card.render_markdown(card.build_card(LabOutputs.from_json(real), tflops=doc, now=NOW))
    part = md.split("## Measured TFLOPS\n\n", 1)[1].split("\n## ", 1)[0]
    assert part.startswith("Dense matmul, GPU NVIDIA H200, backend ")
    assert "- bf16: tensor cores, FP32 accumulate (reduced-precision reductions off)" in part
    host_driver = LabOutputs.from_json(real).host_driver_version
    assert part.rstrip().endswith(f"**Warning:** measured with driver 570.00.01, the host's is {host_driver}")
