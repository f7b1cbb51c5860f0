"""Which release the release policies read (:mod:`policy.validators.release.operator_release`)."""

from __future__ import annotations

from policy import validators

from ..harness import (
    check_resource,
    release,
    smoke_pod,
)


def test_release_policies_ignore_other_releases_and_resources() -> None:
    other = release(name="prometheus", chart="kube-prometheus-stack", version=None)
    assert check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, other).passed
    assert check_resource("gpu-operator-namespace", validators.T_POD, smoke_pod()).passed
