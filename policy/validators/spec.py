"""One policy's definition (:class:`Spec`), the check signatures and the config-schema
fragments the policies' ``SPEC`` use."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pulumi_policy import EnforcementLevel

from policy.stack_context import StackContext
from policy.validators.findings import Finding

# Each resource check takes (resource type, plain props, policy config, stack context) and
# returns findings; an empty list means "not this policy's resource".
Settings = Mapping[str, Any]
ResourceCheck = Callable[[str, dict[str, Any], Settings, StackContext], list[Finding]]


@dataclass(frozen=True)
class Spec:
    """One policy: name, description, default level, config schema (defaults = expected
    values) and its check (resource or stack)."""

    name: str
    description: str
    level: EnforcementLevel
    kind: str  # "resource" | "stack"
    check: Callable[..., list[Finding]]
    properties: dict[str, dict[str, Any]] = field(default_factory=dict)

    def settings(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """Schema defaults overlaid with the pack config the engine gave this policy."""
        merged = {k: v["default"] for k, v in self.properties.items() if "default" in v}
        merged.update(dict(given or {}))
        merged.pop("enforcementLevel", None)
        return merged


# JSON-schema fragments for the pack config.
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}


def _int(minimum: int, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if default is not None:
        schema["default"] = default
    return schema


MANDATORY: Final = EnforcementLevel.MANDATORY
