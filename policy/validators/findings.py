"""What a check returns (:class:`Finding`), its statuses, and the :class:`Ledger` of the latest
findings that ``checklist-unverified`` reports from."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from gpulab import checklist

PASS: Final = checklist.PASS
FAIL: Final = checklist.FAIL
NOT_EVALUATED: Final = checklist.NOT_EVALUATED
NOT_OBSERVABLE: Final = checklist.NOT_OBSERVABLE
#: A value the engine does not know yet (a preview's computed value).
UNKNOWN: Final = checklist.UNKNOWN


@dataclass(frozen=True)
class Finding:
    """One check's outcome on one resource (or on the stack when ``urn`` is None).

    ``observed``/``expected``/``fix`` are human-readable; ``observed`` carries the reason for
    ``not-evaluated`` and ``not-observable-in-simulation``.
    """

    item: str
    status: str
    observed: str
    expected: str
    fix: str
    urn: str | None = None
    simulated: bool = False

    def message(self) -> str:
        """The line an engine report carries (never a secret value)."""
        if self.status == NOT_EVALUATED:
            return f"[{self.item}] not evaluated: {self.observed}; expected when known: {self.expected}"
        if self.status == NOT_OBSERVABLE:
            return f"[{self.item}] not observable in the simulated lab: {self.observed}"
        sim = " (simulated values)" if self.simulated else ""
        return (
            f"[{self.item}] observed: {self.observed}{sim}; expected: {self.expected}; first fix: {self.fix}"
        )


UNVERIFIED: Final = frozenset({NOT_EVALUATED, NOT_OBSERVABLE})


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
        with self._lock:
            self._latest[(policy, urn)] = tuple(findings)

    def unverified(self, order: Sequence[str] = ()) -> list[Finding]:
        """Findings neither passed nor failed, by policy in ``order`` (others last), then URN."""
        rank = {name: i for i, name in enumerate(order)}
        with self._lock:
            entries = sorted(self._latest.items(), key=lambda e: (rank.get(e[0][0], len(rank)), e[0]))
        return [f for _, fs in entries for f in fs if f.status in UNVERIFIED]

    def clear(self) -> None:
        with self._lock:
            self._latest.clear()


LEDGER: Final = Ledger()


def _finding(item: str, ok: bool, observed: str, expected: str, fix: str) -> Finding:
    return Finding(item, PASS if ok else FAIL, observed, expected, fix)
