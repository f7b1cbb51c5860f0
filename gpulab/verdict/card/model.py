"""The baseline card as a JSON document: :func:`build_card` from the stack outputs, with
:func:`sanitize` keeping secrets out (schema in :mod:`gpulab.verdict.card`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.names import SHARED_GPU_RESOURCE
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from gpulab.verdict.card import hardware, mig, timing
from gpulab.verdict.card.tflops import HOW_TO_MEASURE, tflops_section
from gpulab.verdict.items import nodes as checklist_nodes
from gpulab.verdict.items import queues as checklist_queues

__all__ = ["CAPABILITY_BOUNDARY", "HOW_TO_MEASURE", "REDACTED", "SCHEMA", "build_card", "sanitize"]

SCHEMA: Final = "gpulab.dev/baseline-card/v1"
REDACTED: Final = "[redacted]"
#: The chapter's table 3 (表 3, what you have and still lack): capability, status, where next.
#: :func:`_boundary` adjusts the sharing and metrics rows to this lab's configuration.
CAPABILITY_BOUNDARY: Final[tuple[tuple[str, str, str], ...]] = (
    ("GPU scheduled as nvidia.com/gpu", "have", "this chapter"),
    (
        "GPU sharing: one card for several Pods, memory-level quota",
        "partial: time-slicing (timeSlicingReplicas) and MIG (migStrategy) as configured; "
        "no memory-level quota or fair sharing of one card",
        "data plane: HAMi, DRA",
    ),
    (
        "Queues, quotas, priorities, fair sharing",
        "missing: no governance yet",
        "control plane: Kueue, Volcano",
    ),
    (
        "Topology-aware placement (NVLink/NUMA)",
        "partial: topology shown on the card (hostTopology: links, NVLink count, CPU affinity, "
        "NUMA node), not used for placement",
        "NUMA-aware scheduling, placement policies",
    ),
    (
        "Metrics semantics: GPU utilisation, memory, health",
        "have: DCGM exporter's per-GPU metrics scraped and checked (dcgm-reports-gpus: "
        "utilisation, framebuffer, power, temperature per GPU UUID)",
        "observability and acceptance",
    ),
    (
        "Other accelerators (beyond NVIDIA)",
        "missing: NVIDIA path only",
        "accelerator landscape, Ascend case study",
    ),
)

_PEM_RE: Final = re.compile(r"-----BEGIN [A-Z ]+-----")
_KUBECONFIG_RE: Final = re.compile(
    r"(client-key-data|client-certificate-data|certificate-authority-data|\btoken)\s*:"
    r"|\bkind:\s*Config\b|^\s*(clusters|users|contexts)\s*:",
    re.MULTILINE,
)


def _looks_secret(text: str) -> bool:
    return text.strip() == "[secret]" or bool(_PEM_RE.search(text)) or bool(_KUBECONFIG_RE.search(text))


def sanitize(value: Any, path: str = "", redacted: list[str] | None = None) -> Any:
    """A deep copy of a JSON value with secret-looking strings replaced by ``"[redacted]"``.

    Secret-looking: ``"[secret]"``, a PEM block (``-----BEGIN ...-----``), or kubeconfig
    text (``client-key-data:``, ``token:``, ``kind: Config``, ``clusters:``/``users:``
    sections). Paths of replaced strings (``"host.gpus[0].name"``) are appended to
    ``redacted`` when given. Mapping keys are kept as strings.
    """
    if isinstance(value, str):
        if _looks_secret(value):
            if redacted is not None:
                redacted.append(path or "<value>")
            return REDACTED
        return value
    if isinstance(value, Mapping):
        return {str(k): sanitize(v, f"{path}.{k}" if path else str(k), redacted) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v, f"{path}[{i}]", redacted) for i, v in enumerate(value)]
    return value


class _Facts:
    def __init__(self, outputs: LabOutputs, redacted: list[str], when: Mapping[str, Any]) -> None:
        self.outputs = outputs
        self.redacted = redacted
        self.groups: Mapping[str, Any] = when.get("groups") or {}
        self.simulated_lab = outputs.simulated_lab
        self.is_simulated = outputs.is_simulated

    def fact(
        self, key: str, value: Any = None, *, derived: bool = False, group: str | None = None
    ) -> dict[str, Any]:
        """One fact; ``group`` names its measurement (gpulab.verdict.card.timing.GROUPS), None for a
        configured value."""
        known = not self.outputs.is_unknown(key)
        raw = value if derived else self.outputs.get(key)
        measured = self.groups.get(group) if group else None
        if group and measured is None:
            measured = {"measuredAt": None, "freshness": timing.UNKNOWN}
        return {
            "value": sanitize(raw, key, self.redacted) if known else None,
            "source": key,
            "simulated": self.is_simulated(key),
            "known": known,
            "measuredAt": measured["measuredAt"] if measured else None,
            "freshness": measured["freshness"] if measured else timing.CONFIGURED,
        }


def _memory_per_gpu(gpus: Any) -> list[int | None] | None:
    if not isinstance(gpus, list):
        return None
    return [g.get("memoryMiB") if isinstance(g, Mapping) else None for g in gpus]


def _boundary(outputs: LabOutputs) -> list[dict[str, str]]:
    """The capability rows, the sharing and metrics rows as this lab is configured."""
    dcgm_off = outputs.component_off("dcgmExporter")
    replicas, strategy = outputs.time_slicing_replicas, outputs.mig_strategy
    rows = []
    for capability, status, where in CAPABILITY_BOUNDARY:
        evidence = dra_evidence(outputs) if capability.startswith("GPU sharing") else None
        if capability.startswith("Queues"):
            evidence = queues_evidence(outputs)
        if evidence:
            status = evidence
        elif capability.startswith("GPU sharing"):
            renamed = outputs.gpu_resource == SHARED_GPU_RESOURCE
            here = f"here: {replicas} replica(s) per GPU" + (f" as {SHARED_GPU_RESOURCE}" if renamed else "")
            here += f", migStrategy {strategy or 'none'}"
            status = f"{status} ({here})"
        if capability.startswith("Metrics"):
            if dcgm_off:
                status = "missing: DCGM exporter switched off in this lab (dcgmExporter=false)"
            elif outputs.simulated_lab:
                status = f"{status}; not observable in simulation (no exporter runs in the simulated lab)"
        rows.append({"capability": capability, "status": status, "where": where})
    return rows


#: The CNCF Kubernetes AI Conformance requirement a DRA allocation shows (its checklist's id).
DRA_REQUIREMENT: Final = "dra_support"


def dra_evidence(outputs: LabOutputs) -> str | None:
    """The sharing row's status when the smoke Pod got its GPUs through DRA and saw exactly the
    allocated devices (output ``dra``'s claim, ``uuidsMatch``): measured evidence of the CNCF
    Kubernetes AI Conformance requirement :data:`DRA_REQUIREMENT`, the devices named; None
    otherwise (the configured time-slicing and MIG row stays)."""
    dra = outputs.dra if outputs.allocation_path == "dra" else None
    claim = (dra or {}).get("claim") or {}
    if claim.get("uuidsMatch") != "match":
        return None
    devices = ", ".join(
        f"{d.get('pool')}/{d.get('device')} ({d.get('uuid')})" for d in claim.get("devices") or []
    )
    simulated = any(s.get("simulated") for s in dra.get("slices") or []) if dra else False
    return (
        f"have, measured ({DRA_REQUIREMENT}, CNCF Kubernetes AI Conformance): the smoke Pod's GPUs came "
        f"through Dynamic Resource Allocation, ResourceClaim {claim.get('claim')} of DeviceClass "
        f"{dra.get('deviceClass') if dra else ''} allocated {devices} by the scheduler and reserved for "
        "the Pod, and its container listed exactly those UUIDs"
        + (
            "; the ResourceSlices and the container's listing are simulated, the allocation is the real "
            "scheduler's"
            if simulated
            else ""
        )
        + "; no memory-level quota or fair sharing of one card yet"
    )


def queues_evidence(outputs: LabOutputs) -> str | None:
    """The queues row's status when the queue proof held (output ``queues``, the checklist's
    ``queue-admits-all-or-nothing``): measured evidence of the CNCF Kubernetes AI Conformance
    requirement ``gang_scheduling``, with what was measured; None otherwise (the row stays
    "missing")."""
    q = outputs.queues
    if not isinstance(q, Mapping) or checklist_queues.problems(q):
        return None
    return (
        f"have, measured ({checklist_queues.REQUIREMENT}, CNCF Kubernetes AI Conformance): "
        + checklist_queues.summary(q)
        + ("; Kueue's decisions are real, the Jobs' Pods simulated" if q.get("podsSimulated") else "")
        + "; no priorities, preemption or fair sharing between teams yet"
    )


def queues_section(facts: _Facts) -> dict[str, Any]:
    """The card's queue section from output ``queues`` (every fact None without the layer)."""
    q = facts.outputs.queues if isinstance(facts.outputs.queues, Mapping) else {}
    jobs = [j for j in q.get("jobs") or [] if isinstance(j, Mapping)]
    first = next((j for j in jobs if not j.get("pending")), None)
    waited = next((j for j in jobs if j.get("pending")), None)
    gang = q.get("gang") if isinstance(q.get("gang"), Mapping) else None

    def f(value: Any) -> dict[str, Any]:
        return facts.fact(o.QUEUES, value, derived=True, group="queues")

    return {
        "quota": f(
            f"{q['quota']} {q.get('resource')} in ClusterQueue {q.get('clusterQueue')} (measured allocatable "
            f"{q.get('measuredAllocatable')})"
            if q
            else None
        ),
        "admitted": f(
            f"{first.get('job')}: {first.get('gpus')} {q.get('resource')}, admitted {first.get('admittedAt')}"
            if first
            else None
        ),
        "waited": f(
            f"{waited.get('job')}: {waited.get('waitedSeconds')} s, {waited['pending'].get('reason')}: "
            f"{waited['pending'].get('message')}; admitted {waited.get('admittedAt')}"
            if waited
            else None
        ),
        "gang": f(
            f"{gang.get('job')}: {gang.get('pods')} Pods x {gang.get('perPod')}, never admitted "
            f"({gang.get('podsCreated')} Pods in {gang.get('observedSeconds')} s): {gang.get('message')}"
            if gang
            else None
        ),
        "unqueued": f(
            "no Workload, no admission gate: not admitted through the queue (nor held to its quota)"
            if q.get("unqueuedPod")
            else None
        ),
        "controller": f(
            f"Kueue {q.get('chartVersion')} ({q.get('chartSource')}), controller: {q.get('controller')}"
            if q
            else None
        ),
    }


