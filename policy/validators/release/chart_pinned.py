"""``gpu-operator-chart-pinned``: the release names one exact chart version."""

from __future__ import annotations

import re
from typing import Any, Final

from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.props import require_known, show
from policy.validators.release.operator_release import _release_props, is_local_chart, local_chart_version
from policy.validators.spec import _STR, MANDATORY, Settings, Spec

_EXACT_VERSION: Final = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")


def check_chart_pinned(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "gpu-operator-chart-pinned"
    want = str(cfg.get("chartVersion") or "")
    expected = f"chart version exactly {want}" if want else "one exact chart version (vMAJOR.MINOR.PATCH)"
    fix = (
        "pin the chart: scripts/pulumi config set gpu-lab:chartVersion v26.7.0 (an exact release, "
        "never a range "
        "or empty: Helm would take whatever is newest)"
    )
    chart = str(release["chart"])
    if is_local_chart(chart):
        local = local_chart_version(chart)
        observed = f"local chart {chart} (Chart.yaml version {local or 'unreadable'})"
        if want and local is None:
            return [Finding(item, NOT_EVALUATED, observed, expected, fix)]
        return [_finding(item, not want or local == want, observed, expected, fix)]
    version = require_known(release.get("version"), "version")
    if not version:
        return [_finding(item, False, "no version: Helm installs the newest chart", expected, fix)]
    ok = bool(_EXACT_VERSION.match(str(version))) and (not want or str(version) == want)
    return [_finding(item, ok, f"version {show(version)}", expected, fix)]


SPEC: Final = Spec(
    "gpu-operator-chart-pinned",
    "Pin the GPU Operator chart to one exact version.",
    MANDATORY,
    "resource",
    check_chart_pinned,
    {
        "chartVersion": {
            **_STR,
            "default": "",
            "description": "the exact version required; empty: any exact version",
        }
    },
)
