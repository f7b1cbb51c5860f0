"""The registry of cluster variants: the one place that knows their names.

Each variant is a folder ``variants/<name>/`` whose ``__init__`` defines ``VARIANT``, an
implementation of :class:`variants.base.Variant`; adding a variant means adding its folder
and one line to :data:`REGISTRY`. The rest of the lab asks :func:`get` and calls the
interface.
"""

from __future__ import annotations

from typing import Final

from variants import existing, k3s, kind, minikube, sim
from variants.base import Variant

#: name -> variant, in the order config errors list them.
REGISTRY: Final[dict[str, Variant]] = {
    v.name: v for v in (minikube.VARIANT, sim.VARIANT, kind.VARIANT, k3s.VARIANT, existing.VARIANT)
}
NAMES: Final = tuple(REGISTRY)


def get(name: str) -> Variant:
    """The variant called ``name``.

    Raises:
        KeyError: no such variant (the message lists the known ones).
    """
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown cluster variant {name!r}; known: {', '.join(NAMES)}") from None


def step_of_module(module: str, subcommand: str) -> str | None:
    """The step name of ``python -m <module> <subcommand>`` when it is a variant's helper."""
    for v in REGISTRY.values():
        if module == v.ctl:
            return v.steps.get(subcommand)
    return None