def _dcgm_section(facts: _Facts, group: str | None) -> dict[str, Any]:
    """The ``dcgm`` section: the ``dcgmMetrics`` fact, its ``status`` and ``why``
    (gpulab.verdict.card.hardware)."""
    outputs = facts.outputs
    fact = facts.fact(o.DCGM_METRICS, group=group)
    if outputs.component_off("dcgmExporter"):
        status, why = (
            hardware.NOT_TESTED,
            "not tested: the DCGM exporter is switched off (dcgmExporter=false)",
        )
    elif facts.simulated_lab:
        status, why = (
            hardware.NOT_OBSERVABLE,
            "not observable in simulation: no DCGM exporter runs in the simulated lab "
            "(kwok runs no containers)",
        )
    elif isinstance(fact["value"], Mapping):
        status, why = hardware.MEASURED, None
    else:
        status, why = hardware.NOT_RECORDED, "not recorded: no scrape of the DCGM exporter in the outputs"
    return {**fact, "status": status, "why": why}


def _nodes_section(outputs: LabOutputs, facts: _Facts) -> dict[str, Any]:
    """The node table (gpulab.verdict.items.nodes.rows): the fleet check's rows, or the fleet of
    one derived from the single-Pod checks; ``summary`` the fleet check's line (None without),
    ``simulated`` whether the rows were read from simulated nodes."""
    table, derived = checklist_nodes.rows(outputs)
    return {
        "rows": table,
        "derived": derived,
        "summary": checklist_nodes.summary(outputs),
        "simulated": bool(facts.is_simulated(o.NODES)) if not derived else bool(facts.simulated_lab),
    }


