"""gpulab.config.adopt and ``adoptExisting`` in parse_config: only Namespaces, only for a cluster
the lab does not own, every bad item named before anything is created."""

from __future__ import annotations

import pytest

from gpulab.config import adopt, schema
from gpulab.config.lab import ConfigError
from variants.registry import parse_config


def _parse(value: str) -> tuple[tuple[str, ...], list[str]]:
    problems: list[str] = []
    return adopt.parse(lambda k: value, problems), problems


def test_the_default_adopts_nothing() -> None:
    assert schema.default("adoptExisting") == ""
    assert _parse("") == ((), [])


def test_namespaces_parse_sorted_and_their_names_are_read_back() -> None:
    got, problems = _parse(" Namespace/team-b , Namespace/gpu-operator,")
    assert problems == [] and got == ("Namespace/gpu-operator", "Namespace/team-b")
    assert adopt.namespaces(got) == {"gpu-operator", "team-b"}


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("ConfigMap/default/x", "only a Namespace can be adopted"),
        ("Namespace/Bad_Name", "is not Namespace/<name>"),
        ("Namespace/kube-system", "not kube-*"),
        ("gpu-operator", "is not Namespace/<name>"),
        ("Namespace/a,Namespace/a", "names Namespace/a twice"),
        (",".join(f"Namespace/n{i}" for i in range(9)), "at most 8"),
    ],
)
def test_bad_items_are_named(value: str, said: str) -> None:
    _, problems = _parse(value)
    assert len(problems) == 1 and said in problems[0], problems


def test_a_cluster_the_lab_owns_refuses_it() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "sim", "adoptExisting": "Namespace/gpu-operator"}, {})
    assert "gpu-lab:adoptExisting applies to cluster=existing only (got cluster='sim')" in str(err.value)
