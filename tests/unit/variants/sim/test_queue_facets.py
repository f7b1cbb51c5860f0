"""The sim variant's answers for the queue layer: it offers it, runs Kueue's controller with its
helper, stops a lab whose controller is not built in preflight, and bundles the controller's log."""

from __future__ import annotations

from pathlib import Path

import pytest

from variants.registry import parse_config
from variants.sim import VARIANT
from variants.sim.ctl.process import Paths


def test_the_sim_offers_queues_and_runs_the_controller_with_its_helper() -> None:
    assert VARIANT.spec.queues
    start, stop = VARIANT.spec.queue_controller_argv("lab")  # type: ignore[misc]
    where = ["--name", "lab", "--workdir", ".state/sim/lab"]
    assert start == ["python", "-m", "variants.sim.ctl", "queues-up", *where]
    assert stop == ["python", "-m", "variants.sim.ctl", "queues-down", *where]


def test_preflight_names_a_controller_that_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = parse_config({"cluster": "sim", "queues": True}, {})
    monkeypatch.setattr("variants.sim.shutil.which", lambda name: None)
    (finding,) = VARIANT.preflight(cfg)
    assert not finding.ok and "not built" in finding.observed and "make toolchain" in finding.fix
    monkeypatch.setattr("variants.sim.shutil.which", lambda name: f"/bin/{name}")
    (finding,) = VARIANT.preflight(cfg)
    assert finding.ok
    assert VARIANT.preflight(parse_config({"cluster": "sim"}, {})) == []


def test_the_debug_bundle_takes_the_controllers_log(tmp_path: Path) -> None:
    paths = Paths("lab", tmp_path / ".state" / "sim" / "lab")
    log = paths.cluster_dir / "kueue" / "kueue.log"
    log.parent.mkdir(parents=True)
    log.write_text("started\n")
    assert VARIANT.status("lab", tmp_path).files["sim/kueue.log"] == log
