"""gpulab.config.schema: Pulumi.yaml's config block is the one source of types and defaults."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from gpulab.config import gpus, schema, time_slicing
from gpulab.config.lab import SCHEMA, LabConfig, OperatorConfig
from variants.existing.settings import ExistingSettings
from variants.k3s.settings import K3sSettings
from variants.kind.settings import KindSettings
from variants.minikube.settings import MinikubeSettings
from variants.sim.settings import SimSettings


def test_every_key_of_pulumi_yaml_is_the_parser_s_with_its_type_and_default() -> None:
    assert list(SCHEMA) == list(schema.KEYS)
    assert SCHEMA["cpus"] == ("int", 4) and SCHEMA["computeCheck"] == ("bool", True)
    assert SCHEMA["cluster"] == ("str", schema.KEYS["cluster"].default)
    assert all(SCHEMA[k] == v for k, v in {**gpus.SCHEMA, **time_slicing.SCHEMA}.items())


def test_the_config_dataclasses_default_to_pulumi_yaml() -> None:
    # Each field whose key Pulumi.yaml declares with the same meaning takes its default there.
    same = {
        "timeout_seconds": "operatorTimeoutSeconds",
        "nri_plugin": "k3sNriPlugin",
    }
    for cls in (LabConfig, OperatorConfig):
        for f in fields(cls):
            key = same.get(f.name) or "".join(
                w if i == 0 else w.capitalize() for i, w in enumerate(f.name.split("_"))
            )
            if (
                key in schema.KEYS
                and isinstance(f.default, (str, int, bool))
                and key
                not in (
                    "capture",
                    "toolkit",
                    "cdi",
                    "smokeGpus",
                    "chartPath",
                )
            ):
                assert f.default == schema.default(key), (cls.__name__, f.name)


#: Each variant's settings field -> the key it is parsed from (variants/<name>/settings.py).
VARIANT_KEYS: dict[type, dict[str, str]] = {
    MinikubeSettings: {"cpus": "cpus", "memory_mib": "memoryMiB", "docker_selftest": "dockerSelfTest"},
    KindSettings: {"node_image": "kindNodeImage"},
    K3sSettings: {"version": "k3sVersion"},
    ExistingSettings: {
        "kubeconfig_path": "",  # resolved (kubeconfigPath, $KUBECONFIG, ~/.kube/config)
        "kube_context": "",  # resolved (kubeContext, the file's current-context)
        "expected_gpus": "expectedGpus",
        "remove_crds": "removeCrds",
        "simulated_operands": "simulatedOperands",
    },
    SimSettings: {"gpus": "simGpus"},
}


def test_each_variant_s_settings_default_to_pulumi_yaml() -> None:
    # Pulumi.yaml stays the one schema: a variant's settings take their defaults from it.
    for cls, keys in VARIANT_KEYS.items():
        assert [f.name for f in fields(cls)] == list(keys), cls.__name__
        for f in fields(cls):
            if keys[f.name]:
                assert f.default == schema.default(keys[f.name]), (cls.__name__, f.name)


def test_a_bad_declaration_is_refused_naming_every_key(tmp_path: Path) -> None:
    block = {
        "a": {"type": "integer", "default": "4", "description": "x"},
        "b": {"type": "float", "default": 1.0, "description": "x"},
        "c": {"type": "boolean", "default": True},
        "d": "not a mapping",
    }
    with pytest.raises(schema.SchemaError) as err:
        schema.parse(block, tmp_path / "Pulumi.yaml")
    assert err.value.problems == [
        "a: default '4' is not of type integer",
        "b: type 'float' is not one of string, integer, boolean",
        "c: no description",
        "d: expected a mapping with type, default and description",
    ]
    assert "git checkout Pulumi.yaml" in str(err.value)
    (tmp_path / "Pulumi.yaml").write_text("name: x\n")
    with pytest.raises(schema.SchemaError, match="expected a mapping of keys"):
        schema.load(tmp_path / "Pulumi.yaml")
    with pytest.raises(schema.SchemaError, match="cannot read it"):
        schema.load(tmp_path / "missing.yaml")
