"""The plain-text report of a list of diagnoses."""

from __future__ import annotations

from collections.abc import Sequence

from gpulab.diagnose.record import Diagnosis


def render(diags: Sequence[Diagnosis]) -> str:
    """Plain-text report: one block per diagnosis, numbered in order; a sentence when empty.

    Block::

        [1] allocatable-zero (not-registered), blocking
            object: node minikube
            reason: ...
            detail: ...
            fix:    ...
    """
    if not diags:
        return (
            "diagnosis: no problem found in the pods, events, DaemonSets and nodes given "
            "(if a wait still timed out, the components may only be slow: image pulls)"
        )
    blocks = []
    for i, d in enumerate(diags, 1):
        head = f"[{i}] {d.row}" + (f" ({d.variant})" if d.variant else "")
        head += ", blocking" if d.blocking else ", not blocking (reported only)"
        blocks.append(
            "\n".join(
                [
                    head,
                    f"    object: {d.object}",
                    f"    reason: {d.reason}",
                    f"    detail: {d.detail}",
                    f"    fix:    {d.fix}",
                ]
            )
        )
    return "\n".join(blocks)
