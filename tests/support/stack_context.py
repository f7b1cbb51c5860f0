"""The policy pack's stack context as a test sets it: recorded as the engine's ``ConfigureStack``
would record it (policy/stack_context.py ``record``), so :func:`policy.stack_context.current`
reads it by its own path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from policy import stack_context
from policy.stack_context import StackContext


@contextmanager
def overridden(ctx: StackContext) -> Iterator[StackContext]:
    """``ctx`` as the recorded context inside the block; the one before it afterwards."""
    with stack_context._lock:
        previous, stack_context._recorded = stack_context._recorded, ctx
    try:
        yield ctx
    finally:
        with stack_context._lock:
            stack_context._recorded = previous
