"""Fixtures of the policy-pack tests: a fresh ledger and stack context per test, and the SDK
hook restored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from policy import stack_context, validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    """Each test starts with no recorded findings and an update (not a preview) whose
    stack config is the sim lab's, with no secrets."""
    validators.LEDGER.clear()
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "sim"})):
        yield
    validators.LEDGER.clear()


@pytest.fixture
def sdk_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo the ConfigureStack hook and what it recorded after the test."""
    from pulumi_policy import policy as sdk

    monkeypatch.setattr(
        sdk._PolicyAnalyzerServicer, "ConfigureStack", sdk._PolicyAnalyzerServicer.ConfigureStack
    )
    monkeypatch.setattr(stack_context, "_recorded", None)
