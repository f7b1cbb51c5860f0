"""Reading what the engine gives a policy: resource props (unknown at preview, secrets
unwrapped) and the stack's ``gpu-lab:*`` settings."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import Secret
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from gpulab.config import lab as labconfig
from gpulab.core.outputs import is_unknown_value
from policy.stack_context import StackContext
from policy.validators.findings import UNKNOWN


def plain(value: Any) -> Any:
    """``value`` (a pulumi-policy props proxy or plain data) as plain dicts/lists.

    Unknown values (the SDK's ``UNKNOWN_*`` sentinels, which its proxies raise
    ``UnknownValueError`` on) become :data:`UNKNOWN`; ``pulumi_policy.Secret`` wrappers are
    unwrapped. Never raises for unknowns.
    """
    if isinstance(value, str):
        return UNKNOWN if is_unknown_value(value) else value
    if value is UNKNOWN or value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Secret):
        return plain(value.value)
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for key in list(value):
            try:
                item = value[key]
            except UnknownValueError:
                result[str(key)] = UNKNOWN
                continue
            result[str(key)] = plain(item)
        return result
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        items: list[Any] = []
        for i in range(len(value)):
            try:
                elem = value[i]
            except UnknownValueError:
                items.append(UNKNOWN)
                continue
            items.append(plain(elem))
        return items
    return value


def has_unknown(value: Any) -> bool:
    """True when ``value`` (from :func:`plain`) is or contains :data:`UNKNOWN`."""
    if value is UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(has_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(has_unknown(v) for v in value)
    return False


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]...``; None when a step is missing, UNKNOWN when one is unknown."""
    for step in path:
        if obj is UNKNOWN:
            return UNKNOWN
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and -len(obj) <= step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def require_known(value: Any, path: str) -> Any:
    """``value``, or raise the SDK's ``UnknownValueError`` for ``path`` (resource policies)."""
    if has_unknown(value):
        raise UnknownValueError(UNKNOWN_STRING_VALUE, path.split("."))
    return value


def show(value: Any) -> str:
    """A short rendering of an observed value for messages."""
    if value is None:
        return "unset"
    if value is UNKNOWN:
        return "unknown"
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, default=str, sort_keys=True)


def _known(value: Any) -> bool:
    return value is not None and not has_unknown(value)


def lab_setting(ctx: StackContext, key: str) -> str | None:
    """The stack's ``gpu-lab:<key>`` (the program's default when unset); None with no stack config."""
    if ctx.config is None:
        return None
    value = ctx.get(f"{labconfig.NAMESPACE}:{key}")
    if value is not None:
        return value
    default = labconfig.SCHEMA.get(key, ("str", None))[1]
    if default is None:
        return None
    return str(default).lower() if isinstance(default, bool) else str(default)
