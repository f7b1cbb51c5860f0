"""``gpu-operator-driver-disabled``: the operator leaves the driver to the host."""

from __future__ import annotations

from typing import Any, Final

from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, require_known, show
from policy.validators.release.operator_release import _release_props
from policy.validators.spec import _BOOL, MANDATORY, Settings, Spec


def check_driver_disabled(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "gpu-operator-driver-disabled"
    host_driver = bool(cfg.get("hostProvidesDriver", True))
    enabled = require_known(dig(release, "values", "driver", "enabled"), "values.driver.enabled")
    if isinstance(enabled, str):
        enabled = enabled.strip().lower() != "false"
    observed = (
        "driver.enabled unset (the chart's default: true)"
        if enabled is None
        else f"driver.enabled={show(enabled)}"
    )
    if host_driver:
        return [
            _finding(
                item,
                enabled is False,
                observed,
                "driver.enabled=false: the host provides the driver",
                "set the release value driver.enabled=false (the chapter's step 2: --set "
                "driver.enabled=false); the operator must not install a second driver",
            )
        ]
    return [
        _finding(
            item,
            enabled is not False,
            observed,
            "the operator installs the driver (pack config hostProvidesDriver=false)",
            "remove driver.enabled=false from the release values",
        )
    ]


SPEC: Final = Spec(
    "gpu-operator-driver-disabled",
    "Leave the driver to the host: set driver.enabled=false on the GPU Operator release.",
    MANDATORY,
    "resource",
    check_driver_disabled,
    {"hostProvidesDriver": {**_BOOL, "default": True}},
)