@dataclass
class _Parts:
    """What every card section is made from: the cleaned outputs, their facts, the measurements
    (``when``: gpulab.verdict.card.timing), the TFLOPS section, the checklist's items, and the
    paths redacted so far (appended to as sections are made)."""

    clean: LabOutputs
    facts: _Facts
    when: dict[str, Any]
    tflops: dict[str, Any]
    items: list[checklist.Item]
    tool_versions: Mapping[str, str]
    redacted: list[str]

    def group(self, name: str) -> str | None:
        """``name`` when that measurement was made, else None (its facts are configuration)."""
        return name if name in self.when["groups"] else None


def _host(p: _Parts) -> dict[str, Any]:
    f = p.facts.fact
    return {
        "gpuModels": f(o.HOST_GPU_MODELS, group="host"),
        "gpuCount": f(o.HOST_GPU_COUNT, group="host"),
        "memoryMiBPerGpu": f(o.HOST_GPUS, _memory_per_gpu(p.clean.host_gpus), derived=True, group="host"),
        "gpus": f(o.HOST_GPUS, group="host"),
        "driverVersion": f(o.HOST_DRIVER_VERSION, group="host"),
        "maxCuda": f(o.HOST_MAX_CUDA, group="host"),
        "probeSource": f(o.HOST_PROBE_SOURCE, group="host"),
    }


