"""The API kinds a chart will create with the lab's values, read from its templates.

Helm builds every object of a release through the API server's REST mapping before it
creates any; a kind the server does not serve stops the install with ``unable to build
kubernetes objects from release manifest: resource mapping not found for name: ... no matches
for kind "X" in version "g/v" ensure CRDs are installed first`` (NVIDIA/gpu-operator#453).
Kinds the chart's own ``crds/`` define are installed first and count as served.

:func:`chart_needs` reads the chart directory without rendering it: each template document's
``apiVersion:`` and ``kind:`` lines, and the ``{{ if }}`` / ``{{ with }}`` / ``{{ range }}``
blocks around them, whose conditions are evaluated against the chart's ``values.yaml``
merged with the lab's values (three-valued: true, false, unknown). A document under a
condition that is false is not rendered; under one this reader cannot evaluate (a function
it does not know, a templated ``apiVersion``) it is ``maybe``: reported, never a reason to
refuse. Subcharts are read when their dependency's ``condition`` holds. The operators
understood: ``and``, ``or``, ``not``, ``empty``, ``eq``, ``ne``, ``has``, ``typeIs``-free
literals and ``.Values.a.b`` paths (what the GPU Operator chart v26.7.0 and its NFD subchart
use: tests/contract). ``extraObjects`` (a list of literal objects in the values) are read as
they are.

Pure: reads files, no Helm, no API calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import yamlio

#: Unknown, in the three-valued evaluation.
UNKNOWN: Final = None

_ACTION_RE: Final = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.S)
_DOC_SPLIT_RE: Final = re.compile(r"^---\s*$", re.M)
_TOKEN_RE: Final = re.compile(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()]+')


class ChartReadError(ValueError):
    """The chart directory cannot be read (no Chart.yaml, values not YAML)."""


@dataclass(frozen=True)
class Needed:
    """One kind the chart renders: ``api_version`` (``monitoring.coreos.com/v1``), ``kind``,
    the template ``source`` (``templates/servicemonitor.yaml``, relative to the chart), the
    condition that enables it (``.Values.dcgmExporter.serviceMonitor.enabled``; ``""`` when
    unconditional), and ``certain``: False when a condition could not be evaluated."""

    api_version: str
    kind: str
    source: str
    condition: str = ""
    certain: bool = True

    @property
    def group_version(self) -> tuple[str, str]:
        """``("monitoring.coreos.com", "v1")``; the core group is ``""``."""
        group, _, version = self.api_version.rpartition("/")
        return group, version


@dataclass(frozen=True)
class ChartApis:
    """What :func:`chart_needs` found: the kinds rendered, and the kinds the chart's CRDs
    (its own and enabled subcharts') define as ``group/version/Kind``."""

    needed: tuple[Needed, ...]
    crd_kinds: frozenset[str] = field(default_factory=frozenset)


def merge(base: Any, over: Any) -> Any:
    """Helm's coalescing of values: maps merge key by key, anything else in ``over`` wins."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for k, v in over.items():
            out[k] = merge(base.get(k), v) if k in base else v
        return out
    return base if over is None else over


def _lookup(values: Any, path: str) -> Any:
    """``.Values.a.b`` -> values["a"]["b"]; missing is None (Go templates' nil)."""
    cur = values
    for part in path.split(".")[2:]:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def _truthy(v: Any) -> bool | None:
    if v is UNKNOWN_VALUE:
        return UNKNOWN
    return bool(v) and v not in (0, "0") if not isinstance(v, str) else v != ""


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN_VALUE: Final = _Unknown()


def _parse(tokens: list[str]) -> Any:
    """A Go template pipeline (no ``|``) as a nested list: ``and .A (not .B)`` ->
    ``["and", ".A", ["not", ".B"]]``."""
    out: list[Any] = []
    while tokens:
        t = tokens.pop(0)
        if t == "(":
            out.append(_parse(tokens))
        elif t == ")":
            return out
        else:
            out.append(t)
    return out


def _value(term: Any, values: Any) -> Any:
    if isinstance(term, list):
        return _call(term, values)
    if term.startswith(".Values"):
        return _lookup(values, term)
    if term.startswith('"'):
        return term[1:-1]
    if term in ("true", "false"):
        return term == "true"
    if re.fullmatch(r"-?\d+", term):
        return int(term)
    return UNKNOWN_VALUE


def _call(expr: list[Any], values: Any) -> Any:
    if not expr:
        return UNKNOWN_VALUE
    head, args = expr[0], expr[1:]
    if not isinstance(head, str) or head.startswith(".") or head.startswith('"'):
        return _value(head, values) if len(expr) == 1 else UNKNOWN_VALUE
    vals = [_value(a, values) for a in args]
    if head == "not" and len(vals) == 1:
        t = _truthy(vals[0])
        return UNKNOWN_VALUE if t is UNKNOWN else not t
    if head in ("and", "or"):
        truths = [_truthy(v) for v in vals]
        if head == "and":
            if any(t is False for t in truths):
                return False
            return UNKNOWN_VALUE if any(t is UNKNOWN for t in truths) else True
        if any(t is True for t in truths):
            return True
        return UNKNOWN_VALUE if any(t is UNKNOWN for t in truths) else False
    if head == "empty" and len(vals) == 1:
        t = _truthy(vals[0])
        return UNKNOWN_VALUE if t is UNKNOWN else not t
    if head in ("eq", "ne") and len(vals) >= 2:
        if any(v is UNKNOWN_VALUE for v in vals):
            return UNKNOWN_VALUE
        same = any(vals[0] == v for v in vals[1:])
        return same if head == "eq" else not same
    if head == "has" and len(vals) == 2:
        if any(v is UNKNOWN_VALUE for v in vals):
            return UNKNOWN_VALUE
        return isinstance(vals[1], list) and vals[0] in vals[1]
    return UNKNOWN_VALUE


def evaluate(condition: str, values: Any) -> bool | None:
    """A template condition (``and .Values.a (not .Values.b)``) against ``values``: True,
    False, or None when it uses what this reader does not know."""
    return _truthy(_call(_parse(_TOKEN_RE.findall(condition)), values))


@dataclass
class _Frame:
    kind: str  # if | with | range | define
    truth: bool | None
    text: str
    taken: bool | None = False  # some earlier branch of this if was true (None: maybe)


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return UNKNOWN if a is UNKNOWN or b is UNKNOWN else True


def _range_truth(expr: str, values: Any) -> bool | None:
    term = expr.split(":=")[-1].strip()
    v = _value(_parse(_TOKEN_RE.findall(term))[0], values) if term else UNKNOWN_VALUE
    if v is UNKNOWN_VALUE:
        return UNKNOWN
    return bool(v)


def _active(stack: Sequence[_Frame]) -> tuple[bool | None, str]:
    truth: bool | None = True
    conds = []
    for f in stack:
        if f.kind == "define":
            return False, ""
        truth = _and(truth, f.truth)
        if f.kind in ("if", "with") and f.text:
            conds.append(f.text)
    return truth, " and ".join(conds)


#: The fields that make a rendered document a Kubernetes object (its type).
_TYPE_KEYS: Final = ("apiVersion", "kind")


def _scan_template(text: str, values: Any, source: str) -> Iterator[Needed]:
    stack: list[_Frame] = []
    doc: dict[str, tuple[str, bool | None, str]] = {}

    def flush() -> Iterator[Needed]:
        if all(key in doc for key in _TYPE_KEYS):
            (api, t1, c1), (kind, t2, c2) = doc["apiVersion"], doc["kind"]
            truth = _and(t1, t2)
            if truth is not False:
                templated = "{{" in api or "{{" in kind
                yield Needed(api, kind, source, c2 or c1, certain=truth is True and not templated)
        doc.clear()

    for line in text.splitlines():
        if re.match(r"^---\s*$", line):
            yield from flush()
            continue
        for action in _ACTION_RE.findall(line):
            words = action.split(None, 1)
            head = words[0] if words else ""
            rest = words[1] if len(words) > 1 else ""
            if head == "if":
                stack.append(_Frame("if", evaluate(rest, values), rest))
            elif head == "else" and stack and stack[-1].kind == "if":
                f = stack[-1]
                f.taken = (
                    True
                    if f.truth is True
                    else (UNKNOWN if f.truth is UNKNOWN or f.taken is UNKNOWN else f.taken)
                )
                prior = f.taken
                cond = rest[3:].strip() if rest.startswith("if ") else ""
                branch = evaluate(cond, values) if cond else True
                not_prior = False if prior is True else (UNKNOWN if prior is UNKNOWN else True)
                f.truth = _and(not_prior, branch)
                f.text = f"not ({f.text})" + (f" and {cond}" if cond else "")
            elif head == "with":
                stack.append(_Frame("with", evaluate(rest, values), rest))
            elif head == "range":
                stack.append(_Frame("range", _range_truth(rest, values), rest))
            elif head in ("define", "block"):
                stack.append(_Frame("define", False, rest))
            elif head == "end" and stack:
                stack.pop()
        m = re.match(r"^(apiVersion|kind):\s*(.+?)\s*$", line)
        if m:
            truth, cond = _active(stack)
            doc[m.group(1)] = (m.group(2).strip("\"'"), truth, cond)
    yield from flush()


def _chart_meta(chart_dir: Path) -> Mapping[str, Any]:
    try:
        meta = yamlio.load((chart_dir / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ChartReadError(f"{chart_dir}/Chart.yaml: {exc}") from exc
    if not isinstance(meta, Mapping):
        raise ChartReadError(f"{chart_dir}/Chart.yaml is not a mapping")
    return meta


def _values(chart_dir: Path) -> Mapping[str, Any]:
    path = chart_dir / "values.yaml"
    if not path.is_file():
        return {}
    try:
        doc = yamlio.load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ChartReadError(f"{path}: {exc}") from exc
    return doc if isinstance(doc, Mapping) else {}


def _crd_kinds(chart_dir: Path) -> set[str]:
    out: set[str] = set()
    crds = chart_dir / "crds"
    if not crds.is_dir():
        return out
    for f in sorted(crds.iterdir()):
        if f.suffix not in (".yaml", ".yml", ".json"):
            continue
        try:
            docs = list(yamlio.load_all(f.read_text(encoding="utf-8")))
        except yaml.YAMLError as exc:
            raise ChartReadError(f"{f}: {exc}") from exc
        for d in docs:
            if not isinstance(d, Mapping) or d.get("kind") != "CustomResourceDefinition":
                continue
            spec = d.get("spec") or {}
            kind = (spec.get("names") or {}).get("kind")
            for v in spec.get("versions") or []:
                if v.get("served", True):
                    out.add(f"{spec.get('group')}/{v.get('name')}/{kind}")
    return out


def _extra_objects(values: Any, source: str) -> Iterator[Needed]:
    for item in (values or {}).get("extraObjects") or []:
        obj = item
        if isinstance(item, str):
            try:
                obj = yamlio.load(item) if "{{" not in item else None
            except yaml.YAMLError:
                obj = None
            if obj is None:
                yield Needed("?", "?", source, ".Values.extraObjects", certain=False)
                continue
        if isinstance(obj, Mapping) and obj.get("apiVersion") and obj.get("kind"):
            yield Needed(str(obj["apiVersion"]), str(obj["kind"]), source, ".Values.extraObjects")


def _walk(chart_dir: Path, values: Any, prefix: str) -> tuple[list[Needed], set[str]]:
    needed: list[Needed] = []
    crd_kinds = _crd_kinds(chart_dir)
    templates = chart_dir / "templates"
    for f in sorted(templates.rglob("*")) if templates.is_dir() else []:
        if not f.is_file() or f.name.startswith("_") or f.suffix not in (".yaml", ".yml", ".tpl"):
            continue
        rel = f"{prefix}{f.relative_to(chart_dir)}"
        text = f.read_text(encoding="utf-8")
        if "range .Values.extraObjects" in text:
            needed.extend(_extra_objects(values, rel))
            continue
        needed.extend(_scan_template(text, values, rel))
    meta = _chart_meta(chart_dir)
    for dep in meta.get("dependencies") or []:
        name = dep.get("alias") or dep.get("name")
        sub = chart_dir / "charts" / str(dep.get("name"))
        if not sub.is_dir():
            continue
        cond = dep.get("condition")
        if cond and evaluate(".Values." + str(cond).split(",")[0].strip(), values) is False:
            continue
        sub_values = merge(_values(sub), (values or {}).get(name) or {})
        sub_needed, sub_crds = _walk(sub, sub_values, f"{prefix}charts/{dep.get('name')}/")
        needed.extend(sub_needed)
        crd_kinds |= sub_crds
    return needed, crd_kinds


def chart_needs(chart_dir: Path, lab_values: Mapping[str, Any]) -> ChartApis:
    """The kinds ``chart_dir`` renders with ``lab_values`` over its ``values.yaml``, and the
    kinds its CRDs define (see the module docstring).

    Raises:
        ChartReadError: no readable Chart.yaml, or a values or CRD file that is not YAML.
    """
    _chart_meta(chart_dir)
    values = merge(_values(chart_dir), dict(lab_values))
    needed, crd_kinds = _walk(chart_dir, values, "")
    seen: dict[tuple[str, str, str], Needed] = {}
    for n in needed:
        seen.setdefault((n.api_version, n.kind, n.source), n)
    return ChartApis(tuple(seen.values()), frozenset(crd_kinds))
