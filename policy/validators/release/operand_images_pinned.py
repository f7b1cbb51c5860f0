"""``operand-images-pinned``: every operand image the release sets is pinned.

The operand images pinned in config (``devicePluginImage``, ``toolkitImage``,
``dcgmExporterImage``, ``validatorImage``; gpulab.config.operand_images) reach the chart as
``<operand>.repository/image/version``. A version that is empty or ``latest`` is not a pin:
the operator would pull whatever the registry serves today. An operand the release does not
set runs the chart's own default, pinned by the chart version (``gpu-operator-chart-pinned``).
"""

from __future__ import annotations

import re
from typing import Any, Final

from gpulab.config import operand_images
from policy.stack_context import StackContext
from policy.validators.findings import Finding, _finding
from policy.validators.props import dig, require_known
from policy.validators.release.operator_release import _release_props
from policy.validators.spec import MANDATORY, Settings, Spec

ITEM: Final = "operand-images-pinned"
_DIGEST: Final = re.compile(r"^sha256:[0-9a-f]{64}$")


def _shown(section: dict[str, Any]) -> str:
    version = str(section.get("version") or "")
    sep = "@" if version.startswith("sha256:") else ":"
    return f"{section.get('repository') or '?'}/{section.get('image') or '?'}{sep}{version or '(no version)'}"


def check_operand_images(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    seen, bad = [], []
    for key, operand in operand_images.OPERANDS.items():
        section = require_known(dig(release, "values", operand), f"values.{operand}") or {}
        if not any(section.get(k) for k in ("repository", "image", "version")):
            seen.append(f"{operand}: chart default")
            continue
        version = str(section.get("version") or "")
        pinned = bool(_DIGEST.match(version)) or (
            bool(version) and version != "latest" and ":" not in version
        )
        seen.append(f"{operand}: {_shown(section)}")
        if not pinned:
            bad.append(key)
    return [
        _finding(
            ITEM,
            not bad,
            "; ".join(seen),
            "each operand image set in the release has a version other than latest, or a sha256 digest",
            (
                f"pin {', '.join(bad)}: scripts/pulumi config set gpu-lab:<key> "
                "registry/repository/name:<tag> "
                "(not latest) or ...@sha256:<digest>"
                if bad
                else "pin operand images with devicePluginImage, toolkitImage, dcgmExporterImage, "
                "validatorImage"
            ),
        )
    ]


SPEC: Final = Spec(
    ITEM,
    "Pin every operand image the GPU Operator release sets by a tag other than latest, or by digest.",
    MANDATORY,
    "resource",
    check_operand_images,
)
