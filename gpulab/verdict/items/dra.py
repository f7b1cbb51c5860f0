"""Checklist item ``gpu-allocated-through-dra`` (``gpuStack: dra``): the smoke Pod got its GPUs
through Dynamic Resource Allocation, and its container saw exactly them.

Read from output ``dra`` (gpulab.kube.dra): the smoke Pod's ResourceClaim, made from its
ResourceClaimTemplate of NVIDIA's DeviceClass, allocated by the scheduler (``status.allocation``'s
devices, each resolved to its ResourceSlice's ``uuid``), reserved for the Pod (``reservedFor``,
read while the Pod held it), named in the Pod's ``resourceClaimStatuses``; and the UUIDs the
container listed (``nvidia-smi -L``) equal to the allocated ones (``uuidsMatch``). This is the CNCF
Kubernetes AI Conformance requirement ``dra_support`` shown on the lab's own smoke Pod.

Only in DRA mode (``allocationPath: dra``); on the device-plugin path the item is absent. In the
simulated lab the slices and the listing are the sim's (labelled simulated) while the allocation
is the real scheduler's: the item passes, marked simulated.

Registered in :func:`gpulab.verdict.checklist.evaluate`.
"""

from __future__ import annotations

from typing import Final

from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.outputs import LabOutputs

ITEM_ID: Final = "gpu-allocated-through-dra"
TITLE: Final = "The smoke Pod's GPUs came through a DRA ResourceClaim, and it saw exactly them (dra_support)"
EXPECTED: Final = (
    "the smoke Pod's claim allocated by the scheduler and reserved for it, each device's UUID from its "
    "ResourceSlice, and nvidia-smi -L in the Pod listing exactly those UUIDs"
)
FIX: Final = (
    "kubectl get resourceslices (one per GPU node, driver gpu.nvidia.com); kubectl get pods -n "
    "dra-driver-nvidia-gpu (NVIDIA's kubelet plugin publishes them); then make verify"
)


def items(view: LabOutputs) -> list[Finding]:
    """The item in DRA mode, else ``[]``."""
    if view.allocation_path != "dra":
        return []
    if view.unknown(o.DRA):
        return [
            Finding(ITEM_ID, Status.NOT_EVALUATED, "dra: known after deployment", EXPECTED, FIX, title=TITLE)
        ]
    dra = view.dra or {}
    claim = dra.get("claim") or {}
    simulated = any(s.get("simulated") for s in dra.get("slices") or [] if isinstance(s, dict))
    if claim.get("uuidsMatch") != "match" or not claim.get("reservedForPod"):
        observed = f"no claim allocated, reserved and seen: {claim or 'none recorded'}"
        return [Finding(ITEM_ID, Status.FAIL, observed, EXPECTED, FIX, simulated=simulated, title=TITLE)]
    devices = ", ".join(
        f"{d.get('pool')}/{d.get('device')} = {d.get('uuid')}" for d in claim.get("devices") or []
    )
    observed = (
        f"ResourceClaim {claim.get('claim')} of {dra.get('deviceClass')}: {devices}; reserved for "
        f"{', '.join(map(str, claim.get('reservedFor') or []))}; the container listed exactly these"
        + ("; slices and listing simulated, allocation by the real scheduler" if simulated else "")
    )
    return [Finding(ITEM_ID, Status.PASS, observed, EXPECTED, FIX, simulated=simulated, title=TITLE)]
