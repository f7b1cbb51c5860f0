"""gpulab.diagnose.sharing: whether the time-slicing config reached the device plugin, step by step.

Inputs: the ConfigMap data the lab's chart values make (components.gpu_operator.helm_values,
the chart's ``templates/plugin_config.yaml`` copies ``devicePlugin.config.data`` into it), the
ClusterPolicy reference the chart writes (``templates/clusterpolicy.yaml``:
``spec.devicePlugin.config.{name,default}``) and GFD's node labels.
"""

from __future__ import annotations

from typing import Any

from components.gpu_operator import helm_values
from gpulab.config.lab import OperatorConfig
from gpulab.diagnose import sharing
from variants import registry

NS = "gpu-operator"


def chart_config(replicas: int = 4) -> dict[str, Any]:
    cfg: dict[str, Any] = helm_values(
        OperatorConfig(time_slicing_replicas=replicas), registry.get("sim").spec
    )["devicePlugin"]["config"]
    return cfg


def policy(name: str | None = "time-slicing-config", default: str = "any") -> dict[str, Any]:
    ref = {"config": {"name": name, "default": default}} if name else {}
    return {"spec": {"devicePlugin": {"enabled": True, **ref}}, "status": {"state": "ready"}}


def node(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-lab", "labels": labels}}


def test_the_labs_own_config_parses_to_its_replicas() -> None:
    assert sharing.time_slicing(chart_config(4)["data"]["any"]) == {"nvidia.com/gpu": 4}


def test_not_applied_when_the_cluster_policy_names_no_config() -> None:
    text = sharing.diagnosis(policy(None), None, [node()], NS)
    assert text.startswith(
        "sharing config: not applied (ClusterPolicy spec.devicePlugin.config names no ConfigMap)"
    )
    assert "nvidia.com/gpu.replicas=(unset), nvidia.com/gpu.sharing-strategy=(unset)" in text


def test_a_missing_config_map_and_a_missing_key_are_named() -> None:
    assert (
        "ConfigMap gpu-operator/time-slicing-config (default 'any'), which does not exist"
        in sharing.diagnosis(policy(), None, [node()], NS)
    )
    cm = {"data": {"a100": chart_config()["data"]["any"]}}
    assert "has no key 'any' (keys: a100)" in sharing.diagnosis(policy(), cm, [node()], NS)


def test_applied_and_labelled_by_gfd() -> None:
    cm = {"data": chart_config(4)["data"]}
    labels = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    assert sharing.diagnosis(policy(), cm, [node(**labels)], NS) == (
        "sharing config: ConfigMap gpu-operator/time-slicing-config key 'any': "
        "time-slicing nvidia.com/gpu x4; "
        "node gpu-lab: nvidia.com/gpu.replicas=4, nvidia.com/gpu.sharing-strategy=time-slicing"
    )


def test_a_config_without_time_slicing_or_broken_yaml_says_why() -> None:
    assert (
        sharing.time_slicing("version: v1\nflags:\n  migStrategy: none\n")
        == "has no sharing.timeSlicing.resources"
    )
    assert str(sharing.time_slicing("version: [v1")).startswith("does not parse as YAML")
    cm = {"data": {"any": "version: v1\n"}}
    assert (
        "key 'any': time-slicing not set: the key has no sharing.timeSlicing.resources"
        in sharing.diagnosis(policy(), cm, [], NS)
    )
