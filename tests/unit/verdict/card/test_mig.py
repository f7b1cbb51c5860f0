"""gpulab.verdict.card.mig: the MIG rows of the card, its summary under MIG (issue #12: never "0 GPUs")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from gpulab.verdict.card.html import render_html
from gpulab.verdict.card.markdown import render_markdown
from gpulab.verdict.card.summary import summary_line
from tests import chromium
from tests.unit.samples import NOW, load


@pytest.fixture
def mig() -> dict[str, Any]:
    return load("sim-h200-1gpu-mig.json")


def test_mig_section_rows(mig: dict[str, Any]) -> None:
    section = card.build_card(LabOutputs.from_json(mig), now=NOW)["mig"]
    assert section["strategy"]["value"] == "mixed"
    assert section["resources"] == [
        {"resource": "nvidia.com/mig-1g.18gb", "allocatable": 7, "expected": 7, "simulated": True}
    ]
    assert [g["migMode"] for g in section["gpus"]] == ["Enabled"]
    rows = {r["label"]: r for r in section["rows"]}
    assert rows["MIG strategy"]["value"] == "mixed" and rows["MIG strategy"]["freshness"] == "configured"
    res = rows["nvidia.com/mig-1g.18gb"]
    assert res["value"] == "7 allocatable / 7 expected" and res["simulated"] is True
    assert res["measuredAt"] == mig[o.GATE_MEASURED_AT] and res["freshness"] == "current"
    assert rows["GPU0 MIG mode (NVIDIA H200)"]["value"] == "Enabled (pending Enabled)"


def test_markdown_lists_each_mig_resource_and_the_smoke_resource(mig: dict[str, Any]) -> None:
    md = render_markdown(card.build_card(LabOutputs.from_json(mig), now=NOW))
    assert "## MIG" in md and md.index("## Cluster") < md.index("## MIG") < md.index("## GPU stack")
    assert "| `nvidia.com/mig-1g.18gb` | 7 allocatable / 7 expected *(simulated)* | " in md
    assert "`migResources`, `expectedMigResources` |" in md
    assert "| MIG strategy | mixed | configured | `migStrategy` |" in md
    assert "| Resource requested | nvidia.com/mig-1g.18gb | configured | `smokeResource` |" in md
    # 0 nvidia.com/gpu is true under MIG, and says why.
    assert (
        "| Allocatable GPUs (of that resource) | 0 (MIG: the GPUs are advertised as MIG devices, see MIG)"
        in md
    )


def test_html_mig_rows(mig: dict[str, Any]) -> None:
    html = render_html(card.build_card(LabOutputs.from_json(mig), now=NOW))
    assert 'id="facts-mig"' in html
    assert 'data-resource="nvidia.com/mig-1g.18gb" data-simulated="true"' in html
    assert "7 allocatable / 7 expected" in html
    assert "MIG 7 nvidia.com/mig-1g.18gb allocatable / 7 expected" in html


def test_summary_under_mixed_is_never_zero_gpus(mig: dict[str, Any]) -> None:
    line = summary_line(card.build_card(LabOutputs.from_json(mig), now=NOW))
    assert line.startswith(
        "gpu-lab: MIG 7 nvidia.com/mig-1g.18gb allocatable / 7 expected (1 physical GPU, MIG, simulated); "
    )
    assert "GPUs 0" not in line and "0 allocatable" not in line


def test_summary_mig_short_and_partly_mig(mig: dict[str, Any]) -> None:
    mig[o.MIG_RESOURCES] = {"nvidia.com/mig-1g.18gb": 5}
    mig[o.SIMULATED_FIELDS] = []
    mig[o.SIMULATED] = False
    assert summary_line(card.build_card(LabOutputs.from_json(mig), now=NOW)).startswith(
        "gpu-lab: MIG 5 nvidia.com/mig-1g.18gb allocatable / 7 expected (1 physical GPU, MIG); "
    )
    # Two GPUs, one with MIG: the whole GPUs are counted first.
    gpu = dict(mig[o.HOST_GPUS][0], index=1, migMode="Disabled", migModePending="Disabled")
    mig[o.HOST_GPUS] = [mig[o.HOST_GPUS][0], gpu]
    mig[o.HOST_GPU_COUNT], mig[o.ALLOCATABLE_GPUS] = 2, 1
    assert summary_line(card.build_card(LabOutputs.from_json(mig), now=NOW)).startswith(
        "gpu-lab: GPUs 1 allocatable, MIG 5 nvidia.com/mig-1g.18gb allocatable / 7 expected "
        "(2 physical GPUs, 1 with MIG); "
    )


def test_single_strategy_counts_mig_devices_as_gpus(mig: dict[str, Any]) -> None:
    mig.update(
        {
            o.MIG_STRATEGY: "single",
            o.MIG_RESOURCES: {},
            o.EXPECTED_MIG_RESOURCES: {"nvidia.com/gpu": 7},
            o.ALLOCATABLE_GPUS: 7,
        }
    )
    c = card.build_card(LabOutputs.from_json(mig), now=NOW)
    assert c["mig"]["resources"][0] == {
        "resource": "nvidia.com/gpu",
        "allocatable": 7,
        "expected": 7,
        "simulated": True,
    }
    assert summary_line(c).startswith(
        "gpu-lab: MIG 7 nvidia.com/gpu allocatable / 7 expected (1 physical GPU"
    )
    assert "note" not in c["cluster"]["allocatableGpus"]


def test_pending_mode_and_no_mig(mig: dict[str, Any]) -> None:
    mig[o.HOST_GPUS][0].update(migMode="Disabled", migModePending="Enabled")
    mig.update({o.MIG_STRATEGY: "none", o.MIG_RESOURCES: {}, o.EXPECTED_MIG_RESOURCES: None})
    c = card.build_card(LabOutputs.from_json(mig), now=NOW)
    rows = {r["label"]: r["value"] for r in c["mig"]["rows"]}
    assert rows == {
        "MIG strategy": "none",
        "GPU0 MIG mode (NVIDIA H200)": "Disabled (pending Enabled: takes effect after a GPU reset or reboot)",
    }
    assert summary_line(c).startswith("gpu-lab: GPUs 0 allocatable / 1 physical (simulated);")


def test_a_stack_from_before_mig_has_no_mig_section(sim: dict[str, Any]) -> None:
    sim.pop(o.MIG_STRATEGY, None)
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert c["mig"] is None
    assert "## MIG" not in render_markdown(c) and 'id="facts-mig"' not in render_html(c)


def test_compute_not_tested_says_why(sim: dict[str, Any]) -> None:
    sim.update({o.COMPUTE_RESULT: "not-tested", o.COMPUTE_PHASE: None, o.COMPUTE_IMAGE: None})
    md = render_markdown(card.build_card(LabOutputs.from_json(sim), now=NOW))
    assert "| Result (vector add on the GPU) | not-tested (computeCheck off: no compute Pod ran)" in md


def test_chromium_renders_the_mig_section(mig: dict[str, Any], tmp_path: Path) -> None:
    if chromium.binary() is None:
        pytest.skip(chromium.MISSING)
    page = tmp_path / "mig.html"
    page.write_text(render_html(card.build_card(LabOutputs.from_json(mig), now=NOW)), encoding="utf-8")
    png = chromium.screenshot(page, tmp_path / "mig.png", 1200, 2400)
    assert png.stat().st_size > 50_000, "a blank page compresses to a few KiB"
    dom = chromium.dump_dom(page)
    section = dom[dom.index('id="facts-mig"') : dom.index('id="facts-operator"')]
    assert "<code>nvidia.com/mig-1g.18gb</code>" in section and "7 allocatable / 7 expected" in section
    assert "Enabled (pending Enabled)" in section and section.count('data-simulated="true"') == 2
    assert dom.index('id="facts-cluster"') < dom.index('id="facts-mig"')
