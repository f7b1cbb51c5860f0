"""``single-device-plugin-owner``: exactly one of minikube's addon and the operator runs the
device plugin (a stack policy: the owners are two resources)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from gpulab.config import lab as labconfig
from gpulab.core import fixes
from gpulab.core.outputs import LabOutputs, OutputsError
from gpulab.verdict import checklist
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.props import UNKNOWN, dig, has_unknown, show
from policy.validators.release.operator_release import is_operator_release
from policy.validators.spec import MANDATORY, Settings, Spec
from policy.validators.stack_view import Res, _of_type, _stack_outputs, lab_outputs
from policy.validators.tokens import (
    T_COMMAND,
    T_GPU_OPERATOR,
    T_RELEASE,
)
from variants.registry import NAMES, get, step_of


def _addon_state(resources: Sequence[Res]) -> tuple[Any, str]:
    """Whether a variant's own device plugin addon runs (``VariantSpec.device_plugin_addon``:
    minikube's), from the stack's commands whose create is known (an unknown one at preview
    is another step's: the lab's cluster commands are built from config alone)."""
    steps: dict[str, Any] = {}
    for cmd in _of_type(resources, T_COMMAND):
        create = cmd.props.get("create")
        step = None if has_unknown(create) else step_of(create)
        if step is not None:
            steps.setdefault(step, create)
    for name in NAMES:
        addon = get(name).spec.device_plugin_addon
        found = addon(steps) if addon is not None else None
        if found is not None:
            return found
    return False, "no device-plugin addon"


def _operator_plugin(resources: Sequence[Res], outputs: LabOutputs) -> tuple[Any, str]:
    releases = [r for r in _of_type(resources, T_RELEASE) if r.props]
    for rel in releases:
        if not is_operator_release(rel.props):
            continue
        enabled = dig(rel.props, "values", "devicePlugin", "enabled")
        if enabled is UNKNOWN:
            break
        on = enabled is None or enabled is True or str(enabled).lower() == "true"
        return on, f"operator devicePlugin.enabled={show(enabled)} (release values)"
    for op in _of_type(resources, T_GPU_OPERATOR):
        enabled = dig(op.props, "components", "devicePlugin")
        if isinstance(enabled, bool):
            return enabled, f"operator devicePlugin.enabled={show(enabled)} (GpuOperator component)"
    enabled = (outputs.operator_components or {}).get("devicePlugin")
    if isinstance(enabled, bool):
        return enabled, f"operator devicePlugin.enabled={show(enabled)} (stack output)"
    if _of_type(resources, T_RELEASE) or _of_type(resources, T_GPU_OPERATOR):
        return UNKNOWN, "operator values unknown"
    return False, "no GPU Operator"


def check_single_owner(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
    item = "single-device-plugin-owner"
    try:
        outputs, stack_urn = lab_outputs(resources, ctx)
    except OutputsError:  # the checklist's policies name every bad key; read no export here
        outputs, stack_urn = LabOutputs(), _stack_outputs(resources)[1]
    addon, addon_note = _addon_state(resources)
    operator, operator_note = _operator_plugin(resources, outputs)
    if not (_of_type(resources, T_RELEASE) or _of_type(resources, T_GPU_OPERATOR) or addon):
        return []
    want = str(cfg.get("owner") or "")
    expected = "exactly one of minikube's addon and the operator's device plugin" + (
        f", owned by {want}" if want else ""
    )
    allocatable = fixes.allocatable(outputs.profile, node=outputs.node_command or fixes.ANY_NODE)
    fix = (
        "scripts/pulumi config set gpu-lab:devicePluginOwner operator (the lab disables minikube's "
        "addon), or "
        "devicePluginOwner minikube-addon with devicePlugin false; with none, "
        + fixes.cite(allocatable, fixes.ALLOCATABLE_ZERO)
    )
    observed = f"{addon_note}; {operator_note}"
    if addon is UNKNOWN or operator is UNKNOWN:
        return [
            Finding(
                item,
                NOT_EVALUATED,
                f"{checklist.KNOWN_AFTER_DEPLOYMENT} ({observed})",
                expected,
                fix,
                stack_urn,
            )
        ]
    owners = [n for n, on in (("minikube-addon", addon), ("operator", operator)) if on]
    ok = len(owners) == 1 and (not want or owners == [want])
    found = _finding(item, ok, f"{observed} -> owners: {', '.join(owners) or 'none'}", expected, fix)
    return [replace(found, subject=stack_urn)]


SPEC: Final = Spec(
    "single-device-plugin-owner",
    "Let exactly one component own the device plugin: minikube's addon or the operator's.",
    MANDATORY,
    "stack",
    check_single_owner,
    {"owner": {"type": "string", "enum": list(labconfig.DEVICE_PLUGIN_OWNERS)}},
)
