"""``adoptExisting``: the objects of a cluster the lab does not own that it may use as they are.

Before anything is created on such a cluster, preflight refuses every object of a name the lab
would create that exists and is not the lab's (gpulab.kube.takeover). This key is the recorded
opt-in for the one kind the lab can use without taking it over: a Namespace. The lab then
patches it (its Pod Security label only) instead of creating it, and destroy gives the patch
back and leaves the namespace, with everything the lab did not put in it (components/
gpu_operator.py ``lab_namespace``). What was adopted is in the ``adoptedObjects`` output and on
the card.

Format: ``Namespace/<name>,...`` (a DNS label each, at most :data:`MAX_ADOPTED`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

#: The only kind the lab can adopt: it patches a Namespace, and has nothing else to patch.
ADOPTABLE_KIND: Final = "Namespace"
#: Most objects one stack may adopt (the lab writes to at most two namespaces).
MAX_ADOPTED: Final = 8
_ITEM: Final = re.compile(r"^Namespace/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)$")


def namespaces(adopted: tuple[str, ...]) -> frozenset[str]:
    """The namespace names of ``adopted`` (:func:`parse`'s ``Namespace/<name>`` items)."""
    return frozenset(item.split("/", 1)[1] for item in adopted)


def parse(get: Callable[[str], object], problems: list[str], ns: str = "gpu-lab") -> tuple[str, ...]:
    """``adoptExisting`` as a sorted tuple of ``Namespace/<name>`` (empty: adopt nothing); one
    line per bad item is appended to ``problems`` (not ``Namespace/<DNS label>``, a
    ``kube-*`` namespace, named twice, more than :data:`MAX_ADOPTED`)."""
    raw = str(get("adoptExisting")).strip()
    found: list[str] = []
    for item in filter(None, (i.strip() for i in raw.split(","))):
        m = _ITEM.match(item)
        if m is None or m.group(1).startswith("kube-"):
            problems.append(
                f"{ns}:adoptExisting item {item!r} is not Namespace/<name> (a DNS label, not kube-*): "
                f"only a {ADOPTABLE_KIND} can be adopted; e.g. adoptExisting=Namespace/gpu-operator"
            )
            continue
        if item in found:
            problems.append(f"{ns}:adoptExisting names {item} twice")
            continue
        found.append(item)
    if len(found) > MAX_ADOPTED:
        problems.append(f"{ns}:adoptExisting names {len(found)} objects; at most {MAX_ADOPTED}")
    return tuple(sorted(found))
