"""The stack resources as stack policies read them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import StackValidationArgs

from gpulab.core.outputs import UNKNOWN, LabOutputs
from policy.stack_context import StackContext
from policy.validators.findings import Finding
from policy.validators.props import has_unknown, lab_setting, plain
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


def lab_outputs(
    resources: Sequence[Res], ctx: StackContext | None, *, time_slicing_replicas: int | None = None
) -> tuple[LabOutputs, str | None]:
    """The stack's exports as the typed model every policy reads, and the stack's URN (None
    without a stack resource). A value that is or holds an unknown is unknown; the profile
    is the stack's ``gpu-lab:profile`` (else the default; the default without ``ctx``);
    ``time_slicing_replicas`` (pack config) overrides the outputs' replicas
    (gpulab.core.outputs.LabOutputs.time_slicing_replicas).

    Raises:
        gpulab.core.outputs.OutputsError: an export has the wrong shape (every key named).
    """
    raw, urn = _stack_outputs(resources)
    known = {k: (UNKNOWN if has_unknown(v) else v) for k, v in raw.items()}
    model = LabOutputs.from_json(
        known,
        profile=lab_setting(ctx, "profile") if ctx else None,
        time_slicing_replicas=time_slicing_replicas,
    )
    return model, urn
