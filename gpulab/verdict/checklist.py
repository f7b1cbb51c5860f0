"""The chapter's checklist (验证清单), evaluated from the stack's outputs.

Shared by the baseline card (:mod:`gpulab.verdict.card`) and the Pulumi policy pack: both call
:func:`evaluate` with the typed model of the stack outputs
(:class:`gpulab.core.outputs.LabOutputs`, parsed from what ``pulumi stack output --json``
prints), and nothing else: the replicas, the profile and the leftover census come with it.
Pure: no Pulumi import, no I/O.

The items, each with a stable kebab-case id:

=============================== =============================================================
``device-plugin-stable``        step 3: device-plugin pods Running, Ready, 0 restarts
``allocatable-matches-gpus``    step 4: allocatable ``nvidia.com/gpu`` == host GPUs x replicas
``driver-version-matches``      ``kubectl logs gpu-smoke`` driver == the host's driver
``events-scheduled-and-pulled`` ``kubectl describe pod gpu-smoke`` shows Scheduled and Pulled
``baseline-card-complete``      the card records GPU count/model, driver, max CUDA,
                                allocatable and the smoke log's driver
``compute-works``               ``kubectl logs gpu-compute -c vectoradd-<i>``: a CUDA kernel ran
                                on each GPU, ``Test PASSED`` (:mod:`gpulab.verdict.items.compute`)
``dcgm-reports-gpus``           the DCGM exporter's metrics name exactly the host's GPUs
                                (:mod:`gpulab.verdict.items.dcgm`)
``pods-see-every-gpu``          ``nvidia-smi -L`` in the smoke Pod lists the host's GPU UUIDs
                                (:mod:`gpulab.verdict.items.gpus`)
=============================== =============================================================

Each item is the lab's one finding record (:class:`gpulab.core.findings.Finding`, named
:data:`Item` here) with a ``title``. Statuses (:class:`gpulab.core.findings.Status`): ``pass``;
``fail``; ``not-evaluated`` (an input is unknown, e.g. during ``pulumi preview``: "known
after deployment"; never a pass); ``not-observable-in-simulation`` (the simulated lab cannot
produce the evidence, e.g. image pulls: kwok runs no kubelet).

Unknown versus absent (:meth:`LabOutputs.unknown`). A value is *unknown* when its key is missing
from the outputs, when it is :data:`UNKNOWN`, when it is one of the Pulumi policy SDK's unknown sentinels
(``pulumi_policy/proxy.py``, ``UNKNOWN_*_VALUE``), or when it is ``None`` before anything was
deployed (no host or gate fact is known). After deployment a ``None`` is a real *absence*:
``allocatableGpus: null`` means no node has the key (the device plugin never registered,
:class:`gpulab.kube.gate_rules.Resources`), which fails, distinctly from ``0`` (registered, devices
unhealthy).

``simulated`` on an item is True when any value it read is simulated: its key is listed in
``simulatedFields``, or ``simulated`` is true and that list is missing (:meth:`LabOutputs.simulated`).

Fixes are the first reaction from the chapter's troubleshooting table (表 2) for the symptom
(:mod:`gpulab.core.fixes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from gpulab.core import fixes
from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.names import GPU_RESOURCE
from gpulab.core.outputs import LabOutputs
from gpulab.verdict.items import compute as checklist_compute
from gpulab.verdict.items import dcgm as checklist_dcgm
from gpulab.verdict.items import dra as checklist_dra
from gpulab.verdict.items import gpus as checklist_gpus
from gpulab.verdict.items import leftovers as checklist_leftovers
from gpulab.verdict.items import mig as checklist_mig
from gpulab.verdict.items import nodes as checklist_nodes
from gpulab.verdict.items import queues as checklist_queues

__all__ = [
    "CARD_REQUIRED",
    "FAIL",
    "ITEM_IDS",
    "KNOWN_AFTER_DEPLOYMENT",
    "NOT_EVALUATED",
    "NOT_OBSERVABLE",
    "PASS",
    "STATUSES",
    "UNKNOWN",
    "Item",
    "evaluate",
    "exit_code",
    "overall",
]

PASS: Final = Status.PASS
FAIL: Final = Status.FAIL
NOT_EVALUATED: Final = Status.NOT_EVALUATED
NOT_OBSERVABLE: Final = Status.NOT_OBSERVABLE
#: The statuses a checklist item can have.
STATUSES: Final[tuple[str, ...]] = (PASS, FAIL, NOT_EVALUATED, NOT_OBSERVABLE)

ITEM_IDS: Final[tuple[str, ...]] = (
    "device-plugin-stable",
    "allocatable-matches-gpus",
    "driver-version-matches",
    "events-scheduled-and-pulled",
    "baseline-card-complete",
    checklist_compute.ITEM,
    checklist_dcgm.ITEM_ID,
    checklist_gpus.ITEM_ID,
)

KNOWN_AFTER_DEPLOYMENT: Final = "known after deployment"


#: Pass this as a value that is not known yet (a preview's computed output): gpulab.core.outputs.
UNKNOWN: Final = o.UNKNOWN

#: One checklist line: the lab's finding record (``id``: one of :data:`ITEM_IDS`; ``title``:
#: what is checked, with the chapter's step; ``status``: one of :data:`STATUSES`;
#: ``observed``: what the outputs say, or why it is not evaluated; ``expected``: the
#: condition for a pass; ``fix``: the first reaction from the chapter's troubleshooting
#: table; ``simulated``: any value read was simulated). ``to_json()`` gives those keys.
Item = Finding


def _item(
    item_id: str, title: str, status: Status, observed: str, expected: str, fix: str, sim: bool
) -> Item:
    return Finding(item_id, status, observed, expected, fix, simulated=sim, title=title)


def _not_evaluated(keys: Sequence[str]) -> str:
    return f"{KNOWN_AFTER_DEPLOYMENT} ({', '.join(keys)} not known yet)"


def _node(view: LabOutputs) -> str:
    """How the card's fixes run a command on the GPU node: the variant's (``nodeCommand``), else
    (outputs from before that key) the words that hold for every variant."""
    return view.node_command or fixes.ANY_NODE


def _allocatable_fix(view: LabOutputs, profile: str) -> str:
    addon = view.device_plugin_owner == "minikube-addon"
    real = fixes.allocatable(profile, fixes.device_plugin_logs(addon=addon), _node(view))
    return _in_lab(view, fixes.sim_allocatable(), real)


def _device_plugin_stable(view: LabOutputs, profile: str) -> Item:
    keys = [o.DEVICE_PLUGIN_PODS]
    title = "Device-plugin pods stay Running (step 3)"
    expected = "every device-plugin pod Running and Ready with 0 restarts"
    fix = _allocatable_fix(view, profile)
    pods = view.device_plugin_pods
    if view.allocation_path == "dra":  # no device plugin runs: the GPUs are DRA's
        observed = (
            "gpuStack dra: no device plugin runs; the GPUs come through DRA (gpu-allocated-through-dra)"
        )
        return _item("device-plugin-stable", title, Status.NOT_TESTED, observed, expected, fix, False)
    if view.unknown(o.DEVICE_PLUGIN_PODS) or pods is None:
        sim = view.simulated(keys)
        return _item("device-plugin-stable", title, NOT_EVALUATED, _not_evaluated(keys), expected, fix, sim)
    pod_list = [p for p in pods if isinstance(p, Mapping)] if isinstance(pods, list) else []
    sim = view.simulated(keys) or any(p.get("simulated") is True for p in pod_list)
    if not pod_list:
        return _item("device-plugin-stable", title, FAIL, "no device-plugin pod seen", expected, fix, sim)
    bad = [
        p
        for p in pod_list
        if p.get("phase") != "Running" or p.get("ready") is False or int(p.get("restarts") or 0)
    ]
    observed = "; ".join(
        f"{p.get('name')}: {p.get('phase')}, ready={p.get('ready')}, restarts={p.get('restarts')}"
        for p in pod_list
    )
    if bad:
        restarting = any(int(p.get("restarts") or 0) for p in bad)
        note = (
            " (restarts mean the node's injection environment is broken: the runtime does not "
            "hand the driver to the plugin)"
            if restarting
            else ""
        )
        return _item("device-plugin-stable", title, FAIL, observed + note, expected, fix, sim)
    return _item("device-plugin-stable", title, PASS, observed, expected, fix, sim)


def _allocatable_matches(view: LabOutputs, replicas: int, profile: str) -> Item:
    keys = [o.ALLOCATABLE_GPUS, o.HOST_GPU_COUNT]
    title = "Allocatable nvidia.com/gpu equals the physical GPU count (step 4)"
    fix = _allocatable_fix(view, profile)
    mig_item = checklist_mig.allocatable_mig(view, fix)  # MIG: the MIG devices (gpulab.verdict.items.mig)
    if mig_item is not None:
        return mig_item
    sim = view.simulated(keys)
    count = view.host_gpu_count
    expected_n = count * replicas if isinstance(count, int) else None
    # Time-slicing's rename: the GPUs are nvidia.com/gpu.shared (gpulab.config.time_slicing).
    name = str(view.gpu_resource or GPU_RESOURCE)
    shown = "" if name == GPU_RESOURCE else f" {name}"
    if view.allocation_path == "dra":  # DRA's allocatable: the devices the ResourceSlices publish
        name, shown = "ResourceSlice GPU devices", " (ResourceSlice GPU devices)"
    expected = (
        f"allocatable{shown} == {count} GPU(s) x {replicas} replica(s) = {expected_n}"
        if expected_n is not None
        else f"allocatable{shown} == host GPU count x {replicas} replica(s)"
    )
    unknown = [k for k in keys if view.unknown(k)]
    if unknown or (view.allocatable_gpus is not None and count is None):
        return _item(
            "allocatable-matches-gpus",
            title,
            NOT_EVALUATED,
            _not_evaluated(unknown or [o.HOST_GPU_COUNT]),
            expected,
            fix,
            sim,
        )
    alloc = view.allocatable_gpus
    cap = view.capacity_gpus
    if alloc is None:
        observed = f"device plugin not registered: no node has {name} in status.allocatable"
        return _item("allocatable-matches-gpus", title, FAIL, observed, expected, fix, sim)
    if alloc == 0:
        observed = f"allocatable 0 (capacity {cap}): devices unhealthy, e.g. XID errors"
        if cap == 0:
            observed = "allocatable 0, capacity 0: the plugin registered but sees no GPU"
        return _item("allocatable-matches-gpus", title, FAIL, observed, expected, fix, sim)
    observed = f"allocatable{shown} {alloc}, capacity {cap}, host GPUs {count}"
    status = PASS if alloc == expected_n else FAIL
    return _item("allocatable-matches-gpus", title, status, observed, expected, fix, sim)


def _in_lab(view: LabOutputs, sim_fix: str, fix: str) -> str:
    """The first fix for this lab: the simulated lab's own, with the chapter's for a GPU host."""
    return f"simulated lab: {sim_fix} (on a GPU host: {fix})" if view.simulated_lab else fix


def _driver_matches(view: LabOutputs, profile: str) -> Item:
    keys = [o.SMOKE_DRIVER_VERSION, o.HOST_DRIVER_VERSION]
    title = "Smoke Pod's driver version equals the host baseline (kubectl logs gpu-smoke)"
    expected = "smoke log Driver Version == host Driver Version"
    sim_fix = "both versions come from the shipped capture (gpulab/host/captures): re-run make lab"
    fix = _in_lab(view, sim_fix, fixes.driver_mismatch(profile, _node(view)))
    sim = view.simulated(keys)
    unknown = [k for k in keys if view.unknown(k) or view.get(k) is None]
    if unknown:
        return _item(
            "driver-version-matches",
            title,
            NOT_EVALUATED,
            _not_evaluated(unknown),
            expected,
            fix,
            sim,
        )
    smoke, host = str(view.smoke_driver_version), str(view.host_driver_version)
    status = PASS if smoke == host else FAIL
    observed = f"smoke {smoke}, host {host}"
    return _item("driver-version-matches", title, status, observed, expected, fix, sim)


def _events(view: LabOutputs) -> Item:
    keys = [o.SMOKE_EVENTS]
    title = "Smoke Pod events show Scheduled and Pulled (kubectl describe pod gpu-smoke)"
    expected = "events include Scheduled (scheduler) and Pulled (kubelet)"
    sim = view.simulated(keys) or view.simulated_lab
    if view.unknown(o.SMOKE_EVENTS) or view.smoke_events is None:
        return _item(
            "events-scheduled-and-pulled",
            title,
            NOT_EVALUATED,
            _not_evaluated(keys),
            expected,
            fixes.toolkit(),
            sim,
        )
    raw = view.smoke_events
    reasons = [str(r) for r in raw] if isinstance(raw, list) else []
    scheduled = "Scheduled" in reasons
    pulled = "Pulled" in reasons
    seen = ", ".join(reasons) or "none"
    if not scheduled:
        return _item(
            "events-scheduled-and-pulled",
            title,
            FAIL,
            f"no Scheduled event (events: {seen})",
            expected,
            fixes.pending(),
            sim,
        )
    if view.simulated_lab:
        # The scheduler is real in the simulated lab; the kubelet is not, so no pull happens.
        observed = (
            f"Scheduled seen (real scheduler); Pulled not observable in simulation: kwok runs "
            f"no kubelet and pulls no image (events: {seen})"
        )
        return _item(
            "events-scheduled-and-pulled",
            title,
            NOT_OBSERVABLE,
            observed,
            expected,
            fixes.toolkit(),
            sim,
        )
    if not pulled:
        return _item(
            "events-scheduled-and-pulled",
            title,
            FAIL,
            f"Scheduled seen, no Pulled event (events: {seen})",
            expected,
            fixes.toolkit(),
            sim,
        )
    return _item(
        "events-scheduled-and-pulled", title, PASS, f"events: {seen}", expected, fixes.toolkit(), sim
    )


#: Fields the baseline card must carry (the chapter: GPU count, allocatable, Pod log, plus the
#: card's driver version and CUDA maximum).
CARD_REQUIRED: Final[tuple[str, ...]] = (
    o.HOST_GPU_COUNT,
    o.HOST_GPU_MODELS,
    o.HOST_DRIVER_VERSION,
    o.HOST_MAX_CUDA,
    o.ALLOCATABLE_GPUS,
    o.SMOKE_DRIVER_VERSION,
)


def _card_complete(view: LabOutputs) -> Item:
    title = "Baseline card records the lab's facts (checklist line 5)"
    expected = (
        "GPU count and model, host driver, max CUDA, allocatable and the smoke log's driver "
        "recorded; measured TFLOPS optional"
    )
    fix = fixes.card()
    keys = list(CARD_REQUIRED)
    sim = view.simulated(keys)
    unknown = [k for k in keys if view.unknown(k)]
    if unknown:
        return _item(
            "baseline-card-complete",
            title,
            NOT_EVALUATED,
            _not_evaluated(unknown),
            expected,
            fix,
            sim,
        )
    # allocatable None is a recorded fact ("key absent"); every other field needs a value.
    missing = [k for k in keys if k != o.ALLOCATABLE_GPUS and view.get(k) in (None, "", [])]
    tflops = view.measured_tflops
    measured = isinstance(tflops, Mapping) and any(
        isinstance(v, (int, float)) or (isinstance(v, Mapping) and v.get("tflops") is not None)
        for v in tflops.values()
    )
    tflops_note = (
        "measured TFLOPS recorded"
        if measured
        else f"measured TFLOPS not recorded (optional, on a GPU host: {fixes.measure_tflops()}); "
        "not a failure of the lab"
    )
    if missing:
        return _item(
            "baseline-card-complete",
            title,
            FAIL,
            f"missing: {', '.join(missing)}; {tflops_note}",
            expected,
            fix,
            sim,
        )
    return _item("baseline-card-complete", title, PASS, f"all recorded; {tflops_note}", expected, fix, sim)


def evaluate(outputs: LabOutputs) -> list[Item]:
    """Evaluate the checklist on the stack outputs; returns the items in :data:`ITEM_IDS` order,
    then ``no-leftovers`` when the model carries a leftover census of an existing cluster.

    Args:
        outputs: the typed outputs (:meth:`LabOutputs.from_json`), unknown values as the module
            docstring says; its ``time_slicing_replicas`` (allocatable = GPUs x replicas),
            ``profile`` (the minikube profile named in fixes) and ``leftover_census`` (after
            destroy of an existing cluster: variants.existing.leftovers.census) are used.
    """
    view, replicas, profile = outputs, outputs.time_slicing_replicas, outputs.profile
    return [
        _device_plugin_stable(view, profile),
        _allocatable_matches(view, replicas, profile),
        _driver_matches(view, profile),
        _events(view),
        _card_complete(view),
        checklist_compute.compute_works(view, replicas),
        checklist_dcgm.dcgm_reports_gpus(view),
        checklist_gpus.pods_see_every_gpu(view, replicas),
        *checklist_leftovers.items(outputs, outputs.leftover_census),
        # A found GPU stack's per-node checks (gpulab.verdict.items.nodes): every node, each named.
        *checklist_nodes.items(view),
        # DRA mode: the smoke Pod's claim (gpulab.verdict.items.dra).
        *checklist_dra.items(view),
        # The queue layer: Kueue's quota and all-or-nothing admission (gpulab.verdict.items.queues).
        *checklist_queues.items(view),
    ]


def overall(items: Sequence[Item]) -> str:
    """``"fail"`` if any item failed, else ``"not-evaluated"`` if any was not evaluated, else
    ``"compute not tested"`` when no ``compute-works`` item passed or was not observable (a
    lab that has not shown a GPU doing work never passes), else ``"pass"``
    (``not-observable-in-simulation`` counts as pass: nothing contradicts it; the card says
    the lab is simulated), as a plain string."""
    statuses = {i.status for i in items}
    if FAIL in statuses:
        return FAIL.value
    if NOT_EVALUATED in statuses:
        return NOT_EVALUATED.value
    if not any(i.id == checklist_compute.ITEM and i.status in (PASS, NOT_OBSERVABLE) for i in items):
        return checklist_compute.NOT_TESTED_VERDICT
    return PASS.value


def exit_code(items: Sequence[Item]) -> int:
    """Process exit code for a checklist: 0 when :func:`overall` is ``pass`` (every item
    ``pass`` or ``not-observable-in-simulation``); 1 otherwise, i.e. any ``fail``,
    ``not-evaluated`` or compute ``not-tested`` (an unknown value or a check not run proves
    nothing, so it never yields success). Usage errors (2) are the caller's."""
    return 0 if overall(items) == PASS else 1
