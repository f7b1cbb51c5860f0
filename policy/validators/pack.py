"""The pack: every policy in pack order, the ``checklist-unverified`` report, and the
pulumi-policy objects ``policy/__main__.py`` hands to ``PolicyPack``."""

from __future__ import annotations

from typing import Final

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from policy.validators import checklist_items
from policy.validators.adapters import validate_resource, validate_stack
from policy.validators.compute import check_configured
from policy.validators.device_plugin import single_owner
from policy.validators.findings import LEDGER
from policy.validators.queues import quota_within_allocatable
from policy.validators.release import (
    chart_pinned,
    chart_source,
    device_plugin_chart,
    driver_disabled,
    namespace,
    operand_images_pinned,
    toolkit_fits_runtime,
    toolkit_redundant,
)
from policy.validators.secrets import no_plaintext_secrets
from policy.validators.smoke import cuda_fits_host, dra_claim, gpu_limit, image_pinned, restart_never
from policy.validators.spec import Spec
from policy.validators.variant_policies import SPECS as VARIANT_SPECS

PACK_NAME: Final = "gpu-lab-checklist"

#: Every policy but ``checklist-unverified``, in pack order (the order it lists findings in).
SPECS: Final[tuple[Spec, ...]] = (
    chart_pinned.SPEC,
    driver_disabled.SPEC,
    namespace.SPEC,
    chart_source.SPEC,
    toolkit_fits_runtime.SPEC,
    toolkit_redundant.SPEC,
    operand_images_pinned.SPEC,
    device_plugin_chart.SPEC,
    gpu_limit.SPEC,
    dra_claim.SPEC,
    restart_never.SPEC,
    image_pinned.SPEC,
    *VARIANT_SPECS,  # each variant's own (minikube's start command: GPUs, resources)
    no_plaintext_secrets.SPEC,
    single_owner.SPEC,
    cuda_fits_host.SPEC,
    check_configured.SPEC,
    quota_within_allocatable.SPEC,
    *checklist_items.SPECS,
)

UNVERIFIED_POLICY: Final = "checklist-unverified"
UNVERIFIED_DESCRIPTION: Final = (
    "List every check this run could not verify: not evaluated (e.g. known after deployment) "
    "or not observable in the simulated lab."
)


def validate_unverified(args: StackValidationArgs, report: ReportViolation) -> None:
    """``checklist-unverified``: one advisory line per finding that is neither pass nor fail."""
    for f in LEDGER.unverified([s.name for s in SPECS]):
        report(f.report(), f.urn)


def _schema(spec: Spec) -> PolicyConfigSchema | None:
    return PolicyConfigSchema(properties=spec.properties) if spec.properties else None


def build_policy(spec: Spec) -> Policy:
    """The pulumi-policy object for ``spec``."""
    if spec.kind == "resource":
        return ResourceValidationPolicy(
            name=spec.name,
            description=spec.description,
            validate=lambda args, report: validate_resource(spec, args, report),
            enforcement_level=spec.level,
            config_schema=_schema(spec),
        )
    return StackValidationPolicy(
        name=spec.name,
        description=spec.description,
        validate=lambda args, report: validate_stack(spec, args, report),
        enforcement_level=spec.level,
        config_schema=_schema(spec),
    )


def build_policies() -> list[Policy]:
    """Every policy in pack order; ``checklist-unverified`` last (it reads the others' findings)."""
    return [build_policy(s) for s in SPECS] + [
        StackValidationPolicy(
            name=UNVERIFIED_POLICY,
            description=UNVERIFIED_DESCRIPTION,
            validate=validate_unverified,
            enforcement_level=EnforcementLevel.ADVISORY,
        )
    ]


def spec(name: str) -> Spec:
    """The :class:`Spec` called ``name`` (KeyError naming the known ones otherwise)."""
    for s in SPECS:
        if s.name == name:
            return s
    raise KeyError(f"no policy {name!r}; known: {', '.join(s.name for s in SPECS)}")
