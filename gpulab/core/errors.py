"""The one base class of every error the lab raises on purpose.

Each error class of the lab derives from :class:`GpuLabError` and keeps the built-in base
it had (``ValueError`` for bad input, ``RuntimeError`` for a failed step), so callers that
catch ``ValueError`` or ``RuntimeError`` still do, and a command-line entry point can catch
``GpuLabError`` once to print the message (which names the cause and the first fix) instead
of a traceback.
"""

from __future__ import annotations

__all__ = ["GpuLabError"]


class GpuLabError(Exception):
    """An error the lab raises on purpose; ``str()`` names the cause and, where known, the fix.

    Not raised itself: each concern has its subclass (``ConfigError``, ``PreflightError``,
    ``CommandError``, ``GateError``, ...).
    """
