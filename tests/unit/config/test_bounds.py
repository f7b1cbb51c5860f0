"""Every numeric config key has a documented upper bound, enforced before anything is created:
the shared keys' in gpulab.config.lab.BOUNDS, a variant's own keys' in its ``VariantSpec.bounds``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpulab.config import lab as config
from variants import registry
from variants.minikube.settings import MinikubeSettings

ROOT = Path(__file__).resolve().parents[3]
#: Every bound: the shared keys' and each variant's own (no key bounded twice).
ALL_BOUNDS = {
    **config.BOUNDS,
    **{k: b for v in registry.REGISTRY.values() for k, b in v.spec.bounds.items()},
}


def _descriptions() -> dict[str, str]:
    doc = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    return {k: str(v.get("description", "")) for k, v in doc["config"].items()}


def test_every_numeric_key_has_a_bound() -> None:
    numeric = {k for k, (kind, _) in config.SCHEMA.items() if kind == "int"} | {"smokeGpus"}
    assert numeric == set(ALL_BOUNDS), "a numeric key without a bound, or a bound without a key"
    variant_keys = [k for v in registry.REGISTRY.values() for k in v.spec.bounds]
    assert len(variant_keys) == len(set(variant_keys)) and not set(variant_keys) & set(config.BOUNDS)


@pytest.mark.parametrize("key", sorted(ALL_BOUNDS))
def test_pulumi_yaml_states_each_maximum(key: str) -> None:
    highest = ALL_BOUNDS[key][1]
    text = _descriptions()[key].replace(",", "")
    assert re.search(rf"(at most |-|\.\.| to ){highest}\b", text, re.IGNORECASE), (
        f"{key}: Pulumi.yaml does not state {highest}"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("timeSlicingReplicas", "10000"),  # the value: the start hung, silently
        ("cpus", "100000"),
        ("memoryMiB", "99999999"),
        ("smokeTimeoutSeconds", "7201"),
        ("clusterTimeoutSeconds", "864000"),
        ("operatorTimeoutSeconds", "7201"),
        ("gpuGraceSeconds", "3601"),
        ("expectedGpus", "10001"),
        ("smokeGpus", "65"),
    ],
)
def test_a_value_above_the_maximum_is_refused_naming_key_value_and_maximum(key: str, value: str) -> None:
    with pytest.raises(config.ConfigError) as e:
        registry.parse_config({"gpu-lab:cluster": "sim", f"gpu-lab:{key}": value}, env={})
    highest = ALL_BOUNDS[key][1]
    assert f"gpu-lab:{key}={value} is above its maximum {highest}" in str(e.value)
    assert "nothing was created" in str(e.value)


def test_the_maximum_itself_is_accepted() -> None:
    cfg = registry.parse_config(
        {"gpu-lab:cluster": "minikube", "gpu-lab:cpus": "256", "gpu-lab:clusterTimeoutSeconds": "7200"},
        env={},
    )
    assert cfg.settings(MinikubeSettings).cpus == 256 and cfg.cluster_timeout_seconds == 7200


def test_sim_gpus_keeps_its_own_range_message_once() -> None:
    with pytest.raises(config.ConfigError) as e:
        registry.parse_config({"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "9"}, env={})
    assert e.value.problems.count("gpu-lab:simGpus=9 must be 0..8 (one simulated node)") == 1
    assert not any("above its maximum" in p for p in e.value.problems)
