"""``gpu-operator-namespace``: the release goes into its own namespace."""

from __future__ import annotations

from typing import Any, Final

from gpulab.core.names import OPERATOR_NAMESPACE
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import require_known, show
from policy.validators.release.operator_release import _release_props
from policy.validators.spec import _STR, MANDATORY, Settings, Spec


def check_operator_namespace(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    want = str(cfg.get("namespace") or OPERATOR_NAMESPACE)
    ns = require_known(release.get("namespace"), "namespace")
    observed = f"namespace {show(ns)}" + (" (the provider's default namespace)" if ns is None else "")
    return [
        _finding(
            "gpu-operator-namespace",
            ns == want,
            observed,
            f"namespace {want!r}",
            f"install the release into namespace {want} (the chapter's step 2: --namespace "
            f"{want} --create-namespace)",
        )
    ]


SPEC: Final = Spec(
    "gpu-operator-namespace",
    "Install the GPU Operator into its own namespace, gpu-operator.",
    MANDATORY,
    "resource",
    check_operator_namespace,
    {"namespace": {**_STR, "default": OPERATOR_NAMESPACE}},
)
