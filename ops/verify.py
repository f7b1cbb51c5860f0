"""``make verify``: what to replace so the lab's checks run again, and nothing else.

The readiness gate, the smoke test and the compute checks are resources of the stack: the
gate a ``command:local:Command`` (it re-runs only when replaced), the smoke test and every
compute check a run-once Pod whose reader command re-runs when the Pod's UID changes. So
re-measuring them against the running lab is ``pulumi up --target-replace URN ...
--target-dependents`` with the URNs of:

* the gate command (``gpulab:gpu_operator:GpuOperator`` parent, name ``*-gate``);
* every ``kubernetes:core/v1:Pod`` the stack owns, each a child of the component it checks
  for: the smoke Pod (``gpulab:smoke:SmokeTest``, required), the TFLOPS benchmark Pod
  (``gpulab:benchmark:TflopsBenchmark``) and any other compute check's Pod, when the stack has
  them. The lab owns no long-running Pod (its operands belong to DaemonSets and Deployments).

``--target-replace`` leaves every other resource as it is, even when the program or the
config changed since the last ``make lab``; ``--target-dependents`` lets the readers re-run
(they depend on their Pod's UID).

``python -m ops.verify targets < EXPORT.json`` prints one URN a line from ``pulumi stack
export``; exit 2 (with the reason and the fix) when the stack has no lab to verify.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

GATE_TYPE: Final = "gpulab:gpu_operator:GpuOperator$command:local:Command"
#: A found GPU stack's gate: the per-node fleet check (components/fleet.py).
FOUND_GATE_TYPE: Final = "gpulab:fleet:FoundGpuStack$command:local:Command"
#: DRA mode's gate: the DRA driver's DeviceClass and ResourceSlices (components/dra.py; the H200
#: run of 2026-12-03 21:29 found verify refusing a DRA lab without it).
DRA_GATE_TYPE: Final = "gpulab:dra:DraDriver$command:local:Command"
POD_TYPE: Final = "kubernetes:core/v1:Pod"
#: Roles that must be there: without them the stack has no lab to verify.
REQUIRED: Final = ("gate", "smoke")
#: Role -> what a person reads; a role not listed reads "the <role> check (a fresh Pod)".
SAID: Final[dict[str, str]] = {
    "gate": "the readiness gate",
    "smoke": "the smoke test (a fresh smoke Pod)",
    "benchmark": "the TFLOPS benchmark (a fresh benchmark Pod)",
}


class NoLab(ValueError):
    """The stack has no gate or no smoke Pod: nothing to verify (the message says what to run)."""


def _split(urn: str) -> tuple[list[str], str]:
    """``urn:pulumi:STACK::PROJECT::PARENT$...$TYPE::NAME`` -> (the type chain, name)."""
    parts = urn.split("::")
    return (parts[2].split("$"), parts[3]) if len(parts) >= 4 else ([], "")


def role_of(urn: str) -> str | None:
    """``gate`` for the gate command; for a Pod, its parent component's module (``smoke``,
    ``benchmark``, ...: ``gpulab:<module>:<Type>``); None for anything else."""
    chain, name = _split(urn)
    if "$".join(chain).endswith((GATE_TYPE, FOUND_GATE_TYPE, DRA_GATE_TYPE)) and name.endswith("-gate"):
        return "gate"
    if chain and chain[-1] == POD_TYPE and len(chain) >= 2 and chain[-2].startswith("gpulab:"):
        return chain[-2].split(":")[1]
    return None


def targets(deployment: Mapping[str, Any]) -> dict[str, str]:
    """Role -> URN (see :func:`role_of`), from ``pulumi stack export``'s ``deployment``; the gate
    first, then the Pods in state order.

    Raises:
        NoLab: the gate or the smoke Pod is missing (the lab was never built, or destroyed).
    """
    found: dict[str, str] = {}
    for res in deployment.get("resources") or []:
        urn = str(res.get("urn") or "")
        if res.get("delete"):  # a resource pending deletion is not the lab's current one
            continue
        role = role_of(urn)
        if role is not None and role not in found:
            found[role] = urn
    missing = [role for role in REQUIRED if role not in found]
    if missing:
        raise NoLab(
            f"the stack has no {' and no '.join(missing)} resource: there is no lab to verify; "
            "build it first with `make lab`"
        )
    return {"gate": found.pop("gate"), **found}


def said(role: str) -> str:
    """How the verify line names a role."""
    return SAID.get(role, f"the {role} check (a fresh {role} Pod)")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (see module docstring): 0 URNs printed, 2 no lab or unreadable export."""
    ap = argparse.ArgumentParser(prog="python -m ops.verify")
    ap.add_argument("command", choices=["targets"], help="print the URNs to replace, one a line")
    ap.parse_args(argv)
    try:
        exported = json.load(sys.stdin)
    except ValueError as exc:
        print(f"gpu-lab: verify: `pulumi stack export` printed no JSON ({exc})", file=sys.stderr)
        return 2
    try:
        found = targets(exported.get("deployment") or {} if isinstance(exported, dict) else {})
    except NoLab as exc:
        print(f"gpu-lab: {exc}", file=sys.stderr)
        return 2
    names = [said(r) for r in found]
    print(
        f"gpu-lab: verify: re-running {', '.join(names[:-1])} and {names[-1]} against the running lab; "
        "nothing else is replaced",
        file=sys.stderr,
    )
    for urn in found.values():
        print(urn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
