"""Which Pod the smoke policies read (:mod:`policy.validators.smoke.pod`)."""

from __future__ import annotations

from policy import validators

from ..harness import (
    check_resource,
    smoke_pod,
)


# --- smoke Pod ----------------------------------------------------------------------
def test_smoke_policies_only_look_at_the_smoke_pod() -> None:
    other = smoke_pod("busybox")
    other["metadata"]["name"] = "other"
    assert check_resource("smoke-pod-image-pinned", validators.T_POD, other).passed
