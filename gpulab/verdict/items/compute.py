"""Checklist item ``compute-works``: each GPU did work, not only answered ``nvidia-smi``.

Evaluated from the compute check's outputs (components/compute.py, gpulab/kube/compute.py).
The compute Pod has one vectorAdd container per GPU the smoke Pod asks for (``vectoradd-0``
...), one GPU each; ``computeGpus`` counts those whose log said ``Test PASSED``. Where one
Pod can hold every GPU of the host (whole ``nvidia.com/gpu``, no time-slicing, no MIG, the
host is the cluster: gpulab.config.gpus.smoke_gpu_count) the count is compared with
``hostGpuCount``:

* ``pass``: ``computeResult`` is ``passed`` (the Pod reached ``Succeeded`` and every
  container's vectorAdd log had a ``Test PASSED`` line: the CUDA kernel's sum checked on
  the CPU), and the containers covered every GPU of the host; or one Pod cannot hold every
  GPU (time-slicing, also as ``nvidia.com/gpu.shared``: a replica need not be its own GPU;
  MIG: a container gets a MIG device; an ``existing`` cluster: one Pod runs on one node) or
  the host's GPU count is not known, and then the observation says what was not compared
  and how many GPUs were not covered: it passes on what ran, never on the rest;
* ``not-tested``: where one Pod can hold every GPU, the containers covered fewer than the
  host has (``smokeGpus`` not ``all``, or a lab deployed before the per-GPU compute check:
  one container); the observation names the host's GPUs not covered (from
  ``computeGpuUuids``, what each container listed; a lab deployed before that was recorded:
  how many, and the host's UUIDs they are among). Also ``computeResult``
  ``not-tested`` (``computeCheck`` off), or a lab deployed by a version without the compute
  check (no ``computeResult`` at all);
* ``fail``: ``computeResult`` is ``failed``, or the phase is not ``Succeeded``, or
  ``computeGpuUuids`` shows a container that saw GPUs it was not given: more than one, one
  another container also saw, one the host does not have (gpulab.kube.gpu_isolation), here too in
  the simulated lab (its logs are the capture's: a mismatch is the lab's own fault);
* ``not-observable-in-simulation``: the compute keys are simulated (kwok completed the Pod
  and served each container a vectorAdd log; no kernel ran); the observation still gives
  the count;
* ``not-evaluated``: not known yet (a preview, nothing deployed).

Pure: no Pulumi, no I/O. :mod:`gpulab.verdict.checklist` calls :func:`compute_works` with its
reading of the outputs (the ``view``: ``outputs``, ``get``, ``unknown``, ``simulated``,
``deployed``) and the lab's ``timeSlicingReplicas``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import fixes
from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.names import COMPUTE_POD, GPU_RESOURCE, VECTORADD_PASSED
from gpulab.core.outputs import LabOutputs
from gpulab.kube import gpu_isolation

ITEM: Final = "compute-works"
TITLE: Final = (
    f"A CUDA kernel ran on each GPU (kubectl logs {COMPUTE_POD} -c vectoradd-<i> says {VECTORADD_PASSED})"
)
EXPECTED: Final = (
    f"compute Pod Succeeded and each vectorAdd container's log (one GPU each) has a {VECTORADD_PASSED!r} "
    "line; as many containers as the host has GPUs where one Pod can hold them all"
)
#: The overall verdict when the GPU was never shown doing work (gpulab.verdict.checklist.overall).
NOT_TESTED_VERDICT: Final = "compute not tested"
_KEYS: Final = (o.COMPUTE_RESULT, o.COMPUTE_PHASE, o.COMPUTE_GPUS)
_FIX_ALL: Final = (
    "scripts/pulumi config set gpu-lab:smokeGpus all, then make verify (one vectorAdd container per GPU)"
)
_FIX_VERIFY: Final = "make verify: a fresh compute Pod with one vectorAdd container per GPU"


#: What the item reads: the typed outputs (gpulab.core.outputs.LabOutputs).
View = LabOutputs


def _fix() -> str:
    return (
        f"scripts/kubectl logs {COMPUTE_POD} --all-containers --prefix and scripts/kubectl describe pod "
        f"{COMPUTE_POD}: a CUDA "
        "error in the log, or unsatisfied condition: cuda>=X.Y in the events (pick an older computeImage); "
        "no CUDA device: " + fixes.toolkit(then=f"re-create the compute Pod: {fixes.REMEASURE}")
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _not_required(view: View, time_slicing_replicas: int) -> str | None:
    """Why the host's GPUs cannot all be in one Pod (so the item does not require them all);
    None where they can (whole ``nvidia.com/gpu``, no time-slicing, the host is the cluster)."""
    resource, strategy = view.smoke_resource, view.mig_strategy
    if time_slicing_replicas > 1:
        return (
            f"time-slicing ({time_slicing_replicas} replicas per GPU): a container's replica need not be "
            "its own GPU"
        )
    if strategy not in (None, "none") or str(resource).startswith("nvidia.com/mig-"):
        return (
            f"MIG (migStrategy {strategy}, resource {resource}): each container gets a MIG device, not a GPU"
        )
    if resource not in (None, GPU_RESOURCE):
        return f"resource {resource} (shared, not whole GPUs): a container's share need not be its own GPU"
    if view.cluster_kind == "existing":
        return "an existing cluster: one Pod runs on one node"
    return None


def _ran(view: View, time_slicing_replicas: int) -> tuple[int, str]:
    """``(containers that passed, the sentence)``; a lab from before the per-GPU check (no
    ``computeGpus``) ran one container."""
    count = _int(view.compute_gpus)
    if count is None:
        return (
            1,
            "vectorAdd passed in the compute Pod's one container (a lab deployed before the per-GPU check)",
        )
    resource, strategy = view.smoke_resource or GPU_RESOURCE, view.mig_strategy
    whole = time_slicing_replicas == 1 and resource == GPU_RESOURCE and strategy in (None, "none")
    unit = "GPU" if whole else f"{resource}, MIG {strategy}" if strategy not in (None, "none") else resource
    return count, f"vectorAdd passed in {count} of {count} containers (one {unit} each)"


def _host_uuids(view: View) -> list[str]:
    """The host's GPU UUIDs (``hostGpus``); empty for an existing cluster or when unknown."""
    if view.cluster_kind == "existing":
        return []
    gpus = view.host_gpus
    return [str(g.get("uuid")) for g in gpus or [] if isinstance(g, Mapping) and g.get("uuid")]


