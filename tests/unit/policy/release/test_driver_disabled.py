"""``gpu-operator-driver-disabled``."""

from __future__ import annotations

from typing import Any

import pytest

from policy import validators

from ..harness import (
    check_resource,
    release,
)


# --- gpu-operator-driver-disabled ---------------------------------------------------
def test_driver_disabled_passes_when_false() -> None:
    assert check_resource("gpu-operator-driver-disabled", validators.T_RELEASE, release()).passed


@pytest.mark.parametrize("values", [{}, {"driver": {"enabled": True}}, {"driver": {}}])
def test_driver_disabled_violates_when_unset_or_true(values: dict[str, Any]) -> None:
    o = check_resource("gpu-operator-driver-disabled", validators.T_RELEASE, release(values=values))
    assert "driver.enabled" in o.text and "driver.enabled=false" in o.text
