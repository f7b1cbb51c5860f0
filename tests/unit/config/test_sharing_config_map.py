"""``sharingConfigMap``: an existing ConfigMap the device plugin's config comes from
(gpulab.config.time_slicing.parse_config_map), as the chart values name it."""

from __future__ import annotations

import pytest

from components.gpu_operator import helm_values
from gpulab.config.lab import ConfigError
from variants import registry
from variants.registry import parse_config


def test_the_configmap_and_its_key_reach_the_chart_values_and_the_chart_makes_none() -> None:
    cfg = parse_config({"gpu-lab:sharingConfigMap": "lab-sharing:any"}, env={})
    assert cfg.operator.sharing_config_map == ("lab-sharing", "any")
    values = helm_values(cfg.operator, registry.get(cfg.cluster).spec)["devicePlugin"]["config"]
    assert values == {"name": "lab-sharing", "create": False, "default": "any"}


def test_without_a_key_the_default_is_left_to_the_chart() -> None:
    cfg = parse_config({"gpu-lab:sharingConfigMap": "lab-sharing"}, env={})
    values = helm_values(cfg.operator, registry.get(cfg.cluster).spec)["devicePlugin"]["config"]
    assert values == {"name": "lab-sharing", "create": False}


def test_unset_names_nothing() -> None:
    cfg = parse_config({}, env={})
    assert cfg.operator.sharing_config_map is None
    assert "config" not in helm_values(cfg.operator, registry.get(cfg.cluster).spec)["devicePlugin"]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("Lab_Sharing", "is not a ConfigMap name"),
        ("lab-sharing:bad key", "is not a ConfigMap key"),
    ],
)
def test_a_bad_name_or_key_is_refused_before_anything_is_made(value: str, said: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config({"gpu-lab:sharingConfigMap": value}, env={})
    assert said in "\n".join(exc.value.problems)


def test_with_time_slicing_replicas_both_would_configure_the_plugin() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config({"gpu-lab:sharingConfigMap": "x", "gpu-lab:timeSlicingReplicas": "4"}, env={})
    assert "scripts/pulumi config rm gpu-lab:sharingConfigMap" in "\n".join(exc.value.problems)
