"""Which Helm release is the GPU Operator's, and where its chart comes from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml

from gpulab.core import yamlio
from policy.validators.props import require_known
from policy.validators.tokens import OPERATOR_CHART, T_RELEASE


def is_local_chart(chart: str) -> bool:
    """True when ``chart`` names a directory rather than a repository chart."""
    return chart.startswith(("/", "./", "../", "~")) or os.path.isdir(chart)


def is_operator_release(props: Mapping[str, Any]) -> bool:
    """True for the GPU Operator's Helm release (by release name or chart name/path)."""
    chart = props.get("chart")
    name = props.get("name")
    if name == OPERATOR_CHART:
        return True
    return isinstance(chart, str) and os.path.basename(chart.rstrip("/")) == OPERATOR_CHART


def local_chart_version(path: str) -> str | None:
    """``version`` from ``<path>/Chart.yaml``, or None when unreadable."""
    try:
        with open(os.path.join(os.path.expanduser(path), "Chart.yaml"), encoding="utf-8") as f:
            doc = yamlio.load(f)
    except (OSError, yaml.YAMLError):
        return None
    version = doc.get("version") if isinstance(doc, dict) else None
    return str(version) if version is not None else None


def _release_props(rtype: str, props: dict[str, Any]) -> dict[str, Any] | None:
    if rtype != T_RELEASE:
        return None
    require_known({k: props.get(k) for k in ("name", "chart")}, "chart")
    return props if is_operator_release(props) else None
