"""gpulab.config.queues: the queue layer as config gives it (queues: true), and where it is
offered: the simulated lab only so far; every other variant, gpuStack dra and MIG mixed refuse it
before anything is created, each with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.config import queues
from gpulab.config.lab import SCHEMA, ConfigError
from variants.registry import parse_config


def _get(values: dict[str, object]):  # type: ignore[no-untyped-def]
    return lambda k: values.get(k, SCHEMA[k][1])


def test_defaults_are_off_and_the_pinned_chart_from_upstreams_registry() -> None:
    problems: list[str] = []
    got = queues.parse(_get({}), problems, {})
    assert not problems and got == queues.QueueSettings()
    assert (got.enabled, got.version, got.repo) == (False, "0.19.0", "oci://registry.k8s.io/kueue/charts")


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("kueueChartVersion", "v0.19.0", "without a leading v"),
        ("kueueChartRepo", "http://x", "must be an https:// or oci:// URL"),
        ("kueueChartPath", "/nonexistent/chart", "has no Chart.yaml"),
    ],
)
def test_bad_values_are_named(key: str, value: str, said: str) -> None:
    problems: list[str] = []
    queues.parse(_get({key: value, "queues": True}), problems, {})
    assert any(said in p and key in p for p in problems), problems


def test_a_local_chart_from_the_environment_exports_its_own_version(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text("apiVersion: v2\nname: kueue\nversion: 0.19.0\n")
    problems: list[str] = []
    got = queues.parse(_get({"queues": True}), problems, {queues.CHART_PATH_ENV: str(tmp_path)})
    assert not problems and got.source == f"local:{tmp_path}" and got.local_version() == "0.19.0"
    # Not read with the layer off.
    assert queues.parse(_get({}), problems, {queues.CHART_PATH_ENV: "/nonexistent"}).path is None


def test_the_sim_offers_the_queue_layer() -> None:
    cfg = parse_config({"cluster": "sim", "queues": True}, {})
    assert cfg.queues.enabled and cfg.queues.version == "0.19.0"


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({"cluster": "kind"}, "not offered on cluster=kind"),
        ({"cluster": "sim", "gpuStack": "dra", "computeCheck": False}, "gpuStack=dra"),
        ({"cluster": "sim", "simMigDevices": "1g.18gb=7", "migStrategy": "mixed"}, "migStrategy=mixed"),
    ],
)
def test_where_the_queue_layer_cannot_be_proven_it_is_refused_before_anything(
    raw: dict[str, object], said: str
) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({**raw, "queues": True}, {})
    assert any("queues=true" in p and said in p for p in err.value.problems), err.value.problems
