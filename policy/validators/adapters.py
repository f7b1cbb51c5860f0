"""Running a :class:`~policy.validators.spec.Spec` the way the engine calls it, and turning its
findings into reports (:mod:`policy.validators` says what is reported)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from policy import stack_context
from policy.validators.findings import FAIL, LEDGER, UNVERIFIED, Finding
from policy.validators.props import plain
from policy.validators.spec import Spec
from policy.validators.stack_view import stack_view


def _emit(spec: Spec, findings: Sequence[Finding], urn: str, report: ReportViolation, args: Any) -> None:
    LEDGER.put(spec.name, urn, findings)
    failed = [f for f in findings if f.status == FAIL]
    for f in failed:
        report(f.report(), f.urn)
    unverified = [f for f in findings if f.status in UNVERIFIED]
    if not failed and unverified:
        args.not_applicable("; ".join(f.report() for f in unverified))


def validate_resource(spec: Spec, args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Run a resource ``spec`` on ``args`` (:mod:`policy.validators` says what is reported)."""
    props = plain(args.props) or {}
    findings = spec.check(
        args.resource_type, props, spec.settings(args.get_config()), stack_context.current()
    )
    _emit(spec, [replace(f, subject=args.urn) for f in findings], args.urn, report, args)


def validate_stack(spec: Spec, args: StackValidationArgs, report: ReportViolation) -> None:
    """Run a stack ``spec`` on ``args``."""
    findings = spec.check(stack_view(args), spec.settings(args.get_config()), stack_context.current())
    _emit(spec, findings, "stack", report, args)
