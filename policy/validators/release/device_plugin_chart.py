"""``device-plugin-chart``: NVIDIA's nvidia-device-plugin chart, installed alone (``gpuStack:
device-plugin``), is pinned, runs GPU Feature Discovery and is not in the default namespace.

The lab's gate and per-node expectations read GFD's labels (``nvidia.com/gpu.count``, ...), so a
release without ``gfd.enabled`` could never pass; the chart refuses the default namespace
itself (templates/validation.yml, ``allowDefaultNamespace: false``), named here before Helm
runs. Versions in NVIDIA's repository have no leading v (Chart.yaml ``version: "0.20.0"``).
"""

from __future__ import annotations

import os
import re
from typing import Any, Final

from gpulab.config.device_plugin import CHART
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.props import dig, require_known, show
from policy.validators.release.operator_release import is_local_chart, local_chart_version
from policy.validators.spec import MANDATORY, Settings, Spec
from policy.validators.tokens import T_RELEASE

ITEM: Final = "device-plugin-chart"
_EXACT_VERSION: Final = re.compile(r"^\d+\.\d+\.\d+$")


def is_device_plugin_release(props: dict[str, Any]) -> bool:
    """True for a Helm release of NVIDIA's device plugin chart (by its name or chart path)."""
    chart = props.get("chart")
    return props.get("name") == CHART or (
        isinstance(chart, str) and os.path.basename(chart.rstrip("/")) == CHART
    )


def check_device_plugin_chart(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    """Three findings for the device plugin chart's release (none for other resources)."""
    if rtype != T_RELEASE:
        return []
    require_known({k: props.get(k) for k in ("name", "chart")}, "chart")
    if not is_device_plugin_release(props):
        return []
    chart = str(props["chart"])
    pin_fix = (
        "pin the chart: scripts/pulumi config set gpu-lab:devicePluginChartVersion 0.20.0 (an exact "
        "release; empty or a range lets Helm take whatever is newest)"
    )
    expected = "one exact chart version (MAJOR.MINOR.PATCH)"
    if is_local_chart(chart):
        local = local_chart_version(chart)
        observed = f"local chart {chart} (Chart.yaml version {local or 'unreadable'})"
        pinned = (
            Finding(ITEM, NOT_EVALUATED, observed, expected, pin_fix)
            if local is None
            else _finding(ITEM, bool(_EXACT_VERSION.match(local)), observed, expected, pin_fix)
        )
    else:
        version = require_known(props.get("version"), "version")
        pinned = _finding(
            ITEM,
            bool(version) and bool(_EXACT_VERSION.match(str(version))),
            f"version {show(version)}",
            expected,
            pin_fix,
        )
    gfd = require_known(dig(props, "values", "gfd", "enabled"), "values.gfd.enabled")
    with_gfd = _finding(
        ITEM,
        gfd is True or str(gfd).lower() == "true",
        f"gfd.enabled={show(gfd)}",
        "gfd.enabled=true: the gate and every node's expectation read GPU Feature Discovery's labels",
        "set gfd.enabled true in the release's values (components/device_plugin.py helm_values)",
    )
    namespace = require_known(props.get("namespace"), "namespace")
    placed = _finding(
        ITEM,
        bool(namespace) and namespace != "default",
        f"namespace {show(namespace)}",
        "a namespace of its own (the chart refuses default: allowDefaultNamespace false)",
        "install it into nvidia-device-plugin, as NVIDIA's README does",
    )
    return [pinned, with_gfd, placed]


SPEC: Final = Spec(
    ITEM,
    "Pin NVIDIA's device plugin chart, with GPU Feature Discovery, outside the default namespace.",
    MANDATORY,
    "resource",
    check_device_plugin_chart,
    {},
)
