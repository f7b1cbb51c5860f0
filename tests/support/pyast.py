"""Parsing the project's own source in tests (the architecture and shipping checks)."""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    """``ast.parse`` with the garbage collector held off. CPython 3.11 (before the fix of
    python/cpython#106905) raises "AST constructor recursion depth mismatch" when a finalizer
    runs while the tree is built: in this suite, a Pulumi mock's failed future collected (and
    logged as never retrieved) mid-parse failed an architecture test once under xdist."""
    gc.disable()  # no collection, so no finalizer, can run while the tree is built
    try:
        return ast.parse(source)
    finally:
        gc.enable()
