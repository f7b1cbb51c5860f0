"""``gpu-operator-namespace``."""

from __future__ import annotations

import pytest
from pulumi_policy.proxy import UnknownValueError

from policy import validators

from ..harness import (
    UNK,
    check_resource,
    release,
)


# --- gpu-operator-namespace ---------------------------------------------------------
def test_namespace_passes_in_gpu_operator() -> None:
    assert check_resource("gpu-operator-namespace", validators.T_RELEASE, release()).passed


def test_namespace_violates_elsewhere_naming_both() -> None:
    o = check_resource("gpu-operator-namespace", validators.T_RELEASE, release(namespace="default"))
    assert "observed: namespace 'default'" in o.text and "expected: namespace 'gpu-operator'" in o.text
    o = check_resource("gpu-operator-namespace", validators.T_RELEASE, release(namespace=None))
    assert "provider's default namespace" in o.text


def test_namespace_unknown_at_preview_is_left_to_the_sdk_as_cannot_run_during_preview() -> None:
    with pytest.raises(UnknownValueError):
        check_resource("gpu-operator-namespace", validators.T_RELEASE, release(namespace=UNK))
