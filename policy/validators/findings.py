"""What a check returns (:class:`Finding`), its statuses, and the :class:`Ledger` of the latest
findings that ``checklist-unverified`` reports from.

A policy's finding is the lab's one finding record (:class:`gpulab.core.findings.Finding`), made
as ``Finding(item, status, observed, expected, fix, urn)``: ``urn`` is its ``subject``, the
resource reported (None for the stack), and ``report()`` the line an engine report carries.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Final

from gpulab.core.findings import Finding, Status
from gpulab.verdict import checklist

__all__ = [
    "FAIL",
    "LEDGER",
    "NOT_EVALUATED",
    "NOT_OBSERVABLE",
    "PASS",
    "UNKNOWN",
    "UNVERIFIED",
    "Finding",
    "Ledger",
]

PASS: Final = Status.PASS
FAIL: Final = Status.FAIL
NOT_EVALUATED: Final = Status.NOT_EVALUATED
NOT_OBSERVABLE: Final = Status.NOT_OBSERVABLE
#: A value the engine does not know yet (a preview's computed value).
UNKNOWN: Final = checklist.UNKNOWN


#: Neither passed nor failed: what ``checklist-unverified`` lists.
UNVERIFIED: Final = frozenset({NOT_EVALUATED, NOT_OBSERVABLE, Status.NOT_TESTED})


class Ledger:
    """The latest findings per (policy, resource) in this pack process.

    The SDK runs a request's policies one after another in pack order, so
    ``checklist-unverified`` (last in :func:`~policy.validators.pack.build_policies`) reads
    what the other policies found during this run, with their own config applied. A policy
    that is disabled never runs and leaves nothing here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[tuple[str, str], tuple[Finding, ...]] = {}

    def put(self, policy: str, urn: str, findings: Sequence[Finding]) -> None:
        """Record the findings of ``policy`` on ``urn`` (replacing the previous ones)."""
        with self._lock:
            self._latest[(policy, urn)] = tuple(findings)

    def unverified(self, order: Sequence[str] = ()) -> list[Finding]:
        """Findings neither passed nor failed, by policy in ``order`` (others last), then URN."""
        rank = {name: i for i, name in enumerate(order)}
        with self._lock:
            entries = sorted(self._latest.items(), key=lambda e: (rank.get(e[0][0], len(rank)), e[0]))
        return [f for _, fs in entries for f in fs if f.status in UNVERIFIED]

    def clear(self) -> None:
        """Forget every finding (a new run, or a test)."""
        with self._lock:
            self._latest.clear()


LEDGER: Final = Ledger()


def _finding(item: str, ok: bool, observed: str, expected: str, fix: str) -> Finding:
    """A pass or a fail of ``item``, attributed to the resource checked (the caller's URN)."""
    return Finding(item, PASS if ok else FAIL, observed, expected, fix)
