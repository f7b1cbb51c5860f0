"""gpulab.config.schema: Pulumi.yaml's config block is the one source of types and defaults."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from gpulab.config import gpus, schema, time_slicing
from gpulab.config.lab import SCHEMA, LabConfig, OperatorConfig


def test_every_key_of_pulumi_yaml_is_the_parser_s_with_its_type_and_default() -> None:
    assert list(SCHEMA) == list(schema.KEYS)
    assert SCHEMA["cpus"] == ("int", 4) and SCHEMA["computeCheck"] == ("bool", True)
    assert SCHEMA["cluster"] == ("str", schema.KEYS["cluster"].default)
    assert all(SCHEMA[k] == v for k, v in {**gpus.SCHEMA, **time_slicing.SCHEMA}.items())


def test_the_config_dataclasses_default_to_pulumi_yaml() -> None:
    # Each field whose key Pulumi.yaml declares with the same meaning takes its default there.
    same = {
        "memory_mib": "memoryMiB",
        "docker_selftest": "dockerSelfTest",
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
