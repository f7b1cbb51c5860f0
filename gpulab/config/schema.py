"""The config schema: Pulumi.yaml's ``config`` block, the one description of every key.

Pulumi.yaml declares each ``gpu-lab:<key>`` once: its ``type`` (``string``, ``integer``,
``boolean``), ``default`` and ``description`` (which also states each numeric key's maximum:
gpulab.config.lab.BOUNDS is checked against it). The engine hands the program those defaults
as if they were set; config parsing (gpulab.config.lab) reads the same block here, so a key's
type and default exist in one place. :data:`KEYS` is read once, at import, from the project
directory's Pulumi.yaml.

Pure but for reading that one file; no Pulumi import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import yamlio
from gpulab.core.errors import GpuLabError

#: The project file whose ``config`` block is the schema (the project directory's).
PULUMI_YAML: Final = Path(__file__).resolve().parents[2] / "Pulumi.yaml"
#: Pulumi.yaml's ``type`` -> the kind config parsing coerces to.
KINDS: Final[dict[str, str]] = {"string": "str", "integer": "int", "boolean": "bool"}
_PYTHON: Final[dict[str, type]] = {"str": str, "int": int, "bool": bool}


class SchemaError(GpuLabError, ValueError):
    """Pulumi.yaml's config block is unreadable or declares a key badly; ``problems`` holds
    one line per bad key."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"{path}: the config block is not a schema gpu-lab can read ({len(problems)} problem(s)):\n"
            f"{lines}\nFix the key's declaration (type: string|integer|boolean, a default of that "
            "type, a description), or restore Pulumi.yaml from the repository (git checkout Pulumi.yaml)."
        )


@dataclass(frozen=True)
class Key:
    """One config key as Pulumi.yaml declares it: ``name`` (without the ``gpu-lab:``
    namespace), ``kind`` (``"str"``, ``"int"`` or ``"bool"``), ``default`` (of that kind) and
    ``description``."""

    name: str
    kind: str
    default: object
    description: str


def parse(block: Any, path: Path = PULUMI_YAML) -> dict[str, Key]:
    """The keys of a Pulumi.yaml ``config`` block (a mapping of key -> declaration), in
    file order.

    Raises:
        SchemaError: not a mapping, or a key without a known ``type``, a ``default`` of that
            type or a ``description`` (every bad key named).
    """
    if not isinstance(block, Mapping):
        raise SchemaError(path, [f"config: expected a mapping of keys, got {type(block).__name__}"])
    keys: dict[str, Key] = {}
    problems: list[str] = []
    for name, decl in block.items():
        if not isinstance(decl, Mapping):
            problems.append(f"{name}: expected a mapping with type, default and description")
            continue
        kind = KINDS.get(str(decl.get("type")))
        if kind is None:
            problems.append(f"{name}: type {decl.get('type')!r} is not one of {', '.join(KINDS)}")
            continue
        default = decl.get("default")
        want = _PYTHON[kind]
        if not isinstance(default, want) or (kind == "int" and isinstance(default, bool)):
            problems.append(f"{name}: default {default!r} is not of type {decl.get('type')}")
        if not str(decl.get("description") or "").strip():
            problems.append(f"{name}: no description")
        keys[str(name)] = Key(str(name), kind, default, str(decl.get("description") or ""))
    if problems:
        raise SchemaError(path, problems)
    return keys


def load(path: Path = PULUMI_YAML) -> dict[str, Key]:
    """:func:`parse` of ``path``'s ``config`` block.

    Raises:
        SchemaError: the file cannot be read or parsed, or :func:`parse` refuses the block.
    """
    try:
        doc = yamlio.load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SchemaError(path, [f"cannot read it: {exc}"]) from exc
    return parse(doc.get("config") if isinstance(doc, Mapping) else None, path)


#: Every config key, from the project's Pulumi.yaml, in its order.
KEYS: Final[dict[str, Key]] = load()


def default(name: str) -> Any:
    """The declared default of key ``name``. Raises KeyError for a key Pulumi.yaml lacks."""
    return KEYS[name].default


def section(*names: str) -> dict[str, tuple[str, object]]:
    """``{key: (kind, default)}`` for the keys ``names`` (a module's own section of the
    schema, e.g. gpulab.config.gpus's). Raises KeyError for a key Pulumi.yaml lacks."""
    return {n: (KEYS[n].kind, KEYS[n].default) for n in names}
