"""The variants' own policies, as the pack runs them: each ``CommandPolicy`` a variant's record
names (``VariantSpec.policies``: minikube's on its ``minikube start``, variants/minikube/
policies.py) wrapped as a resource :class:`~policy.validators.spec.Spec` that reads every
``command:local:Command`` of the policy's step. The variant brings the check; the pack brings
the SDK's shape (unknown values at preview, the enforcement level, the config schema)."""

from __future__ import annotations

from typing import Any, Final

from gpulab.config.variant import CommandPolicy
from policy.stack_context import StackContext
from policy.validators.findings import Finding
from policy.validators.props import require_known
from policy.validators.spec import MANDATORY, Settings, Spec
from policy.validators.tokens import T_COMMAND
from variants import registry


def spec_of(policy: CommandPolicy) -> Spec:
    """``policy`` as a mandatory resource policy on the commands of its step (no finding for any
    other resource: not this policy's)."""

    def check(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
        if rtype != T_COMMAND:
            return []
        create = require_known(props.get("create"), "create")
        if registry.step_of(create) != policy.step:
            return []
        return policy.check(create, cfg)

    properties = {k: dict(v) for k, v in policy.properties.items()}
    return Spec(policy.name, policy.description, MANDATORY, "resource", check, properties)


#: Every variant's policies, in the registry's order.
SPECS: Final[tuple[Spec, ...]] = tuple(
    spec_of(p) for v in registry.REGISTRY.values() for p in v.spec.policies
)
