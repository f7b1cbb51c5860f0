"""What the engine tells the policy pack about the stack: preview or update, and its config.

The engine sends it in ``Analyzer.ConfigureStack`` (``AnalyzerStackConfigureRequest``:
``dry_run``, ``config`` with secrets decrypted, ``config_secret_keys``) before any
``Analyze`` call; see ``pkg/engine/update.go`` (``PolicyAnalyzerOptions``) and
``pkg/resource/plugin/analyzer_plugin.go`` in pulumi v3.274. pulumi-policy 1.21 receives
the request and keeps only the stack tags, and because the engine starts a Python pack
through the language host's ``RunPlugin`` it also sets no ``PULUMI_CONFIG`` /
``PULUMI_DRY_RUN`` environment for it. Its public API has no other way in: a policy is given
``ResourceValidationArgs`` / ``StackValidationArgs`` (the resource or the stack's resources,
``stack_tags``, and ``get_config()``, which is the pack's own policy config, not the stack's),
and its runtime settings (``pulumi.runtime.is_dry_run``) are configured only from that absent
environment (pulumi_policy 1.21.0 policy.py: ``ConfigureStack`` stores ``request.tags`` and
nothing else; ``_configure_runtime_settings``). So the one private name below stays until the
SDK exposes the request (tests/unit/policy/test_stack_context.py fails when it does). Two
policies need that information:

* ``no-plaintext-secrets`` must know which config values are secret;
* the checklist's stack policies must know whether this is a preview ("not evaluated:
  known after deployment") even where the stack's previous outputs are still known.

:func:`install_configure_stack_hook` wraps the SDK servicer's ``ConfigureStack`` so the
request is recorded here, then calls the original. It is the only place the pack touches
pulumi-policy internals (``pulumi_policy.policy._PolicyAnalyzerServicer``); if that name
moves, the hook is not installed, :func:`current` falls back to the environment
(``PULUMI_CONFIG``, ``PULUMI_CONFIG_SECRET_KEYS``, ``PULUMI_DRY_RUN``, which older engines
set) and then to "unknown", and the affected items read "not evaluated" instead of
silently passing.

No Pulumi engine is needed to use this module: tests build a :class:`StackContext` and
record it as the engine would (tests/support/stack_context.py).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Where a :class:`StackContext` came from.
SOURCE_ENGINE = "engine ConfigureStack"
SOURCE_ENVIRONMENT = "PULUMI_CONFIG environment"
SOURCE_NONE = "none"


@dataclass(frozen=True)
class StackContext:
    """The stack facts a policy may use.

    Attributes:
        dry_run: True for a preview, False for an update, None when unknown.
        config: the stack's config, ``"<namespace>:<key>" -> str`` (secrets decrypted;
            structured values as JSON text), or None when the pack was told nothing.
        secret_keys: config keys the stack marks secret.
        source: one of ``SOURCE_*``.
    """

    dry_run: bool | None = None
    config: Mapping[str, str] | None = None
    secret_keys: frozenset[str] = field(default_factory=frozenset)
    source: str = SOURCE_NONE

    def get(self, key: str) -> str | None:
        """The raw config value of ``key`` (``"gpu-lab:cluster"``), or None."""
        return None if self.config is None else self.config.get(key)

    def secret_values(self) -> dict[str, list[str]]:
        """``key -> [plain-text values]`` for every secret key with a value.

        A structured secret (JSON object or list) contributes each string leaf as well as
        its full text, since a leaf is what would leak into an argv or a Helm value.
        """
        out: dict[str, list[str]] = {}
        for key in sorted(self.secret_keys):
            value = self.get(key)
            if value is None:
                continue
            values = [value]
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, (dict, list)):
                values += _string_leaves(parsed)
            out[key] = values
        return out


def _string_leaves(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _string_leaves(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _string_leaves(v)]
    return []


_lock = threading.Lock()
_recorded: StackContext | None = None


def record(request: Any) -> StackContext:
    """Store what an ``AnalyzerStackConfigureRequest`` says; returns the stored context."""
    global _recorded
    ctx = StackContext(
        dry_run=bool(request.dry_run),
        config=dict(request.config),
        secret_keys=frozenset(request.config_secret_keys),
        source=SOURCE_ENGINE,
    )
    with _lock:
        _recorded = ctx
    return ctx


def from_environment(env: Mapping[str, str]) -> StackContext | None:
    """The context the engine's environment gives (older engines), or None when it gives none."""
    raw = env.get("PULUMI_CONFIG")
    if raw is None:
        return None
    try:
        config = {str(k): str(v) for k, v in json.loads(raw).items()}
    except (ValueError, AttributeError):
        return None
    try:
        keys = frozenset(json.loads(env.get("PULUMI_CONFIG_SECRET_KEYS") or "[]"))
    except ValueError:
        keys = frozenset()
    dry = env.get("PULUMI_DRY_RUN")
    return StackContext(
        dry_run=None if dry is None else dry == "true",
        config=config,
        secret_keys=keys,
        source=SOURCE_ENVIRONMENT,
    )


def current() -> StackContext:
    """The best context known now: the engine's, the environment's, or empty."""
    with _lock:
        if _recorded is not None:
            return _recorded
    return from_environment(os.environ) or StackContext()


def install_configure_stack_hook() -> bool:
    """Record every ``ConfigureStack`` request the pack's analyzer server receives.

    Returns True when the hook is in place (idempotent), False when this pulumi-policy
    has no ``_PolicyAnalyzerServicer.ConfigureStack`` to wrap (then :func:`current` falls
    back as the module docstring says).
    """
    try:
        from pulumi_policy import policy as sdk
    except ImportError:
        return False
    servicer = getattr(sdk, "_PolicyAnalyzerServicer", None)
    original = getattr(servicer, "ConfigureStack", None)
    if servicer is None or original is None:
        return False
    if getattr(original, "_gpulab_records_stack", False):
        return True

    def configure_stack(self: Any, request: Any, context: Any) -> Any:
        record(request)
        return original(self, request, context)

    configure_stack._gpulab_records_stack = True  # type: ignore[attr-defined]
    servicer.ConfigureStack = configure_stack
    return True
