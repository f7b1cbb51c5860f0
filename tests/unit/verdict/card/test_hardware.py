"""The card's topology and DCGM sections (gpulab.verdict.card.hardware) in JSON, Markdown and HTML."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.host import probe
from gpulab.verdict import card
from gpulab.verdict.card import hardware
from tests.unit.samples import NOW

H200 = "GPU-00000000-0000-4000-8000-000000000000"


def test_real_lab_topology_in_json_markdown_and_html(real: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    topo = c["topology"]
    assert topo["source"] == o.HOST_TOPOLOGY and topo["simulated"] is False and topo["known"] is True
    assert topo["value"]["gpus"][0]["cpuAffinity"] == "0-15" and topo["freshness"] == "current"
    assert topo["shownNotUsed"] == hardware.TOPOLOGY_NOTE
    json.dumps(c)
    md = card.render_markdown(c)
    assert "## GPU topology" in md
    assert "read with nvml; shown, not used for placement" in md
    assert f"| GPU0 | {H200} | no other GPU | 0-15 | 0 |" in md
    html = card.render_html(c)
    assert 'id="topology"' in html and '<tr data-gpu="GPU0">' in html


def test_simulated_two_gpu_topology_is_labelled_and_shows_nvlink(sim: dict[str, Any]) -> None:
    sim[o.HOST_TOPOLOGY] = probe.probe_capture("h200-2gpu").topology_json()
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert c["topology"]["simulated"] is True
    rows = hardware.topology_rows(c["topology"])
    assert [r["links"] for r in rows] == ["GPU1 NV18 (18 NVLinks)", "GPU0 NV18 (18 NVLinks)"]
    md = card.render_markdown(c)
    assert "read with capture:h200-2gpu (nvidia-smi topo -m) *(simulated)*" in md
    assert "| GPU0 | GPU-00000000-0000-4000-8000-000000000000 | GPU1 NV18 (18 NVLinks) *(simulated)* |" in md
    html = card.render_html(c)
    assert html.count('data-simulated="true"><td>GPU') == 2
    assert re.search(r'id="topology">.*?<span class="tag sim">simulated</span>', html, re.S)


def test_topology_not_read_says_why(real: dict[str, Any]) -> None:
    real[o.HOST_TOPOLOGY] = {"source": None, "gpus": [], "note": "topology not read: TopologyError: x"}
    md = card.render_markdown(card.build_card(LabOutputs.from_json(real), now=NOW))
    assert "not read: topology not read: TopologyError: x" in md and "| GPU0 |" not in md
    real[o.HOST_TOPOLOGY] = None
    assert "not read (no host probe: hostProbe off)" in card.render_markdown(
        card.build_card(LabOutputs.from_json(real), now=NOW)
    )
    del real[o.HOST_TOPOLOGY]
    assert "not in this stack's outputs" in card.render_markdown(
        card.build_card(LabOutputs.from_json(real), now=NOW)
    )


def test_dcgm_metrics_in_json_markdown_and_html(real: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    d = c["dcgm"]
    assert d["status"] == hardware.MEASURED and d["why"] is None and d["source"] == o.DCGM_METRICS
    assert d["measuredAt"] == real[o.DCGM_MEASURED_AT] and d["freshness"] == "current"
    assert c["measurements"]["groups"]["dcgm"]["source"] == o.DCGM_MEASURED_AT
    (row,) = hardware.dcgm_rows(d)
    assert row == {
        "uuid": H200,
        "gpu": "0",
        "model": "NVIDIA H200",
        "util": "7 %",
        "fb": "493 MiB",
        "power": "143.8 W",
        "temp": "39 C",
        "driver": "580.159.04",
        "samples": "6",
    }
    md = card.render_markdown(c)
    assert "## DCGM metrics" in md
    assert f"| {H200} | 0 | NVIDIA H200 | 7 % | 493 MiB | 143.8 W | 39 C | 580.159.04 |" in md
    assert "6 scrape(s) over 10.0 s, measured 2026-11-29 23:32:16 UTC (this run)" in md
    assert "DCGM_EXPORTER_INTERVAL" in md
    html = card.render_html(c)
    assert 'id="dcgm" data-status="measured"' in html and f'<tr data-uuid="{H200}">' in html


def test_dcgm_utilisation_under_mig_reads_not_comparable(real: dict[str, Any]) -> None:
    real[o.DCGM_METRICS]["gpus"][H200].update(
        utilPercent=None, migInstances=7, notComparable={"utilPercent": "not comparable under MIG"}
    )
    (row,) = hardware.dcgm_rows(card.build_card(LabOutputs.from_json(real), now=NOW)["dcgm"])
    assert row["util"] == "not comparable (MIG)" and row["fb"] == "493 MiB"


def test_dcgm_section_in_the_simulated_lab_and_with_the_exporter_off(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert c["dcgm"]["status"] == hardware.NOT_OBSERVABLE and "dcgm" not in c["measurements"]["groups"]
    md = card.render_markdown(c)
    assert "## DCGM metrics\n\nnot observable in simulation: no DCGM exporter runs" in md
    assert 'id="dcgm" data-status="not-observable-in-simulation"' in card.render_html(c)
    off = copy.deepcopy(sim)
    off[o.OPERATOR_COMPONENTS]["dcgmExporter"] = False
    assert card.build_card(LabOutputs.from_json(off), now=NOW)["dcgm"]["status"] == hardware.NOT_TESTED


def test_dcgm_not_recorded_and_an_error(real: dict[str, Any]) -> None:
    none = copy.deepcopy(real)
    none[o.DCGM_METRICS] = None
    c = card.build_card(LabOutputs.from_json(none), now=NOW)
    assert c["dcgm"]["status"] == hardware.NOT_RECORDED
    assert "not recorded: no scrape of the DCGM exporter" in card.render_markdown(c)
    real[o.DCGM_METRICS] = {**real[o.DCGM_METRICS], "gpus": {}, "error": "HTTP 503 Service Unavailable"}
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert "; error: HTTP 503 Service Unavailable." in card.render_markdown(c)
    items = {i["id"]: i for i in c["checklist"]["items"]}
    assert items["dcgm-reports-gpus"]["status"] == "fail" and c["checklist"]["result"] == "fail"
