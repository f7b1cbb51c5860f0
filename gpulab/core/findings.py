"""The one finding record: what a check, a checklist item, a policy or the diagnosis found.

A host preflight check (:mod:`gpulab.host.preflight`), a checklist item (:mod:`gpulab.verdict.checklist`),
a policy of the pack (:mod:`policy.validators`) and a diagnosis of the cluster
(:mod:`gpulab.diagnose`) all report a :class:`Finding`: a stable kebab-case ``id``, a
:class:`Status`, what was ``observed``, what was ``expected``, the first ``fix``, and the
extras only some reports fill in (the ``subject`` it is about, the ``evidence``, ...).

Where a report had its own names for the same fields, they are read-only properties here,
so its readers keep working: ``check``/``ok``/``message`` (preflight), ``item``/``urn``
(policies), ``row``/``object``/``reason``/``detail`` (diagnosis). Two reports keep their
own constructor as a thin subclass that only maps its arguments onto the record
(``gpulab.host.preflight.Finding(check, ok, message, fix)``,
``gpulab.diagnose.Diagnosis(row, object, reason, detail, fix, ...)``); equality and hashing
are the record's, whichever constructor made it.

Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

__all__ = ["Finding", "Status"]


class Status(StrEnum):
    """How a finding came out. Members are strings (``Status.PASS == "pass"``)."""

    #: The condition holds.
    PASS = "pass"
    #: The condition does not hold; ``fix`` says what to do first.
    FAIL = "fail"
    #: An input is unknown, e.g. during ``pulumi preview`` ("known after deployment"); never
    #: a pass.
    NOT_EVALUATED = "not-evaluated"
    #: The simulated lab cannot produce the evidence (e.g. image pulls: kwok runs no kubelet).
    NOT_OBSERVABLE = "not-observable-in-simulation"
    #: The check was not run (switched off, or optional and skipped); proves nothing.
    NOT_TESTED = "not-tested"


@dataclass(frozen=True, eq=False)
class Finding:
    """One finding.

    Attributes:
        id: stable kebab-case id of what was checked: a preflight check (``nvidia-smi``), a
            checklist item or policy (``allocatable-matches-gpus``), a troubleshooting row
            (``allocatable-zero``).
        status: a :class:`Status` (a plain status string is converted; an unknown one raises
            ``ValueError``).
        observed: what was found, in words; on failure the cause, for ``not-evaluated`` and
            ``not-observable-in-simulation`` the reason.
        expected: the condition for a pass (``""`` where the report has none).
        fix: the first thing to try (:mod:`gpulab.core.fixes`); ``""`` when there is none.
        subject: what it is about: a resource URN (policies), an object such as
            ``"pod gpu-operator/x"`` or ``"node minikube"`` (diagnosis); None for the host or
            the stack.
        simulated: a value it read was simulated.
        title: what is checked, for a report line (checklist items).
        evidence: what it was decided on: an event message, a log line, counts (diagnosis).
        blocking: False when the lab still works despite it (e.g. the DCGM exporter).
        variant: a sub-case of ``id`` (``"not-registered"``), ``""`` when none.
    """

    id: str
    status: Status
    observed: str
    expected: str = ""
    fix: str = ""
    subject: str | None = None
    simulated: bool = False
    title: str = ""
    evidence: str = ""
    blocking: bool = True
    variant: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.status, Status):
            object.__setattr__(self, "status", Status(self.status))

    # --- one record, whichever constructor made it -------------------------------------

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f.name) for f in fields(Finding))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    # --- the names each report used for the same fields ----------------------------------

    @property
    def ok(self) -> bool:
        """True when the status is ``pass`` (preflight's name)."""
        return self.status is Status.PASS

    @property
    def check(self) -> str:
        """:attr:`id` (preflight's name)."""
        return self.id

    @property
    def message(self) -> str:
        """:attr:`observed` (preflight's name)."""
        return self.observed

    @property
    def item(self) -> str:
        """:attr:`id` (the policies' name)."""
        return self.id

    @property
    def urn(self) -> str | None:
        """:attr:`subject` (the policies' name: the URN reported, None for the stack)."""
        return self.subject

    @property
    def row(self) -> str:
        """:attr:`id` (the diagnosis' name: the troubleshooting row)."""
        return self.id

    @property
    def object(self) -> str:
        """:attr:`subject`, ``""`` when None (the diagnosis' name: the failing object)."""
        return self.subject or ""

    @property
    def reason(self) -> str:
        """:attr:`observed` (the diagnosis' name: one sentence, what is wrong)."""
        return self.observed

    @property
    def detail(self) -> str:
        """:attr:`evidence` (the diagnosis' name)."""
        return self.evidence

    # --- reports ---------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """A JSON object: ``id``, ``title``, ``status``, ``observed``, ``expected``, ``fix`` and
        ``simulated`` always; ``subject``, ``evidence``, ``blocking`` and ``variant`` only when
        they differ from their defaults."""
        doc: dict[str, Any] = {
            "id": self.id,
            "title": self.title,
            "status": self.status.value,
            "observed": self.observed,
            "expected": self.expected,
            "fix": self.fix,
            "simulated": self.simulated,
        }
        if self.subject is not None:
            doc["subject"] = self.subject
        if self.evidence:
            doc["evidence"] = self.evidence
        if not self.blocking:
            doc["blocking"] = False
        if self.variant:
            doc["variant"] = self.variant
        return doc

    def report(self) -> str:
        """The one line a policy engine report carries (never a secret value)."""
        if self.status is Status.NOT_EVALUATED:
            return f"[{self.id}] not evaluated: {self.observed}; expected when known: {self.expected}"
        if self.status is Status.NOT_OBSERVABLE:
            return f"[{self.id}] not observable in the simulated lab: {self.observed}"
        if self.status is Status.NOT_TESTED:
            return f"[{self.id}] not tested: {self.observed}"
        sim = " (simulated values)" if self.simulated else ""
        return f"[{self.id}] observed: {self.observed}{sim}; expected: {self.expected}; first fix: {self.fix}"