def _cluster(p: _Parts) -> dict[str, Any]:
    f = p.facts.fact
    return {
        "variant": f(o.CLUSTER_KIND),
        "kubernetesVersion": f(o.KUBERNETES_VERSION, group="gate"),
        # nvidia.com/gpu, or nvidia.com/gpu.shared under time-slicing's rename.
        "gpuResource": f(o.GPU_RESOURCE_NAME),
        "allocatableGpus": f(o.ALLOCATABLE_GPUS, group="gate"),
        "capacityGpus": f(o.CAPACITY_GPUS, group="gate"),
        "timeSlicingReplicas": p.clean.time_slicing_replicas,
        "clusterPolicyState": f(o.CLUSTER_POLICY_STATE, group="gate"),
        "devicePluginPods": f(o.DEVICE_PLUGIN_PODS, group="gate"),
        # A cluster the lab does not own: what it uses of someone else's (adoptExisting).
        "adoptedObjects": f(o.ADOPTED_OBJECTS),
    }


def _operator(p: _Parts) -> dict[str, Any]:
    f = p.facts.fact
    return {
        # install (the GPU Operator), device-plugin (NVIDIA's chart alone) or found.
        "gpuStack": f(o.GPU_STACK),
        "chartVersion": f(o.CHART_VERSION),
        "chartSource": f(o.CHART_SOURCE),
        "components": f(o.OPERATOR_COMPONENTS),
        "devicePluginOwner": f(o.DEVICE_PLUGIN_OWNER),
    }


def _smoke(p: _Parts) -> dict[str, Any]:
    f = p.facts.fact
    return {
        "phase": f(o.SMOKE_PHASE, group="smoke"),
        "driverVersion": f(o.SMOKE_DRIVER_VERSION, group="smoke"),
        "cudaVersion": f(o.SMOKE_CUDA_VERSION, group="smoke"),
        "events": f(o.SMOKE_EVENTS, group="smoke"),
        "image": f(o.SMOKE_IMAGE),
        "resource": f(o.SMOKE_RESOURCE),
        # dra (a ResourceClaim of NVIDIA's DeviceClass) or device-plugin (the counted resource).
        "allocationPath": f(o.ALLOCATION_PATH),
        "dra": f(o.DRA, group="smoke"),
        "node": f(o.SMOKE_NODE, group="smoke"),
    }


def _compute(p: _Parts) -> dict[str, Any]:
    f = p.facts.fact
    # No compute Pod ran (computeCheck off): its facts are configuration, not measurements.
    group = p.group("compute")
    section = {
        "result": f(o.COMPUTE_RESULT, group=group),
        "gpus": f(o.COMPUTE_GPUS, group=group),
        "phase": f(o.COMPUTE_PHASE, group=group),
        "image": f(o.COMPUTE_IMAGE),
    }
    if section["result"]["value"] == timing.NOT_TESTED:
        section["result"]["note"] = "computeCheck off: no compute Pod ran"
    return section


def _mig(p: _Parts) -> dict[str, Any] | None:
    groups = p.facts.groups
    return mig.mig_section(
        p.clean,
        p.facts.fact,
        p.facts.is_simulated,
        gate=groups.get("gate") or {},
        host=groups.get("host") or {},
    )


def _checklist(p: _Parts) -> dict[str, Any]:
    return {
        "result": checklist.overall(p.items),
        "exitCode": checklist.exit_code(p.items),
        "items": [sanitize(i.to_json(), f"checklist.{i.id}", p.redacted) for i in p.items],
    }


#: The card's sections after its header, in the document's order (the order they are made in,
#: too: the ``redacted`` paths are listed in it).
_SECTIONS: Final[tuple[tuple[str, Callable[[_Parts], Any]], ...]] = (
    ("host", _host),
    ("cluster", _cluster),
    ("operator", _operator),
    ("smoke", _smoke),
    ("compute", _compute),
    ("queues", lambda p: queues_section(p.facts)),
    ("mig", _mig),
    (
        "topology",
        lambda p: {**p.facts.fact(o.HOST_TOPOLOGY, group="host"), "shownNotUsed": hardware.TOPOLOGY_NOTE},
    ),
    ("nodeRuntime", lambda p: p.facts.fact(o.NODE_RUNTIME, group="host")),
    ("dcgm", lambda p: _dcgm_section(p.facts, p.group("dcgm"))),
    ("nodes", lambda p: _nodes_section(p.clean, p.facts)),
    ("checklist", _checklist),
    ("measuredTflops", lambda p: p.tflops),
    ("measurements", lambda p: p.when),
    ("toolVersions", lambda p: sanitize(dict(p.tool_versions), "toolVersions", p.redacted)),
    ("capabilityBoundary", lambda p: _boundary(p.clean)),
)


