"""Checklist item ``queue-admits-all-or-nothing`` (``queues: true``): Kueue held the GPUs to the
measured quota, one whole Job at a time, and never admitted part of a Job.

Read from output ``queues`` (gpulab.kube.queues): the ClusterQueue's quota equal to the
allocatable the gate measured; of two Jobs each asking for the whole quota, one admitted and the
other waiting with Kueue's reason, then admitted once the first finished; a Job needing more than
the quota never admitted, no Pod of it created; a Pod without the queue label not taken by the
queue. This is the CNCF Kubernetes AI Conformance requirement ``gang_scheduling`` (all of a
workload's Pods start together or none does) shown on the lab's own queue.

Only with the queue layer; without it the item is absent. In the simulated lab Kueue's decisions
are real (its controller runs against the real API server) and the Jobs' Pods are kwok's: the
item passes, marked simulated.

Registered in :func:`gpulab.verdict.checklist.evaluate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.outputs import LabOutputs

ITEM_ID: Final = "queue-admits-all-or-nothing"
#: The CNCF Kubernetes AI Conformance requirement this item shows (its checklist's id).
REQUIREMENT: Final = "gang_scheduling"
TITLE: Final = (
    "Kueue admits a Job's whole GPU quota or none of it, one Job at a time, within the measured quota "
    f"({REQUIREMENT})"
)
EXPECTED: Final = (
    "the ClusterQueue's quota equal to the measured allocatable; of two Jobs each asking for the whole "
    "quota, one admitted and the other waiting with Kueue's reason, then admitted; a Job needing more than "
    "the quota never admitted and no Pod of it created; a Pod without the queue label not taken by the queue"
)
FIX: Final = (
    "kubectl get workloads -n default; kubectl describe clusterqueue gpu-lab (its quota and usage); the "
    "controller's log (the sim: .state/sim/<profile>/kwok/clusters/<profile>/kueue/kueue.log); then make lab"
)


def problems(q: Mapping[str, Any]) -> list[str]:
    """What in the proof's facts contradicts the item (empty: it holds)."""
    out = []
    if not q.get("quotaMatchesAllocatable") or q.get("quota") != q.get("measuredAllocatable"):
        out.append(f"quota {q.get('quota')} is not the measured allocatable {q.get('measuredAllocatable')}")
    jobs = [j for j in q.get("jobs") or [] if isinstance(j, Mapping)]
    waited = [j for j in jobs if j.get("pending")]
    if len(jobs) != 2 or len(waited) != 1 or not all(j.get("admittedAt") for j in jobs):
        out.append("not one Job admitted and the other waiting, then admitted")
    gang = q.get("gang") or {}
    if gang.get("admitted") is not False or gang.get("podsCreated") != 0:
        out.append(f"the over-quota Job was admitted in part ({gang.get('podsCreated')} Pod(s))")
    pod = q.get("unqueuedPod") or {}
    if pod.get("workload") is not None or pod.get("admissionGate") is not False:
        out.append("the Pod without the queue label was taken by the queue")
    return out


def summary(q: Mapping[str, Any]) -> str:
    """One line of what was measured: the quota, who waited, why and how long, the gang Job."""
    jobs = [j for j in q.get("jobs") or [] if isinstance(j, Mapping)]
    first = next((j for j in jobs if not j.get("pending")), {})
    waited = next((j for j in jobs if j.get("pending")), {})
    gang = q.get("gang") or {}
    return (
        f"ClusterQueue {q.get('clusterQueue')}: {q.get('quota')} {q.get('resource')} (measured allocatable "
        f"{q.get('measuredAllocatable')}); {first.get('job')} admitted, {waited.get('job')} waited "
        f"{waited.get('waitedSeconds')} s ({(waited.get('pending') or {}).get('reason')}: "
        f"{(waited.get('pending') or {}).get('message')}) and was admitted after it; {gang.get('job')} "
        f"({gang.get('pods')} Pods x {gang.get('perPod')}) never admitted in {gang.get('observedSeconds')} "
        f"s, {gang.get('podsCreated')} Pods ({gang.get('message')}); a Pod without the queue label got no "
        "Workload"
    )


def items(view: LabOutputs) -> list[Finding]:
    """The item with the queue layer, else ``[]``."""
    if o.QUEUES in view.unknown_keys:
        return [
            Finding(
                ITEM_ID, Status.NOT_EVALUATED, "queues: known after deployment", EXPECTED, FIX, title=TITLE
            )
        ]
    q = view.queues
    if q is None:  # no queue layer (the key is absent or null)
        return []
    simulated = bool(q.get("podsSimulated"))
    wrong = problems(q)
    if wrong:
        observed = "; ".join(wrong) + f" ({summary(q)})"
        return [Finding(ITEM_ID, Status.FAIL, observed, EXPECTED, FIX, simulated=simulated, title=TITLE)]
    observed = summary(q) + (
        "; Kueue's decisions real (its controller against the real API server), the Jobs' Pods simulated"
        if simulated
        else ""
    )
    return [Finding(ITEM_ID, Status.PASS, observed, EXPECTED, FIX, simulated=simulated, title=TITLE)]
