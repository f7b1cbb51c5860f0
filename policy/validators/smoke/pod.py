"""Which Pod is the smoke Pod."""

from __future__ import annotations

from typing import Any

from gpulab.core.names import SMOKE_POD
from policy.validators.props import dig, require_known
from policy.validators.spec import Settings
from policy.validators.tokens import T_POD


def _smoke_containers(rtype: str, props: dict[str, Any], cfg: Settings) -> list[dict[str, Any]] | None:
    if rtype != T_POD:
        return None
    name = require_known(dig(props, "metadata", "name"), "metadata.name")
    if name != str(cfg.get("podName") or SMOKE_POD):
        return None
    containers = require_known(dig(props, "spec", "containers"), "spec.containers") or []
    return [c for c in containers if isinstance(c, dict)]
