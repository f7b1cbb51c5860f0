"""Checklist item ``pods-see-every-gpu``: a Pod can be given every GPU of the host.

``allocatable-matches-gpus`` counts what the device plugin advertises; this item checks
which GPUs a container actually gets. The smoke Pod requests all the host's GPUs
(``smokeGpus: all``, gpulab.config.gpus.smoke_gpu_count) and lists them with
``nvidia-smi -L``; the smoke check records their UUIDs (``smokeGpuUuids``,
gpulab.kube.smoke_gpus) and the item compares the set with the host probe's (``hostGpus[].uuid``),
as NVIDIA's nvkind CI compares ``nvidia-smi -L`` in a Pod with the host's. A count can match
while the GPUs do not (a stale device list, a GPU held out as unhealthy, the wrong node).

Statuses (gpulab.core.findings.Status):

* ``pass``: the Pod saw exactly the host's GPUs;
* ``fail``: GPUs missing from the Pod (named), or GPUs the host does not have; or the Pod
  saw more GPUs than it was allocated (``smokeGpus``), under any sharing: the node's runtime
  gave it GPUs the device plugin did not (it fell back to the image's
  ``NVIDIA_VISIBLE_DEVICES=all``: gpulab.kube.gpu_isolation), here too in the simulated lab;
* ``not-observable-in-simulation``: the simulated lab (kwok serves a capture as the log; the
  comparison still runs on the capture's UUIDs, and a mismatch there fails);
* ``not-tested``: a lab deployed by a version without this check (no ``smokeGpuUuids``); or
  one Pod cannot hold every GPU: time-slicing (replicas need not be distinct
  GPUs: NVIDIA/k8s-device-plugin README, "Shared Access to GPUs with CUDA Time-Slicing"),
  MIG (the Pod gets MIG devices), or the host's UUIDs are unknown (``hostProbe: off``, an
  existing cluster: the cluster is not this host);
* ``not-evaluated``: not known yet (a preview), or the Pod's log lists no GPU (a smoke Pod
  from before this check: ``make verify`` runs a new one).

Registered in :func:`gpulab.verdict.checklist.evaluate`, which passes its view of the outputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.names import DEVICE_PLUGIN_DS, GPU_RESOURCE, SMOKE_POD
from gpulab.core.outputs import LabOutputs

ITEM_ID: Final = "pods-see-every-gpu"
TITLE: Final = f"A Pod sees every GPU of the host (nvidia-smi -L in {SMOKE_POD} lists the host's UUIDs)"
EXPECTED: Final = "the smoke Pod's nvidia-smi -L lists exactly the host's GPU UUIDs (hostGpus)"
#: What the item reads.
KEYS: Final = (o.SMOKE_GPU_UUIDS, o.HOST_GPUS)
_FIX_ALL: Final = "scripts/pulumi config set gpu-lab:smokeGpus all, then make verify"
_FIX_PLUGIN: Final = (
    f"kubectl -n gpu-operator logs ds/{DEVICE_PLUGIN_DS} (which GPUs it lists as healthy); "
    "nvidia-smi -L on the host"
)


#: What the item reads: the typed outputs (gpulab.core.outputs.LabOutputs).
View = LabOutputs


def _item(status: Status, observed: str, sim: bool, fix: str = _FIX_PLUGIN) -> Finding:
    return Finding(ITEM_ID, status, observed, EXPECTED, fix, simulated=sim, title=TITLE)


_FIX_LEAK: Final = (
    f"scripts/kubectl -n gpu-operator get ds {DEVICE_PLUGIN_DS} -o jsonpath='{{..env}}' "
    "(DEVICE_LIST_STRATEGY: "
    "is it one the node's runtime reads?) and the node's nvidia-container-runtime config; then make verify"
)


def _more_than_allocated(view: View) -> str | None:
    """The observation when the smoke Pod listed more GPUs than it was allocated, else None."""
    found, requested = view.smoke_gpu_uuids, view.smoke_gpus
    if not isinstance(found, list) or isinstance(requested, bool) or not isinstance(requested, int):
        return None
    seen = sorted({str(u) for u in found})
    if requested < 1 or len(seen) <= requested:
        return None
    return (
        f"the smoke Pod saw {len(seen)} GPUs ({', '.join(seen)}), it was allocated {requested}: the node's "
        "runtime gave it GPUs the device plugin did not allocate (it read the image's "
        "NVIDIA_VISIBLE_DEVICES=all, not the device plugin's list)"
    )


def host_uuids(gpus: Any) -> set[str] | None:
    """``hostGpus`` (``[{"index", "name", "uuid", ...}]``) as a set of UUIDs; None when the
    list is absent, empty, or a GPU has no UUID."""
    if not isinstance(gpus, list) or not gpus:
        return None
    uuids = [g.get("uuid") if isinstance(g, Mapping) else None for g in gpus]
    return None if any(not u for u in uuids) else {str(u) for u in uuids}


def pods_see_every_gpu(view: View, time_slicing_replicas: int = 1) -> Finding:
    """Evaluate the item (statuses in the module docstring); ``time_slicing_replicas`` is the
    lab's ``timeSlicingReplicas`` (>= 1)."""
    sim = view.simulated(KEYS)
    strategy, resource = view.mig_strategy, view.smoke_resource
    leaked = _more_than_allocated(view)
    if leaked:
        return _item(Status.FAIL, leaked, sim, _FIX_LEAK)
    if time_slicing_replicas > 1:
        return _item(
            Status.NOT_TESTED,
            f"not tested: time-slicing ({time_slicing_replicas} replicas per GPU); a Pod's replicas need "
            "not be distinct GPUs, so one Pod cannot be made to hold every GPU",
            sim,
        )
    if strategy not in (None, "none") or resource not in (None, GPU_RESOURCE):
        return _item(
            Status.NOT_TESTED,
            f"not tested: MIG (migStrategy {strategy}, smoke resource {resource}); the Pod gets MIG "
            "devices, not whole GPUs",
            sim,
        )
    if view.deployed and not view.has(o.SMOKE_GPU_UUIDS):
        return _item(
            Status.NOT_TESTED,
            f"not tested: this lab was deployed by a version without the check (no {o.SMOKE_GPU_UUIDS}); "
            "make verify runs a new smoke Pod",
            sim,
            _FIX_ALL,
        )
    if view.unknown(o.SMOKE_GPU_UUIDS) or view.unknown(o.HOST_GPUS):
        return _item(
            Status.NOT_EVALUATED, f"known after deployment ({o.SMOKE_GPU_UUIDS}, {o.HOST_GPUS})", sim
        )
    host = host_uuids(view.host_gpus)
    if host is None:
        return _item(
            Status.NOT_TESTED,
            "not tested: the host's GPU UUIDs are not known (hostProbe off, or a cluster that is not "
            "this host), so there is nothing to compare the Pod's GPUs with",
            sim,
        )
    found = view.smoke_gpu_uuids
    seen = {str(u) for u in found} if isinstance(found, list) and found else None
    if seen is None:
        if view.simulated_lab:
            return _item(
                Status.NOT_OBSERVABLE,
                "not observable in simulation: no container runs, and the simulated log (a capture) "
                "lists no GPU",
                True,
            )
        return _item(
            Status.NOT_EVALUATED,
            "the smoke Pod's log lists no GPU (no nvidia-smi -L lines: a smoke Pod from an earlier "
            "version); make verify runs a new one",
            sim,
            _FIX_ALL,
        )
    missing, extra = sorted(host - seen), sorted(seen - host)
    if not missing and not extra:
        shown = ", ".join(sorted(seen))
        if view.simulated_lab:
            return _item(
                Status.NOT_OBSERVABLE,
                f"not observable in simulation: the simulated log (from the capture) lists the capture's "
                f"{len(seen)} GPU(s), as the host capture: {shown}",
                True,
            )
        return _item(Status.PASS, f"the smoke Pod saw the host's {len(seen)} GPU(s): {shown}", sim)
    requested = view.smoke_gpus
    parts = ([f"not in the Pod: {', '.join(missing)}"] if missing else []) + (
        [f"not on the host: {', '.join(extra)}"] if extra else []
    )
    asked = isinstance(requested, int) and not isinstance(requested, bool) and requested < len(host)
    note = f" (the smoke Pod requested {requested}: smokeGpus is not all)" if asked else ""
    return _item(
        Status.FAIL,
        f"the smoke Pod saw {len(seen)} GPU(s), the host has {len(host)}{note}: {'; '.join(parts)}",
        sim,
        _FIX_ALL if asked else _FIX_PLUGIN,
    )
