"""gpulab.verdict.card.html: the page from the same card; checked in headless Chromium as a person would."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from gpulab.verdict.card.html import render_html, tflops_chart
from tests import chromium
from tests.unit.samples import NOW, tflops_fixture


def rows(html: str) -> dict[str, str]:
    """checklist item id -> its status, from the rows' data attributes."""
    return dict(re.findall(r'data-item="([a-z-]+)" data-status="([a-z-]+)"', html))


def test_every_checklist_item_coloured_by_status(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    html = render_html(c)
    assert rows(html) == {i["id"]: i["status"] for i in c["checklist"]["items"]}
    assert '<tr class="not-observable-in-simulation" data-item="events-scheduled-and-pulled"' in html
    assert 'id="verdict" data-verdict="pass"' in html
    assert "tr.fail { background: var(--fail-bg); }" in html


def test_simulated_values_marked_and_banner(sim: dict[str, Any]) -> None:
    html = render_html(card.build_card(LabOutputs.from_json(sim), now=NOW))
    assert 'id="simulated-banner"' in html
    sim_rows = re.findall(r'data-source="([A-Za-z]+)" data-freshness="[a-z-]+" data-simulated="true"', html)
    assert set(sim_rows) == set(sim[o.SIMULATED_FIELDS]) & set(sim_rows)
    assert {o.HOST_DRIVER_VERSION, o.ALLOCATABLE_GPUS, o.SMOKE_PHASE} <= set(sim_rows)
    assert o.CHART_VERSION not in sim_rows


def test_real_lab_has_no_simulated_marks(real: dict[str, Any]) -> None:
    html = render_html(card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW))
    assert 'id="simulated-banner"' not in html and 'data-simulated="true"' not in html


def test_chart_from_measured_tflops_only(real: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW)
    chart = tflops_chart(c["measuredTflops"])
    assert chart is not None
    bf16 = next(r for r in chart["rows"] if r["dtype"] == "bf16")
    assert bf16["rate"] == 667.9 and bf16["peak"] == 989.5
    burst, sustained = bf16["bars"]
    assert (burst["kind"], burst["rate"], sustained["kind"], sustained["rate"]) == (
        "burst",
        790.9,
        "sustained",
        667.9,
    )
    assert sustained["w"] == pytest.approx(bf16["peak_w"] * 667.9 / 989.5, rel=0.01)
    assert burst["w"] == pytest.approx(bf16["peak_w"] * 790.9 / 989.5, rel=0.01)
    assert bf16["text"] == "burst 790.9 / sustained 667.9 TFLOP/s, 80% / 67% of 989.5"
    html = render_html(c)
    assert '<svg class="chart" id="tflops-chart"' in html
    n = len(c["measuredTflops"]["results"])
    assert html.count('<rect class="burst"') == n and html.count('<rect class="sustained"') == n
    assert html.count('<rect class="peak"') == n
    bar = 'data-dtype="bf16" data-tflops="667.9" data-peak="989.5" data-burst="790.9" data-sustained="667.9"'
    assert bar in html
    assert 'id="tflops-not-measured"' not in html


def test_html_table_says_which_rate_is_which_with_clock_and_power(real: dict[str, Any]) -> None:
    html = render_html(card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW))
    assert "<th>Burst TFLOP/s (SM clock, power)</th><th>Sustained TFLOP/s (SM clock, power)</th>" in html
    row = re.search(r'<tr data-dtype="bf16">(.*?)</tr>', html)
    assert row is not None
    assert "790.9 (1980 MHz, 120 W)" in row.group(1) and "667.9 (1470 MHz, 687 W)" in row.group(1)
    assert "sustained (headline)" in html and "burst: a short run right after an idle rest" in html
    assert "797.8 TFLOP/s at 1980 MHz; burst / reference 0.991 (within 3%)" in html


