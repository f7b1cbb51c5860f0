"""Fixtures for tests that run the real Pulumi CLI (``make toolchain`` builds it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sandbox import Project, make_project, missing_toolchain, shared_chart, toolchain_env

__all__ = ["Project", "project", "shared_chart"]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """A copy of the project with its own backend; skipped when the toolchain is not built."""
    env = toolchain_env()
    why = missing_toolchain(env)
    if why:
        pytest.skip(why)
    return make_project(tmp_path, env)
