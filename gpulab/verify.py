"""``make verify``: what to replace so the lab's checks run again, and nothing else.

The readiness gate, the smoke test and the compute check are resources of the stack: the
gate a ``command:local:Command`` (it re-runs only when replaced), the smoke test and the
compute check Pods whose reader commands re-run when a Pod's UID changes. So re-measuring
them against the running lab is ``pulumi up --target-replace URN ... --target-dependents``
with the URNs of:

* the gate command (``gpulab:gpu_operator:GpuOperator`` parent, name ``*-gate``);
* the smoke Pod (``gpulab:smoke:SmokeTest`` parent, a ``kubernetes:core/v1:Pod``);
* the benchmark Pod, when the stack has one (``gpulab:benchmark:TflopsBenchmark`` parent).

``--target-replace`` leaves every other resource as it is, even when the program or the
config changed since the last ``make lab``; ``--target-dependents`` lets the smoke and
benchmark readers re-run (they depend on their Pod's UID).

``python -m gpulab.verify targets < EXPORT.json`` prints one URN a line from ``pulumi stack
export``; exit 2 (with the reason and the fix) when the stack has no lab to verify.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final

#: (role, the URN's qualified type ends with, the resource name ends with, required)
TARGETS: Final[tuple[tuple[str, str, str, bool], ...]] = (
    ("gate", "gpulab:gpu_operator:GpuOperator$command:local:Command", "-gate", True),
    ("smoke", "gpulab:smoke:SmokeTest$kubernetes:core/v1:Pod", "", True),
    ("compute", "gpulab:benchmark:TflopsBenchmark$kubernetes:core/v1:Pod", "", False),
)


class NoLab(ValueError):
    """The stack has no gate or no smoke Pod: nothing to verify (the message says what to run)."""


def _split(urn: str) -> tuple[str, str]:
    """``urn:pulumi:STACK::PROJECT::QUALIFIED$TYPE::NAME`` -> (qualified type, name)."""
    parts = urn.split("::")
    return (parts[2], parts[3]) if len(parts) >= 4 else ("", "")


def targets(deployment: Mapping[str, Any]) -> dict[str, str]:
    """Role (``gate``, ``smoke``, ``compute``) -> URN, from ``pulumi stack export``'s
    ``deployment``; ``compute`` only when the stack has a benchmark Pod.

    Raises:
        NoLab: the gate or the smoke Pod is missing (the lab was never built, or destroyed).
    """
    found: dict[str, str] = {}
    for res in deployment.get("resources") or []:
        urn = str(res.get("urn") or "")
        if res.get("delete"):  # a resource pending deletion is not the lab's current one
            continue
        qualified, name = _split(urn)
        for role, type_suffix, name_suffix, _ in TARGETS:
            if role not in found and qualified.endswith(type_suffix) and name.endswith(name_suffix):
                found[role] = urn
    missing = [role for role, _, _, required in TARGETS if required and role not in found]
    if missing:
        raise NoLab(
            f"the stack has no {' and no '.join(missing)} resource: there is no lab to verify; "
            "build it first with `make lab`"
        )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """CLI (see module docstring): 0 URNs printed, 2 no lab or unreadable export."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.verify")
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
    roles = {
        "gate": "the readiness gate",
        "smoke": "the smoke test (a fresh smoke Pod)",
        "compute": "the compute check",
    }
    said = [roles[r] for r in found]
    print(
        f"gpu-lab: verify: re-running {', '.join(said[:-1])} and {said[-1]} against the running lab; "
        "nothing else is replaced",
        file=sys.stderr,
    )
    for urn in found.values():
        print(urn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
