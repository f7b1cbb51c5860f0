"""``operator-toolkit-redundant`` (advisory)."""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel

from policy import validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden

from ..harness import check_resource, release

ITEM = "operator-toolkit-redundant"


def values(enabled: bool | None) -> dict[str, Any]:
    return {"driver": {"enabled": False}, "toolkit": {} if enabled is None else {"enabled": enabled}}


def on(cluster: str, enabled: bool | None) -> Any:
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": cluster})):
        return check_resource(ITEM, validators.T_RELEASE, release(values=values(enabled)))


def test_it_warns_never_blocks() -> None:
    assert validators.spec(ITEM).level == EnforcementLevel.ADVISORY


def test_the_toolkit_on_under_minikube_is_reported() -> None:
    o = on("minikube", True)
    assert len(o.violations) == 1
    assert "toolkit.enabled=true on gpu-lab:cluster=minikube" in o.text
    assert "already injects GPUs" in o.text and "scripts/pulumi config rm gpu-lab:toolkit" in o.text
    # Unset is the chart's default: on.
    assert len(on("minikube", None).violations) == 1


def test_the_toolkit_off_under_minikube_and_on_elsewhere_pass() -> None:
    assert on("minikube", False).passed
    for cluster in ("k3s", "sim", "existing"):
        assert on(cluster, True).passed, cluster


def test_without_stack_config_it_is_not_evaluated() -> None:
    with stack_context_overridden(StackContext()):
        o = check_resource(ITEM, validators.T_RELEASE, release(values=values(True)))
    assert not o.violations and o.not_applicable and "no stack config" in o.not_applicable
