"""The chapter's checklist (验证清单), evaluated from the stack's outputs.

Shared by the baseline card (:mod:`gpulab.verdict.card`) and the Pulumi policy pack: both call
:func:`evaluate` with the stack outputs as a JSON dict keyed by :mod:`gpulab.core.outputs`
constants (what ``pulumi stack output --json`` prints). Pure: no Pulumi import, no I/O.

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

Unknown versus absent. A value is *unknown* when its key is missing from ``outputs``, when it
is :data:`UNKNOWN`, when it is one of the Pulumi policy SDK's unknown sentinels
(``pulumi_policy/proxy.py``, ``UNKNOWN_*_VALUE``), or when it is ``None`` before anything was
deployed (no host or gate fact is known). After deployment a ``None`` is a real *absence*:
``allocatableGpus: null`` means no node has the key (the device plugin never registered,
:class:`gpulab.kube.gate_rules.Resources`), which fails, distinctly from ``0`` (registered, devices
unhealthy).

``simulated`` on an item is True when any value it read is simulated: its key is listed in
``outputs[SIMULATED_FIELDS]``, or ``outputs[SIMULATED]`` is true and that list is missing.

Fixes are the first reaction from the chapter's troubleshooting table (表 2) for the symptom
(:mod:`gpulab.core.fixes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from gpulab.core import fixes
from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.names import DEFAULT_PROFILE, GPU_RESOURCE
from gpulab.verdict.items import compute as checklist_compute
from gpulab.verdict.items import dcgm as checklist_dcgm
from gpulab.verdict.items import gpus as checklist_gpus
from gpulab.verdict.items import leftovers as checklist_leftovers
from gpulab.verdict.items import mig as checklist_mig

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
    "is_unknown",
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


class _Unknown:
    """Type of :data:`UNKNOWN`."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


#: Pass this as a value that is not known yet (a preview's computed output).
UNKNOWN: Final = _Unknown()

# pulumi_policy/proxy.py (pulumi-policy 1.21): sentinels it puts where a value is unknown.
_POLICY_SENTINELS: Final = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)

# Facts that exist only once something was deployed (host probe or readiness gate ran).
_DEPLOYMENT_EVIDENCE: Final = (
    o.HOST_DRIVER_VERSION,
    o.HOST_GPU_COUNT,
    o.KUBERNETES_VERSION,
    o.DEVICE_PLUGIN_PODS,
    o.CLUSTER_POLICY_STATE,
    o.SMOKE_PHASE,
)

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


class _View:
    """Reads outputs with the unknown/absent rules of the module docstring."""

    def __init__(self, outputs: Mapping[str, Any]) -> None:
        self.outputs = outputs
        self.deployed = any(
            not is_unknown(outputs, k) and outputs.get(k) is not None for k in _DEPLOYMENT_EVIDENCE
        )
        sim_fields = outputs.get(o.SIMULATED_FIELDS)
        self.simulated_lab = outputs.get(o.SIMULATED) is True
        self.sim_fields: frozenset[str] | None = (
            frozenset(str(f) for f in sim_fields) if isinstance(sim_fields, list) else None
        )

    def unknown(self, key: str) -> bool:
        if is_unknown(self.outputs, key):
            return True
        return self.outputs.get(key) is None and not self.deployed

    def get(self, key: str) -> Any:
        return self.outputs.get(key)

    def simulated(self, keys: Iterable[str]) -> bool:
        if self.sim_fields is None:
            return self.simulated_lab
        return any(k in self.sim_fields for k in keys)


def is_unknown(outputs: Mapping[str, Any], key: str) -> bool:
    """True when ``key`` is missing, :data:`UNKNOWN`, or a Pulumi policy unknown sentinel.

    ``None`` is not unknown by itself (see the module docstring).
    """
    if key not in outputs:
        return True
    value = outputs[key]
    if value is UNKNOWN:
        return True
    return isinstance(value, str) and value in _POLICY_SENTINELS


def _not_evaluated(keys: Sequence[str]) -> str:
    return f"{KNOWN_AFTER_DEPLOYMENT} ({', '.join(keys)} not known yet)"


def _allocatable_fix(view: _View, profile: str) -> str:
    addon = view.get(o.DEVICE_PLUGIN_OWNER) == "minikube-addon"
    real = fixes.allocatable(profile, fixes.device_plugin_logs(addon=addon))
    return _in_lab(view, fixes.sim_allocatable(), real)


def _device_plugin_stable(view: _View, profile: str) -> Item:
    keys = [o.DEVICE_PLUGIN_PODS]
    title = "Device-plugin pods stay Running (step 3)"
    expected = "every device-plugin pod Running and Ready with 0 restarts"
    fix = _allocatable_fix(view, profile)
    pods = view.get(o.DEVICE_PLUGIN_PODS)
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