def _parts(outputs: LabOutputs, tflops: Mapping[str, Any] | None, tool_versions: Mapping[str, str]) -> _Parts:
    """The outputs without the kubeconfig (dropped before anything reads it), the TFLOPS section
    and the measurements, and the checklist evaluated with the TFLOPS measured here."""
    redacted: list[str] = []
    clean = outputs.without(o.KUBECONFIG)
    if outputs.has(o.KUBECONFIG):
        redacted.append(o.KUBECONFIG)
    facts = _Facts(clean, redacted, {})
    tflops_part = tflops_section(
        clean,
        tflops,
        output_simulated=facts.is_simulated(o.MEASURED_TFLOPS),
        sanitize=lambda value, path: sanitize(value, path, redacted),
    )
    when = timing.measurements(clean, tflops_part)
    facts.groups = when["groups"]
    if "tflops" in when["groups"]:
        tflops_part["freshness"] = when["groups"]["tflops"]["freshness"]
    evaluated = clean
    if tflops_part["status"] == "measured":
        evaluated = clean.with_values(
            measured_tflops={k: v["tflops"] for k, v in tflops_part["results"].items()}
        )
    items = checklist.evaluate(evaluated)
    return _Parts(clean, facts, when, tflops_part, items, tool_versions, redacted)


def build_card(
    outputs: LabOutputs,
    *,
    tflops: Mapping[str, Any] | None = None,
    tool_versions: Mapping[str, str] | None = None,
    now: datetime | None = None,
    cluster_down: str | None = None,
) -> dict[str, Any]:
    """Build the card (schema in :mod:`gpulab.verdict.card`'s docstring) from stack outputs.

    Args:
        outputs: the typed stack outputs (gpulab.core.outputs.LabOutputs.from_json of
            ``pulumi stack output --json``; secrets may print as ``"[secret]"``: the kubeconfig
            is dropped, other secret-looking strings redacted). Its ``time_slicing_replicas``
            (the override given to from_json, else the outputs' ``timeSlicingReplicas``, else 1)
            is the card's and the checklist's.
        tflops: a :mod:`gpulab.tflops` JSON document; without it the card uses
            ``outputs[MEASURED_TFLOPS]`` or says "not measured" and how to measure.
        tool_versions: e.g. ``{"pulumi": "3.272.0", "python": "3.11.9"}``.
        now: generation time (timezone-aware; default: the current UTC time).
        cluster_down: why the lab's cluster did not answer when the card was made (None: it
            answered, or was not asked). Then ``card["down"]`` is ``{"why", "factsFrom"
            (the last run's ``runAt``)}``, every rendering says the facts are the last run's
            and the cluster is down, and the exit code is 1 whatever the checklist says.

    Raises:
        ValueError: ``tflops`` is not a tflops document (no ``results`` object), or ``now``
            is naive.
    """
    if now is None:
        now = datetime.now(UTC)
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    p = _parts(outputs, tflops, tool_versions or {})
    sim_fields = p.clean.simulated_fields
    card: dict[str, Any] = {
        "schema": SCHEMA,
        "generatedAt": now.isoformat(timespec="seconds"),
        "simulated": p.facts.simulated_lab,
        "simulatedFields": sorted(str(x) for x in sim_fields) if isinstance(sim_fields, list) else None,
        **{name: make(p) for name, make in _SECTIONS},
        "redacted": p.redacted,
        # Why the cluster did not answer when the card was made: {"why", "factsFrom"}; None.
        "down": None,
    }
    if cluster_down:
        card["down"] = {"why": cluster_down, "factsFrom": p.clean.run_at}
        card["checklist"]["exitCode"] = max(1, int(card["checklist"]["exitCode"]))
    section = card["mig"]
    if section and mig.summary_part(section) and card["cluster"]["allocatableGpus"]["value"] == 0:
        # Every GPU has MIG: 0 nvidia.com/gpu is right, and must not read as "no GPU".
        card["cluster"]["allocatableGpus"]["note"] = mig.ZERO_GPU_NOTE
    return card
