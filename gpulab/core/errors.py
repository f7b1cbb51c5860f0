"""The one base class of every error the lab raises on purpose.

Each error class of the lab derives from :class:`GpuLabError` and keeps the built-in base
it had (``ValueError`` for bad input, ``RuntimeError`` for a failed step), so callers that
catch ``ValueError`` or ``RuntimeError`` still do, and a command-line entry point can catch
``GpuLabError`` once to print the message (which names the cause and the first fix) instead
of a traceback.
"""

from __future__ import annotations

import errno

__all__ = ["GpuLabError", "os_error_fix"]


class GpuLabError(Exception):
    """An error the lab raises on purpose; ``str()`` names the cause and, where known, the fix.

    Not raised itself: each concern has its subclass (``ConfigError``, ``PreflightError``,
    ``CommandError``, ``GateError``, ...).
    """


def os_error_fix(exc: OSError) -> str:
    """The first fix for an :class:`OSError` an entry point prints instead of a traceback:
    ``No space left on device`` (ENOSPC, EDQUOT) asks for space, a read-only or forbidden
    path for another, a missing one for the step that makes it."""
    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"free disk space on the file system that is full{where} (`df -h`), then run the command again"
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"make the path writable by this user{where}, or run from a checkout you own"
    if exc.errno == errno.ENOENT:
        return f"the path does not exist{where}: run `make lab` (or the step that makes it) first"
    return f"see the error above{where}"
