"""``no-plaintext-secrets``: no secret config value in a command line, Helm value or Pod
command/env (the package :mod:`policy.validators` says why values are compared, not
inspected)."""

from __future__ import annotations

from typing import Any, Final

from gpulab.core.argv import command_argv
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.props import dig
from policy.validators.spec import MANDATORY, Settings, Spec, _int
from policy.validators.tokens import (
    T_COMMAND,
    T_POD,
    T_RELEASE,
)


def _secret_scan_targets(rtype: str, props: dict[str, Any]) -> list[tuple[str, str]]:
    """``(where, text)`` pairs a secret must never appear in."""
    targets: list[tuple[str, str]] = []

    def strings(obj: Any, where: str) -> None:
        if isinstance(obj, str):
            targets.append((where, obj))
        elif isinstance(obj, dict):
            for k, v in obj.items():
                strings(v, f"{where}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                strings(v, f"{where}[{i}]")

    if rtype == T_COMMAND:
        # The argv each command string encodes (gpulab.core.argv), element by element.
        for key in ("create", "delete"):
            text = props.get(key)
            strings(command_argv(text) or text if isinstance(text, str) else text, key)
    elif rtype == T_RELEASE:
        strings(props.get("values"), "values")
    elif rtype == T_POD:
        for i, c in enumerate(dig(props, "spec", "containers") or []):
            if not isinstance(c, dict):
                continue
            strings(c.get("command"), f"spec.containers[{i}].command")
            strings(c.get("args"), f"spec.containers[{i}].args")
            for j, e in enumerate(c.get("env") or []):
                if isinstance(e, dict):
                    strings(e.get("value"), f"spec.containers[{i}].env[{j}].value")
    return targets


def check_no_plaintext_secrets(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    targets = _secret_scan_targets(rtype, props)
    if rtype not in (T_COMMAND, T_RELEASE, T_POD):
        return []
    item = "no-plaintext-secrets"
    expected = "no secret config value in any command argv, Helm value or Pod command/env"
    fix = (
        "pass the secret through the command's environment= wrapped in pulumi.Output.secret "
        "(never argv); for Helm, reference a Kubernetes Secret instead of a value"
    )
    if ctx.config is None:
        return [
            Finding(
                item,
                NOT_EVALUATED,
                "the engine gave the pack no stack config, so the secret values are unknown",
                expected,
                fix,
            )
        ]
    min_len = int(cfg.get("minSecretLength", 6))
    leaks = []
    for key, values in ctx.secret_values().items():
        needles = [v for v in values if len(v) >= min_len]
        for where, text in targets:
            if any(n in text for n in needles):
                leaks.append(f"secret config {key} in {where}")
    keys = ", ".join(sorted(ctx.secret_keys)) or "none"
    observed = "; ".join(leaks) if leaks else f"no secret value found (secret keys: {keys})"
    return [_finding(item, not leaks, observed, expected, fix)]


SPEC: Final = Spec(
    "no-plaintext-secrets",
    "Keep secret config values out of command lines and Helm values.",
    MANDATORY,
    "resource",
    check_no_plaintext_secrets,
    {"minSecretLength": _int(1, 6)},
)