def _isolation(view: View, time_slicing_replicas: int) -> list[gpu_isolation.Problem]:
    """What ``computeGpuUuids`` shows wrong (gpulab.kube.gpu_isolation.problems); ``[]`` when it is
    right or was not recorded."""
    recorded = view.compute_gpu_uuids
    if not isinstance(recorded, Mapping) or not recorded:
        return []
    unit = gpu_isolation.unit_for(str(view.smoke_resource or GPU_RESOURCE), time_slicing_replicas)
    host = _host_uuids(view)
    return gpu_isolation.problems(gpu_isolation.from_outputs(recorded), unit, set(host) if host else None)


def _coverage(view: View, covered: int, why: str | None) -> tuple[bool, str]:
    """``(every GPU the item can require was covered, what follows the sentence)``."""
    host = _int(view.host_gpu_count)
    existing = view.cluster_kind == "existing"
    whose = "the cluster's (expectedGpus)" if existing else "the host's"
    if host is None or host < 1:
        return True, f"; not compared with {whose} GPUs (their count is not known)"
    if covered >= host:
        return (
            True,
            f"; not compared with {whose} {host} GPU(s): {why}"
            if why
            else f", every GPU of the host ({host})",
        )
    uuids = _host_uuids(view)
    recorded = view.compute_gpu_uuids
    if isinstance(recorded, Mapping) and recorded and uuids:
        seen = set(gpu_isolation.covered(gpu_isolation.from_outputs(recorded)))
        left = [u for u in uuids if u not in seen]
        gap = f"; not covered: {host - covered} of {whose} {host} GPUs ({', '.join(left)})"
    else:
        which = f"any {host - covered} of {', '.join(uuids)}: " if uuids else ""
        gap = (
            f"; not covered: {host - covered} of {whose} {host} GPUs ({which}which GPU each container got "
            "is not recorded)"
        )
    return why is not None, gap + (f"; not required: {why}" if why else "")


def compute_works(view: View, time_slicing_replicas: int = 1) -> Finding:
    """The ``compute-works`` item (module docstring: when each status).

    Args:
        view: gpulab.verdict.checklist's reading of the outputs (:class:`View`).
        time_slicing_replicas: the lab's ``timeSlicingReplicas`` (>= 1).
    """
    sim = view.simulated(_KEYS)

    def item(status: Status, observed: str, fix: str = "") -> Finding:
        return Finding(ITEM, status, observed, EXPECTED, fix or _fix(), simulated=sim, title=TITLE)

    result, phase = view.compute_result, view.compute_phase
    if result == "not-tested" or (not view.has(o.COMPUTE_RESULT) and view.deployed):
        why = "computeCheck is off" if result == "not-tested" else "the lab was deployed without it"
        return item(
            Status.NOT_TESTED,
            f"not tested: no compute Pod ran ({why}); nvidia-smi alone does not show the GPU computing",
            fixes.config_set(("computeCheck", "true")),
        )
    if view.unknown(o.COMPUTE_RESULT) or result is None:
        return item(Status.NOT_EVALUATED, f"known after deployment ({o.COMPUTE_RESULT} not known yet)")
    observed = f"compute Pod {phase}, result {result}"
    passed = result == "passed" and phase == "Succeeded"
    if passed and view.has(o.COMPUTE_GPUS) and view.unknown(o.COMPUTE_GPUS):
        return item(Status.NOT_EVALUATED, f"known after deployment ({o.COMPUTE_GPUS} not known yet)")
    covered, ran = _ran(view, time_slicing_replicas)
    complete, note = _coverage(view, covered, _not_required(view, time_slicing_replicas))
    leaked = _isolation(view, time_slicing_replicas) if passed else []
    if leaked:
        return item(
            Status.FAIL,
            "the containers did not each see exactly the GPU they were given: " + "; ".join(map(str, leaked)),
            "the node's runtime gave a container GPUs the device plugin did not allocate (the compute "
            "check's error says why for this variant); " + _fix(),
        )
    if sim:
        return item(
            Status.NOT_OBSERVABLE,
            f"not observable in simulation: {ran + note if passed else observed} (kwok completed the Pod "
            "and served each container a simulated vectorAdd log; no CUDA kernel ran)",
            "run the lab on a GPU host (make lab there)",
        )
    if not passed:
        return item(Status.FAIL, observed)
    if complete:
        return item(Status.PASS, ran + note)
    requested = _int(view.smoke_gpus)
    host = _int(view.host_gpu_count) or 0
    asked = requested is not None and requested < host
    return item(
        Status.NOT_TESTED,
        f"not tested on every GPU: {ran}{note}"
        + (
            f" (the smoke Pod, and so the compute Pod, asked for {requested}: smokeGpus is not all)"
            if asked
            else ""
        ),
        _FIX_ALL if asked else _FIX_VERIFY,
    )
