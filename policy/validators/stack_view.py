"""The stack resources as stack policies read them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import StackValidationArgs

from policy.stack_context import StackContext
from policy.validators.findings import Finding
from policy.validators.props import plain
from policy.validators.spec import Settings
from policy.validators.tokens import T_STACK


@dataclass(frozen=True)
class Res:
    """A stack resource as the stack checks read it (props already :func:`plain`)."""

    type: str
    urn: str
    name: str
    props: dict[str, Any]


StackCheck = Callable[[list[Res], Settings, StackContext], list[Finding]]


def stack_view(args: StackValidationArgs) -> list[Res]:
    """The resources of a stack validation as :class:`Res`."""
    return [Res(r.resource_type, r.urn, r.name, plain(r.props) or {}) for r in args.resources]


def _of_type(resources: Sequence[Res], rtype: str) -> list[Res]:
    return [r for r in resources if r.type == rtype]


def _stack_outputs(resources: Sequence[Res]) -> tuple[dict[str, Any], str | None]:
    stacks = _of_type(resources, T_STACK)
    return (stacks[0].props, stacks[0].urn) if stacks else ({}, None)
