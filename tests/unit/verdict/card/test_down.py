"""A card made while the cluster does not answer says its facts are the last run's and that the
cluster is down, in every rendering; never a bare "pass", and the exit code is not 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from gpulab.verdict.card import cli
from gpulab.verdict.card.summary import summary_line
from tests.unit.samples import NOW

WHY = "the sim lab's cluster does not answer: the API server at https://127.0.0.1:32765 did not answer"


def test_the_summary_says_down_and_whose_facts_they_are(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW, cluster_down=WHY)
    line = summary_line(c)
    assert line.endswith(
        f"checklist pass (simulated lab) in the last run ({sim[o.RUN_AT]}); "
        "the cluster is down now: every fact is from the last run"
    ), line
    assert c["down"] == {"why": WHY, "factsFrom": sim[o.RUN_AT]}
    assert c["checklist"]["exitCode"] == 1


def test_markdown_and_html_say_so_first(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW, cluster_down=WHY)
    md = card.render_markdown(c)
    assert "> **THE CLUSTER IS DOWN.**" in md and WHY in md and f"from the last run ({sim[o.RUN_AT]})" in md
    html = card.render_html(c)
    assert 'id="down-banner"' in html and "The cluster is down." in html
    # A card of a lab that answers has neither.
    fine = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert fine["down"] is None and "CLUSTER IS DOWN" not in card.render_markdown(fine)
    assert 'id="down-banner"' not in card.render_html(fine)


def test_the_cli_exits_1_for_a_down_cluster(sim: dict[str, Any], tmp_path: Path, capsys: Any) -> None:
    f = tmp_path / "outputs.json"
    f.write_text(json.dumps(sim))
    assert cli.main(["--outputs", str(f), "--out-dir", str(tmp_path), "--cluster-down", WHY]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "the cluster is down now" in out[-1] and "(the last run's facts: the cluster is down)" in out[0]
    assert cli.main(["--outputs", str(f), "--out-dir", str(tmp_path)]) == 0
