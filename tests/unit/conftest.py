"""Unit-test fixtures: no network (the chart repository check is tested on its own) and a
clean Pulumi runtime around every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import components.edge

#: The real check, kept before the autouse fixture replaces it (tests/unit/test_chart_preflight.py).
real_chart_findings = components.edge.chart_findings


@pytest.fixture(autouse=True)
def no_chart_repository_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(components.edge, "chart_findings", lambda repo, version: [])


@pytest.fixture(autouse=True)
def restore_runtime() -> Iterator[None]:
    """Save and restore the Pulumi runtime's ambient settings around each test (mocks)."""
    from pulumi.runtime import config as rconfig
    from pulumi.runtime import settings as rsettings

    saved = dict(rsettings.SETTINGS.__dict__)
    cfg_token = rconfig.CONFIG.set({})
    root_token = rsettings.ROOT.set(None)
    yield
    rsettings.SETTINGS.__dict__.update(saved)
    rconfig.CONFIG.reset(cfg_token)
    rsettings.ROOT.reset(root_token)
