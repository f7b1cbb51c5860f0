"""Fixtures of the gpulab.card tests: the stack outputs of a simulated and of a real lab."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.card.samples import load


@pytest.fixture
def sim() -> dict[str, Any]:
    return load("sim-h200-1gpu.json")


@pytest.fixture
def real() -> dict[str, Any]:
    return load("minikube-h200-1gpu.json")
