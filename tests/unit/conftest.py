"""Unit tests never touch the network: the chart repository check is tested on its own."""

from __future__ import annotations

import pytest

import components.lab

#: The real check, kept before the autouse fixture replaces it (tests/unit/test_chart_preflight.py).
real_chart_findings = components.lab.chart_findings


@pytest.fixture(autouse=True)
def no_chart_repository_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(components.lab, "chart_findings", lambda repo, version: [])