def test_a_single_rate_document_draws_one_bar_per_dtype(real: dict[str, Any]) -> None:
    """A method-v1 document (tests/data/tflops/h200-torch.json): one rate, no burst/sustained."""
    import json

    from tests.unit.samples import DATA

    v1 = json.loads((DATA / "tflops" / "h200-torch.json").read_text())
    c = card.build_card(LabOutputs.from_json(real), tflops=v1, now=NOW)
    chart = tflops_chart(c["measuredTflops"])
    assert chart is not None
    assert {b["kind"] for r in chart["rows"] for b in r["bars"]} == {"measured"}
    html = render_html(c)
    assert html.count('<rect class="measured"') == len(c["measuredTflops"]["results"])
    assert "<th>TFLOP/s</th>" in html and "Burst TFLOP/s" not in html


def test_not_measured_says_so_and_draws_no_bars(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert tflops_chart(c["measuredTflops"]) is None
    html = render_html(c)
    assert 'id="tflops-not-measured"' in html and "Not measured." in html
    assert "<svg" not in html and "<rect" not in html


def test_a_tflops_document_with_no_rate_draws_no_chart(real: dict[str, Any]) -> None:
    doc = tflops_fixture()
    doc["results"] = {"bf16": {"tflops": None}}
    c = card.build_card(LabOutputs.from_json(real), tflops=doc, now=NOW)
    assert tflops_chart(c["measuredTflops"]) is None
    assert "<svg" not in render_html(c)


def test_earlier_run_facts_flagged(sim: dict[str, Any]) -> None:
    sim[o.RUN_AT] = "2026-11-30T09:30:00+00:00"
    html = render_html(card.build_card(LabOutputs.from_json(sim), now=NOW))
    assert 'id="stale-banner"' in html and "readiness gate, smoke test" in html
    assert 'data-source="smokePhase" data-freshness="earlier-run"' in html
    assert "2026-11-30 07:58:16 UTC (earlier run)" in html


def test_values_are_escaped_and_nothing_is_fetched(sim: dict[str, Any]) -> None:
    sim[o.SMOKE_NODE] = "<script>alert(1)</script>"
    html = render_html(card.build_card(LabOutputs.from_json(sim), now=NOW))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert not re.search(r"""(src|href)=|url\(|@import|<link""", html)


@pytest.fixture
def pages(tmp_path: Path, sim: dict[str, Any], real: dict[str, Any]) -> dict[str, Path]:
    if chromium.binary() is None:
        pytest.skip(chromium.MISSING)
    out = {}
    for name, c in (
        ("sim", card.build_card(LabOutputs.from_json(sim), now=NOW)),
        ("real", card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW)),
    ):
        path = tmp_path / f"{name}.html"
        path.write_text(render_html(c), encoding="utf-8")
        out[name] = path
    return out


def test_chromium_renders_every_item_and_the_chart(pages: dict[str, Path], tmp_path: Path) -> None:
    for name, page in pages.items():
        png = chromium.screenshot(page, tmp_path / f"{name}.png", 1200, 2400)
        assert chromium.png_size(png) == (1200, 2400)
        assert png.stat().st_size > 50_000, "a blank page compresses to a few KiB"
        dom = chromium.dump_dom(page)
        for item in card.build_card(LabOutputs.from_json({}), now=NOW)["checklist"]["items"]:
            assert f'data-item="{item["id"]}"' in dom, (name, item["id"])
    real_dom = chromium.dump_dom(pages["real"])
    assert real_dom.count('class="burst"') == 4 and real_dom.count('class="sustained"') == 4
    assert 'id="tflops-chart"' in real_dom and 'id="topology"' in real_dom and 'id="dcgm"' in real_dom
    sim_dom = chromium.dump_dom(pages["sim"])
    assert 'id="tflops-not-measured"' in sim_dom and "<svg" not in sim_dom


@pytest.mark.parametrize(
    ("largest", "axis_end", "step"),
    [(989.5, 1000, 200), (51.3, 60, 10), (1979.0, 2000, 250), (3.2, 3.5, 0.5), (0.0, 1.0, 0.25)],
)
def test_chart_axis_has_round_ticks(largest: float, axis_end: float, step: float) -> None:
    from gpulab.verdict.card.html import _scale

    assert _scale(largest) == (pytest.approx(axis_end), pytest.approx(step))
