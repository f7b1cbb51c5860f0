"""The sim variant's answers outside the engine: is its cluster gone (make destroy's teardown)."""

from __future__ import annotations

from pathlib import Path

from variants import registry


def test_sim_cluster_is_gone_when_its_directory_is(tmp_path: Path) -> None:
    sim = registry.get("sim")
    assert sim.status("lab", tmp_path).gone is True
    (tmp_path / ".state" / "sim" / "lab").mkdir(parents=True)
    assert sim.status("lab", tmp_path).gone is False


def test_the_smoke_pod_s_simulated_listing_follows_what_it_is_given() -> None:
    from variants.registry import parse_config
    from variants.sim import _smoke_listing

    assert _smoke_listing(parse_config({"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "2"}, env={})) is None
    ts = {"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "2", "gpu-lab:timeSlicingReplicas": "4"}
    assert _smoke_listing(parse_config(ts, env={})) == 1
    one = {"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "2", "gpu-lab:smokeGpus": "1"}
    assert _smoke_listing(parse_config(one, env={})) == 1
