"""gpulab.verdict.items.nodes and the card's GPU nodes table: every node a row (md, json, HTML),
the summary line, and ``every-gpu-node-passes`` naming the failing node while the passing
ones are listed; a lab that installs the operator shows its one node derived from the
single-Pod checks and has no such item."""

from __future__ import annotations

from typing import Any

from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card, checklist
from gpulab.verdict.items import nodes
from tests.unit.samples import NOW


def _row(name: str, expected: int, alloc: int, status: str = "pass", **kw: Any) -> dict[str, Any]:
    base = {
        "node": name,
        "product": "NVIDIA-H200",
        "expected": expected,
        "expectedSource": f"gfd:nvidia.com/gpu.count={expected}",
        "allocatable": alloc,
        "capacity": expected,
        "gate": "pass" if status == "pass" else "fail",
        "smoke": "pass" if status == "pass" else "not-tested",
        "compute": "pass" if status == "pass" else "not-tested",
        "dcgm": "not-observable-in-simulation",
        "status": status,
        "firstFailure": None,
        "fix": None,
    }
    return {**base, **kw}


FLEET = [
    _row("gpu-a", 8, 8),
    _row("gpu-b", 8, 8),
    _row(
        "gpu-c",
        4,
        3,
        "fail",
        firstFailure="gate: node gpu-c advertises 3 nvidia.com/gpu allocatable of the 4 expected",
        fix="scripts/kubectl describe node gpu-c",
    ),
]
SUMMARY = "3 nodes, 20 GPUs: 19 allocatable; node gpu-c has 3 of 4"


def _fleet(sim: dict[str, Any], rows: list[dict[str, Any]] = FLEET, summary: str = SUMMARY) -> LabOutputs:
    fields = [*sim["simulatedFields"], "nodes", "nodesSummary"]  # as the sim variant lists them
    doc = {**sim, "nodes": rows, "nodesSummary": summary, "gpuStack": {"mode": "found"}}
    return LabOutputs.from_json({**doc, "simulatedFields": fields})


def test_the_failing_node_is_named_and_the_others_listed(sim: dict[str, Any]) -> None:
    (item,) = nodes.items(_fleet(sim))
    assert item.id == "every-gpu-node-passes" and item.status == "fail"
    assert item.observed.startswith(SUMMARY)
    assert (
        "failed: gpu-c: gate: node gpu-c advertises 3" in item.observed
        and "passed: gpu-a, gpu-b" in item.observed
    )
    assert item.fix == "gpu-c: scripts/kubectl describe node gpu-c"
    assert checklist.exit_code(checklist.evaluate(_fleet(sim))) == 1


def test_every_node_passing_passes(sim: dict[str, Any]) -> None:
    rows = [_row("gpu-a", 8, 8), _row("gpu-b", 4, 4)]
    (item,) = nodes.items(_fleet(sim, rows, "2 nodes, 12 GPUs: 12 allocatable; every node passed"))
    assert item.status == "pass" and "passed: gpu-a, gpu-b" in item.observed


def test_no_item_where_the_lab_installs_the_operator(sim: dict[str, Any]) -> None:
    assert nodes.items(LabOutputs.from_json(sim)) == []  # an older lab: no nodes key at all
    installed = LabOutputs.from_json(
        {**sim, "nodes": None, "nodesSummary": None, "gpuStack": {"mode": "install"}}
    )
    assert nodes.items(installed) == []
    rows, derived = nodes.rows(installed)
    assert derived and len(rows) == 1 and rows[0]["node"] == sim["smokeNode"]


def test_the_card_has_a_row_per_node_in_every_form(sim: dict[str, Any]) -> None:
    built = card.build_card(_fleet(sim), now=NOW)
    assert [r["node"] for r in built["nodes"]["rows"]] == ["gpu-a", "gpu-b", "gpu-c"]
    assert built["nodes"]["summary"] == SUMMARY
    md = card.render_markdown(built)
    assert "## GPU nodes" in md and f"{SUMMARY} *(simulated)*" in md
    assert "| gpu-c | NVIDIA-H200 | 4 (gfd:nvidia.com/gpu.count=4) | 3 | not-tested | not-tested |" in md
    assert "| FAIL |" in md
    html = card.render_html(built)
    assert all(f'data-node="{n}"' in html for n in ("gpu-a", "gpu-b", "gpu-c"))
    assert 'data-node="gpu-c" data-status="fail"' in html
    assert card.summary_line(built).startswith(f"gpu-lab: {SUMMARY} (simulated); ")


def test_a_single_host_card_shows_its_one_node(real: dict[str, Any]) -> None:
    built = card.build_card(LabOutputs.from_json(real), now=NOW)
    section = built["nodes"]
    assert section["derived"] and len(section["rows"]) == 1
    assert "One node: derived from the single-Pod checks" in card.render_markdown(built)


def test_a_busy_node_makes_the_item_not_tested_never_pass(sim: dict[str, Any]) -> None:
    busy = _row(
        "gpu-d",
        2,
        2,
        "not-tested",
        gate="pass",
        notTested="1 of its 2 nvidia.com/gpu are held by other Pods",
        fix="run the lab when node gpu-d is idle",
    )
    (item,) = nodes.items(_fleet(sim, [_row("gpu-a", 8, 8), busy], "2 nodes, 10 GPUs: 10 allocatable"))
    assert item.status == "not-tested", item
    assert "not tested: gpu-d: 1 of its 2 nvidia.com/gpu are held by other Pods" in item.observed
    assert item.fix == "gpu-d: run the lab when node gpu-d is idle"