def _as_count(value: Any) -> Any:
    """Whole numbers as int: the engine hands numeric outputs to policies as floats (1.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _allocatable_matches(view: _View, replicas: int, profile: str) -> Item:
    keys = [o.ALLOCATABLE_GPUS, o.HOST_GPU_COUNT]
    title = "Allocatable nvidia.com/gpu equals the physical GPU count (step 4)"
    fix = _allocatable_fix(view, profile)
    mig_item = checklist_mig.allocatable_mig(view, fix)  # MIG: the MIG devices (gpulab.verdict.items.mig)
    if mig_item is not None:
        return mig_item
    sim = view.simulated(keys)
    count = _as_count(view.get(o.HOST_GPU_COUNT))
    expected_n = count * replicas if isinstance(count, int) else None
    # Time-slicing's rename: the GPUs are nvidia.com/gpu.shared (gpulab.config.time_slicing).
    name = str(view.get(o.GPU_RESOURCE_NAME) or GPU_RESOURCE)
    shown = "" if name == GPU_RESOURCE else f" {name}"
    expected = (
        f"allocatable{shown} == {count} GPU(s) x {replicas} replica(s) = {expected_n}"
        if expected_n is not None
        else f"allocatable{shown} == host GPU count x {replicas} replica(s)"
    )
    unknown = [k for k in keys if view.unknown(k)]
    if unknown or (view.get(o.ALLOCATABLE_GPUS) is not None and count is None):
        return _item(
            "allocatable-matches-gpus",
            title,
            NOT_EVALUATED,
            _not_evaluated(unknown or [o.HOST_GPU_COUNT]),
            expected,
            fix,
            sim,
        )
    alloc = _as_count(view.get(o.ALLOCATABLE_GPUS))
    cap = _as_count(view.get(o.CAPACITY_GPUS))
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


def _in_lab(view: _View, sim_fix: str, fix: str) -> str:
    """The first fix for this lab: the simulated lab's own, with the chapter's for a GPU host."""
    return f"simulated lab: {sim_fix} (on a GPU host: {fix})" if view.simulated_lab else fix


def _driver_matches(view: _View, profile: str) -> Item:
    keys = [o.SMOKE_DRIVER_VERSION, o.HOST_DRIVER_VERSION]
    title = "Smoke Pod's driver version equals the host baseline (kubectl logs gpu-smoke)"
    expected = "smoke log Driver Version == host Driver Version"
    sim_fix = "both versions come from the shipped capture (gpulab/host/captures): re-run make lab"
    fix = _in_lab(view, sim_fix, fixes.driver_mismatch(profile))
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
    smoke, host = str(view.get(o.SMOKE_DRIVER_VERSION)), str(view.get(o.HOST_DRIVER_VERSION))
    status = PASS if smoke == host else FAIL
    observed = f"smoke {smoke}, host {host}"
    return _item("driver-version-matches", title, status, observed, expected, fix, sim)


def _events(view: _View) -> Item:
    keys = [o.SMOKE_EVENTS]
    title = "Smoke Pod events show Scheduled and Pulled (kubectl describe pod gpu-smoke)"
    expected = "events include Scheduled (scheduler) and Pulled (kubelet)"
    sim = view.simulated(keys) or view.simulated_lab
    if view.unknown(o.SMOKE_EVENTS) or view.get(o.SMOKE_EVENTS) is None:
        return _item(
            "events-scheduled-and-pulled",
            title,
            NOT_EVALUATED,
            _not_evaluated(keys),
            expected,
            fixes.toolkit(),
            sim,
        )
    raw = view.get(o.SMOKE_EVENTS)
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


def _card_complete(view: _View) -> Item:
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
    tflops = view.get(o.MEASURED_TFLOPS)
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


def evaluate(
    outputs: Mapping[str, Any],
    *,
    time_slicing_replicas: int = 1,
    profile: str = DEFAULT_PROFILE,
    leftover_census: Mapping[str, Any] | None = None,
) -> list[Item]:
    """Evaluate the checklist on stack outputs; returns the items in :data:`ITEM_IDS` order.

    Args:
        outputs: stack outputs keyed by :mod:`gpulab.core.outputs` constants (``pulumi stack output
            --json``), unknown values as described in the module docstring.
        time_slicing_replicas: replicas per GPU (allocatable = GPUs x replicas); >= 1.
        profile: the minikube profile named in fixes.
        leftover_census: after destroy of an existing cluster, what is left there
            (variants.existing.leftovers.census); adds the ``no-leftovers`` item.

    Raises:
        ValueError: ``time_slicing_replicas < 1``.
    """
    if time_slicing_replicas < 1:
        raise ValueError(f"time_slicing_replicas must be >= 1, got {time_slicing_replicas}")
    view = _View(outputs)
    return [
        _device_plugin_stable(view, profile),
        _allocatable_matches(view, time_slicing_replicas, profile),
        _driver_matches(view, profile),
        _events(view),
        _card_complete(view),
        checklist_compute.compute_works(view, time_slicing_replicas),
        checklist_dcgm.dcgm_reports_gpus(view),
        checklist_gpus.pods_see_every_gpu(view, time_slicing_replicas),
        *checklist_leftovers.items(outputs, leftover_census),
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
