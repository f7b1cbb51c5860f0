"""``smoke-pod-restart-never``: the smoke Pod runs once."""

from __future__ import annotations

from typing import Any, Final

from gpulab.core.names import SMOKE_POD
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, require_known, show
from policy.validators.smoke.pod import _smoke_containers
from policy.validators.spec import _STR, MANDATORY, Settings, Spec


def check_smoke_restart_never(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    if _smoke_containers(rtype, props, cfg) is None:
        return []
    policy = require_known(dig(props, "spec", "restartPolicy"), "spec.restartPolicy")
    return [
        _finding(
            "smoke-pod-restart-never",
            policy == "Never",
            f"restartPolicy {show(policy)}" + (" (Kubernetes default: Always)" if policy is None else ""),
            "restartPolicy 'Never' (nvidia-smi runs once; the Pod must end Succeeded)",
            "set spec.restartPolicy: Never as in the chapter's step 5; with Always a finished "
            "nvidia-smi is restarted into CrashLoopBackOff",
        )
    ]


SPEC: Final = Spec(
    "smoke-pod-restart-never",
    "Run the smoke Pod once: set restartPolicy Never.",
    MANDATORY,
    "resource",
    check_smoke_restart_never,
    {"podName": {**_STR, "default": SMOKE_POD}},
)
