"""The registry of cluster variants: the one place that knows their names.

Each variant is a folder ``variants/<name>/`` whose ``__init__`` defines ``VARIANT``, an
implementation of :class:`variants.base.Variant`; adding a variant means adding its folder
and one line to :data:`REGISTRY`. Only the edge imports this module (the program's entry,
the policy pack, the operations' commands, the tests): it asks :func:`get` for the chosen
variant and passes it in; config is parsed with every variant (:func:`parse_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from gpulab.config import lab
from gpulab.core import argv
from variants import existing, k3s, kind, microk8s, minikube, sim
from variants.base import Variant

#: name -> variant, in the order config errors list them.
REGISTRY: Final[dict[str, Variant]] = {
    v.name: v
    for v in (minikube.VARIANT, sim.VARIANT, kind.VARIANT, k3s.VARIANT, microk8s.VARIANT, existing.VARIANT)
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
    """The step name of ``python -m <module> <subcommand>`` when it is a variant's helper, or
    of ``<tool> <subcommand>`` run directly when a variant names it (``VariantSpec.direct_steps``)."""
    for v in REGISTRY.values():
        if module == v.spec.ctl:
            return v.spec.steps.get(subcommand)
    for v in REGISTRY.values():
        step = v.spec.direct_steps.get((module, subcommand))
        if step:
            return step
    return None


def step_of(command: str | None) -> str | None:
    """The stable step name of an encoded lab command, the variants' helpers included
    (:func:`gpulab.core.argv.step_of`), or None."""
    return argv.step_of(command, step_of_module)


def parse_config(raw: Mapping[str, str], env: Mapping[str, str] | None = None) -> lab.LabConfig:
    """:func:`gpulab.config.lab.parse_config` with every variant's record (``spec``) of the registry.

    Raises:
        gpulab.config.lab.ConfigError: every problem at once.
    """
    return lab.parse_config(raw, [v.spec for v in REGISTRY.values()], env)
