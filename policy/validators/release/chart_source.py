"""``gpu-operator-chart-source``: the chart comes from NVIDIA's repository or a local directory."""

from __future__ import annotations

from typing import Any, Final

from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, require_known, show
from policy.validators.release.operator_release import _release_props, is_local_chart
from policy.validators.spec import _BOOL, _STR, MANDATORY, Settings, Spec
from policy.validators.tokens import (
    NVIDIA_HELM_REPO,
)


def check_chart_source(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "gpu-operator-chart-source"
    allowed = [str(r).rstrip("/") for r in (cfg.get("repositories") or [NVIDIA_HELM_REPO])]
    allow_local = bool(cfg.get("allowLocalPath", True))
    expected = f"repository {' or '.join(allowed)}" + (" or a local chart directory" if allow_local else "")
    fix = (
        f"scripts/pulumi config set gpu-lab:chartRepo {NVIDIA_HELM_REPO} (NVIDIA's repository), or offline "
        "scripts/pulumi config set gpu-lab:chartPath <unpacked gpu-operator chart>"
    )
    chart = str(release["chart"])
    repo = require_known(dig(release, "repositoryOpts", "repo"), "repositoryOpts.repo")
    if repo is None and is_local_chart(chart):
        return [_finding(item, allow_local, f"local chart {chart}", expected, fix)]
    if repo is None and chart.startswith("oci://"):
        repo = chart.rsplit("/", 1)[0]
    if repo is None:
        observed = (
            f"chart {chart!r} with no repositoryOpts.repo: Helm resolves it from local repository aliases"
        )
        return [_finding(item, False, observed, expected, fix)]
    return [_finding(item, str(repo).rstrip("/") in allowed, f"repository {show(repo)}", expected, fix)]


SPEC: Final = Spec(
    "gpu-operator-chart-source",
    "Take the GPU Operator chart from NVIDIA's repository or a local chart directory.",
    MANDATORY,
    "resource",
    check_chart_source,
    {
        "repositories": {"type": "array", "items": _STR, "default": [NVIDIA_HELM_REPO]},
        "allowLocalPath": {**_BOOL, "default": True},
    },
)
