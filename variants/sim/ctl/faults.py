"""Faults for the simulated lab's end-to-end tests: a node condition set as the kubelet sets it.

No kubelet runs on a kwok node, so nothing there ever reports pressure. :func:`set_pressure`
writes the condition the kubelet would (``pkg/kubelet/nodestatus/setters.go``: type
``DiskPressure``, reason ``KubeletHasDiskPressure``, message ``kubelet has disk pressure``;
``KubeletHasNoDiskPressure`` / ``kubelet has no disk pressure`` when it clears; likewise for
memory and PIDs) into the node's status, and annotates the node
``gpulab.dev/simulated-condition`` so no reader takes it for a measured one. The real
kube-controller-manager of the sim then taints the node (``node.kubernetes.io/disk-pressure:
NoSchedule``: its node lifecycle controller, TaintNodesByCondition) and the real scheduler
keeps Pods that do not tolerate it off the node, exactly as on a real cluster. kwok's
heartbeat Stage (every 10 minutes) rewrites the conditions to kwok's defaults, which clears
the fault.

CLI (kubeconfig text in ``$GPULAB_KUBECONFIG``)::

    python -m variants.sim.ctl.faults pressure --node NODE --condition DiskPressure [--clear]

prints the node's conditions as JSON; exit 1 with the cause when the API refuses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

#: condition -> (reason when True, message when True, reason when False, message when False),
#: the kubelet's strings (pkg/kubelet/nodestatus/setters.go).
KUBELET_PRESSURE: Final = {
    "DiskPressure": (
        "KubeletHasDiskPressure",
        "kubelet has disk pressure",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
    ),
    "MemoryPressure": (
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
        "KubeletHasSufficientMemory",
        "kubelet has sufficient memory available",
    ),
    "PIDPressure": (
        "KubeletHasInsufficientPID",
        "kubelet has insufficient PID available",
        "KubeletHasSufficientPID",
        "kubelet has sufficient PID available",
    ),
}
SIMULATED_CONDITION: Final = "gpulab.dev/simulated-condition"


def pressure_patch(condition: str, on: bool, now: datetime) -> dict[str, Any]:
    """The node status patch (strategic merge: conditions merge by ``type``) that sets
    ``condition`` to True (``on``) or False with the kubelet's reason and message.

    Raises:
        ValueError: not one of :data:`KUBELET_PRESSURE`.
    """
    if condition not in KUBELET_PRESSURE:
        raise ValueError(f"--condition must be one of {', '.join(KUBELET_PRESSURE)}, not {condition!r}")
    r_on, m_on, r_off, m_off = KUBELET_PRESSURE[condition]
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "status": {
            "conditions": [
                {
                    "type": condition,
                    "status": "True" if on else "False",
                    "reason": r_on if on else r_off,
                    "message": m_on if on else m_off,
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            ]
        }
    }


def set_pressure(api: Any, node: str, condition: str, on: bool) -> list[dict[str, Any]]:
    """Set ``condition`` on ``node`` (:func:`pressure_patch`) and mark the node; returns the
    node's conditions after the patch (JSON)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    marker = {"metadata": {"annotations": {SIMULATED_CONDITION: f"{condition}={'True' if on else 'False'}"}}}
    core.patch_node(node, marker)
    done = core.patch_node_status(node, pressure_patch(condition, on, datetime.now(UTC)))
    conditions = done.status.conditions if done.status else None
    return [api.sanitize_for_serialization(c) for c in conditions or []]


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry (module docstring)."""
    from gpulab.kube.client import load_clients

    ap = argparse.ArgumentParser(prog="python -m variants.sim.ctl.faults")
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("pressure", help="set (or --clear) a kubelet pressure condition on a node")
    sp.add_argument("--node", required=True)
    sp.add_argument("--condition", choices=sorted(KUBELET_PRESSURE), default="DiskPressure")
    sp.add_argument("--clear", action="store_true")
    args = ap.parse_args(argv)
    try:
        conditions = set_pressure(load_clients(), args.node, args.condition, not args.clear)
    except Exception as exc:  # the API's refusal, in one line
        print(f"faults: setting {args.condition} on node {args.node} failed: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(conditions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
