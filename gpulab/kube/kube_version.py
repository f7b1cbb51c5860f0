"""A chart's ``kubeVersion`` against the API server's version, the way Helm decides it.

Helm refuses a release whose chart's ``Chart.yaml`` ``kubeVersion`` constraint does not
accept the server's ``GitVersion`` ("chart requires kubeVersion: %s which is incompatible with
Kubernetes %s", helm v3.21.4 ``pkg/action/action.go``), through
``chartutil.IsCompatibleRange`` and Masterminds/semver v3's constraints
(``constraints.go`` at v3.4.0). Their rules, reproduced here (the comparison of two
versions is python-semver's, SemVer 2.0 precedence):

* ``||`` separates alternatives; within one, comparators are separated by spaces or commas
  and all must hold; ``A - B`` is ``>= A, <= B``.
* operators ``=`` (or none), ``!=``, ``>``, ``<``, ``>=``/``=>``, ``<=``/``=<``, ``~``/``~>``,
  ``^``; a version may be partial or use ``x``/``X``/``*`` wildcards (``1.2``, ``1.x``).
* **prereleases**: a version with a prerelease part (``v1.30.3-eks-a18cd3a``,
  ``v1.22.0-rc.0+894a78b``) satisfies an alternative only when one of its comparators has a
  prerelease part itself; that is why charts write ``>= 1.16.0-0``. Build metadata
  (``+k3s1``) is ignored.

:func:`check` returns a :class:`KubeVersionVerdict`; a constraint this module cannot parse is
``unknown`` (the release is not refused on it), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import semver

#: A version inside a constraint: ``v?MAJOR[.MINOR[.PATCH]][-PRE][+BUILD]``, parts may be
#: wildcards (Masterminds' ``cvRegex``).
_CV: Final = (
    r"v?([0-9xX*]+)(\.[0-9xX*]+)?(\.[0-9xX*]+)?"
    r"(-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
_OPS: Final = r"=>|=<|>=|<=|!=|~>|>|<|=|~|\^|"
_ONE_RE: Final = re.compile(rf"^\s*({_OPS})\s*({_CV})\s*$")
_FIND_RE: Final = re.compile(rf"({_OPS})\s*({_CV})")
_VALID_RE: Final = re.compile(rf"^(\s*({_OPS})\s*({_CV})\s*)((?:\s+|,\s*)({_OPS})\s*({_CV})\s*)*$")
_RANGE_RE: Final = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*")
#: A server version as the API server reports it (``v1.34.0``, ``v1.30.3-eks-a18cd3a``,
#: ``v1.25.3+k3s1``).
_VERSION_RE: Final = re.compile(
    r"^v?(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class ConstraintError(ValueError):
    """The constraint is not one Masterminds/semver v3 parses (Helm would refuse the chart)."""


@dataclass(frozen=True)
class _Comparator:
    """One comparator: its operator, version, the text it was written as, and which parts
    were wildcards or missing (Masterminds' ``dirty``, ``minorDirty``, ``patchDirty``)."""

    op: str
    version: semver.Version
    text: str
    dirty: bool = False
    minor_dirty: bool = False
    patch_dirty: bool = False


def _is_x(part: str | None) -> bool:
    return part in ("x", "X", "*")


def parse_version(text: str) -> semver.Version:
    """A server or chart version as SemVer (``v`` and missing minor/patch allowed).

    Raises:
        ValueError: not a version.
    """
    m = _VERSION_RE.match(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a semantic version")
    major, minor, patch, pre, build = m.groups()
    return semver.Version(int(major), int(minor or 0), int(patch or 0), pre, build)


def _comparator(text: str) -> _Comparator:
    m = _ONE_RE.match(text)
    if m is None:
        raise ConstraintError(f"improper constraint: {text}")
    op, orig = m.group(1), m.group(2)
    major, minor, patch = m.group(3), (m.group(4) or "")[1:], (m.group(5) or "")[1:]
    pre = (m.group(6) or "")[1:] or None
    if _is_x(major) or not major:
        return _Comparator(op, semver.Version(0, 0, 0, pre), orig, dirty=True)
    if _is_x(minor) or not minor:
        return _Comparator(op, semver.Version(int(major), 0, 0, pre), orig, dirty=True, minor_dirty=True)
    if _is_x(patch) or not patch:
        version = semver.Version(int(major), int(minor), 0, pre)
        return _Comparator(op, version, orig, dirty=True, patch_dirty=True)
    return _Comparator(op, semver.Version(int(major), int(minor), int(patch), pre), orig)


def _cmp(a: semver.Version, b: semver.Version) -> int:
    # Build metadata does not take part in precedence (SemVer 2.0 item 10).
    return a.replace(build=None).compare(b.replace(build=None))


def _tilde(v: semver.Version, c: _Comparator) -> bool:
    if _cmp(v, c.version) < 0:
        return False
    if (
        c.version.major == 0
        and c.version.minor == 0
        and c.version.patch == 0
        and not (c.minor_dirty or c.patch_dirty)
    ):
        return True
    if v.major != c.version.major:
        return False
    return v.minor == c.version.minor or c.minor_dirty


def _caret(v: semver.Version, c: _Comparator) -> bool:
    if _cmp(v, c.version) < 0:
        return False
    if c.version.major > 0 or c.minor_dirty:
        return v.major == c.version.major
    if v.major > 0:
        return False
    if c.version.minor > 0 or c.patch_dirty:
        return v.minor == c.version.minor
    if v.minor > 0:
        return False
    return v.patch == c.version.patch


def _holds(v: semver.Version, c: _Comparator) -> bool:
    """Whether ``v`` satisfies one comparator (prereleases already allowed by the caller)."""
    op = c.op
    if op in ("", "="):
        return _tilde(v, c) if c.dirty else _cmp(v, c.version) == 0
    if op == "!=":
        if c.dirty:
            if v.major != c.version.major:
                return True
            if c.minor_dirty:
                return False
            if v.minor != c.version.minor:
                return True
            if c.patch_dirty:
                return (v.prerelease or "") != (c.version.prerelease or "")
        return _cmp(v, c.version) != 0
    if op == ">":
        if not c.dirty:
            return _cmp(v, c.version) > 0
        if v.major != c.version.major:
            return v.major > c.version.major
        if c.minor_dirty:
            return False
        if c.patch_dirty:
            return v.minor > c.version.minor
        return _cmp(v, c.version) > 0
    if op == "<":
        return _cmp(v, c.version) < 0
    if op in (">=", "=>"):
        return _cmp(v, c.version) >= 0
    if op in ("<=", "=<"):
        if not c.dirty:
            return _cmp(v, c.version) <= 0
        if v.major != c.version.major:
            return v.major < c.version.major
        return not (v.minor > c.version.minor and not c.minor_dirty)
    if op in ("~", "~>"):
        return _tilde(v, c)
    if op == "^":
        return _caret(v, c)
    raise ConstraintError(f"unknown operator {op!r}")


def parse_constraint(text: str) -> list[list[_Comparator]]:
    """The alternatives of ``text``, each a list of comparators that must all hold.

    Raises:
        ConstraintError: Masterminds/semver would refuse it ("improper constraint").
    """
    rewritten = _RANGE_RE.sub(lambda m: f">= {m.group(1)}, <= {m.group(9)} ", text)
    alternatives = []
    for part in rewritten.split("||"):
        if not _VALID_RE.match(part):
            raise ConstraintError(f"improper constraint: {part.strip()}")
        found = [m.group(0) for m in _FIND_RE.finditer(part)] or [part]
        alternatives.append([_comparator(s) for s in found])
    return alternatives


def satisfies(constraint: str, version: str) -> bool:
    """Whether ``version`` (``v1.34.0``) satisfies ``constraint`` (``>= 1.16.0-0``) the way
    Helm's ``chartutil.IsCompatibleRange`` decides it.

    Raises:
        ConstraintError: the constraint does not parse.
        ValueError: the version does not parse (Helm would then refuse the chart too).
    """
    v = parse_version(version)
    for group in parse_constraint(constraint):
        allow_pre = any(c.version.prerelease for c in group)
        if v.prerelease and not allow_pre:
            continue
        if all(_holds(v, c) for c in group):
            return True
    return False
