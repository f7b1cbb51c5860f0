"""``operator-toolkit-redundant`` (advisory): the operator's toolkit is off where the node's
runtime already injects GPUs.

minikube ``--gpus=all`` writes its node's ``/etc/docker/daemon.json`` with ``default-runtime:
nvidia`` (``/usr/bin/nvidia-container-runtime``, preinstalled in the kicbase image; minikube
pkg/minikube/cruntime/docker.go, ``configureDocker``); kind gets the host's toolkit the nvkind
way. There the operator's toolkit DaemonSet installs and configures a second NVIDIA runtime
in the node and restarts its container runtime: redundant, and a source of restarts. The
variant says where (``VariantSpec.runtime_injects_gpus``); the lab leaves the toolkit off there
unless ``gpu-lab:toolkit=true``, which this policy flags without blocking.
"""

from __future__ import annotations

from typing import Any, Final

from pulumi_policy import EnforcementLevel

from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.props import dig, lab_setting, require_known, show
from policy.validators.release.operator_release import _release_props
from policy.validators.spec import Settings, Spec
from variants import registry

ITEM: Final = "operator-toolkit-redundant"
FIX: Final = (
    "leave the toolkit to the node: scripts/pulumi config rm gpu-lab:toolkit (auto: off on minikube "
    "and kind) "
    "or scripts/pulumi config set gpu-lab:toolkit false"
)


def check_toolkit_redundant(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    enabled = require_known(dig(release, "values", "toolkit", "enabled"), "values.toolkit.enabled")
    kind = lab_setting(ctx, "cluster")
    variant = registry.REGISTRY.get(kind) if kind else None
    expected = "toolkit.enabled=false where the node's runtime already injects GPUs"
    if variant is None:
        why = "the pack received no stack config" if kind is None else f"gpu-lab:cluster={kind!r} is unknown"
        return [Finding(ITEM, NOT_EVALUATED, f"{why}: which node runtime is not known", expected, FIX)]
    # The chart's default for an unset toolkit.enabled is true.
    on = enabled is not False
    observed = f"toolkit.enabled={show(enabled)} on gpu-lab:cluster={kind}"
    if variant.spec.runtime_injects_gpus:
        observed += " (its node's runtime already injects GPUs)"
    return [_finding(ITEM, not (on and variant.spec.runtime_injects_gpus), observed, expected, FIX)]


SPEC: Final = Spec(
    ITEM,
    "Leave the operator's toolkit off where the node's runtime already injects GPUs (minikube --gpus=all).",
    EnforcementLevel.ADVISORY,
    "resource",
    check_toolkit_redundant,
)
