"""The stack outputs: every key the program exports, and one typed model of them.

Every key the program exports is a constant here, so a rename breaks loudly in every
reader at once instead of silently producing an empty card. Values are plain JSON:
strings, numbers, booleans, lists and dicts (``pulumi stack output --json`` shape).

:class:`LabOutputs` is the one model of those outputs: the Lab (program/lab.py) writes it
with :meth:`LabOutputs.export` (attribute name -> value, every field set once), and the card,
the checklist and the policy pack read it from JSON with :meth:`LabOutputs.from_json`, which
checks every value's shape and names each bad key in one :class:`OutputsError`. What the
readers derive (time-slicing replicas, the profile named in fixes, whether anything was
deployed, which values were simulated) is derived here, once.

A new output: its key constant below, one field of :class:`LabOutputs` (``_field(KEY, shape,
...)``), its value in program/lab.py's ``_outputs`` (or a component's ``extra_outputs``), and
readers use the attribute.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final, TypedDict

from gpulab.core.names import DEFAULT_PROFILE

# --- lab identity -------------------------------------------------------------------
#: ``"minikube"`` | ``"sim"`` | ``"kind"`` | ``"k3s"`` | ``"existing"``.
CLUSTER_KIND: Final = "clusterKind"
#: Kubernetes version the cluster reports (``/version`` gitVersion), e.g. ``"v1.36.3"``.
KUBERNETES_VERSION: Final = "kubernetesVersion"
#: GPU Operator chart version installed, e.g. ``"v26.7.0"``.
CHART_VERSION: Final = "chartVersion"
#: Where the chart came from: the repository URL or ``"local:<path>"``.
CHART_SOURCE: Final = "chartSource"
#: Operator components switched on: ``{"toolkit": bool, "devicePlugin": bool, ...,
#: "timeSlicingReplicas": int}`` (replicas per GPU, 1: no time-slicing).
OPERATOR_COMPONENTS: Final = "operatorComponents"
#: Who owns the device plugin: ``"operator"`` or ``"minikube-addon"``.
DEVICE_PLUGIN_OWNER: Final = "devicePluginOwner"
#: ``True`` when any fact below was simulated rather than measured (the sim variant).
SIMULATED: Final = "simulated"
#: Output keys whose values are simulated, e.g. ``["hostGpus", "smokeDriverVersion"]``.
SIMULATED_FIELDS: Final = "simulatedFields"
#: Flattened kubeconfig for the lab cluster (a Pulumi secret).
KUBECONFIG: Final = "kubeconfig"
#: Which cluster the stack was built on (gpulab.kube.identity), recorded once it answered:
#: ``{"server": URL, "caSha256": hex|None, "kubeSystemUid": str|None, "createdAt": ISO 8601}``.
CLUSTER_IDENTITY: Final = "clusterIdentity"

#: ``True`` when the lab created the cluster and deletes it whole (``VariantSpec.owns_cluster``);
#: ``False`` on a cluster somebody else runs (destroy removes only what the lab put there and
#: lists the rest in ``leftovers``).
OWNS_CLUSTER: Final = "ownsCluster"
#: ``True`` when this host is the cluster's GPU node, so the cluster's GPUs are the host's
#: (``hostGpus``, and one Pod can hold them all); ``False`` where the GPU count comes from config
#: (``expectedGpus``: an existing cluster's nodes are elsewhere).
HOST_IS_CLUSTER: Final = "hostIsCluster"
#: How a fix runs a command on the cluster's GPU node from this host: the variant's template of
#: ``{cmd}`` (``VariantSpec.node``: ``"minikube -p gpu-lab ssh -- {cmd}"``, ``"{cmd}"`` where this
#: host is the node), which the card's first fixes fill in (gpulab.core.fixes.on_node).
NODE_COMMAND: Final = "nodeCommand"

# --- host (from the host probe) -----------------------------------------------------
#: Number of physical GPUs nvidia-smi lists (MIG instances not counted).
HOST_GPU_COUNT: Final = "hostGpuCount"
#: Distinct GPU model names, e.g. ``["NVIDIA H200"]``.
HOST_GPU_MODELS: Final = "hostGpuModels"
#: Per-GPU facts: ``[{"index": 0, "name": str, "uuid": str|None, "memoryMiB": int|None,
#: "pciBusId": str|None}]``.
HOST_GPUS: Final = "hostGpus"
#: Host driver version string, e.g. ``"580.159.04"``.
HOST_DRIVER_VERSION: Final = "hostDriverVersion"
#: Newest CUDA version the host driver supports (nvidia-smi header), e.g. ``"13.0"``.
HOST_MAX_CUDA: Final = "hostMaxCuda"
#: Where host facts came from: ``"nvidia-smi"`` or ``"capture:<name>"`` (simulated).
HOST_PROBE_SOURCE: Final = "hostProbeSource"
#: How the host's GPUs are linked (gpulab.host.topology_probe.output_json): ``{"source": "nvml" |
#: "nvidia-smi topo -m" | "capture:<name> (nvidia-smi topo -m)" | None, "gpus": [{"index",
#: "uuid", "links": [{"peer", "peerUuid", "kind", "nvlinks", "code"}], "cpuAffinity",
#: "numaNode", "gpuNumaId"}], "note": str | None}``; ``None`` with ``hostProbe: off``.
HOST_TOPOLOGY: Final = "hostTopology"
#: The node below NVML's view (gpulab.host.node_runtime.NodeRuntime.to_json): ``{"root",
#: "simulated", "runtimes": [{"engine", "path", "sha256", "nvidiaRuntimes", "defaultRuntime",
#: "cdi", "error"}], "cdi": [{"path", "kind", "devices", "driverVersion", "error"}], "toolkit",
#: "toolkitAdvisories", "pciGpus": [{"address", "device", "inNvml", "kernel"}], "nvswitches",
#: "fabric", "unread", "findings": [{"id", "status", "observed", "fix"}]}``; ``None`` with
#: ``hostProbe: off``.
NODE_RUNTIME: Final = "nodeRuntime"

# --- cluster readiness gate -----------------------------------------------------------
#: The whole-GPU resource the gate counted (str): ``"nvidia.com/gpu"``, or
#: ``"nvidia.com/gpu.shared"`` under time-slicing's rename (gpulab.config.time_slicing).
GPU_RESOURCE_NAME: Final = "gpuResource"
#: Node allocatable ``nvidia.com/gpu`` (:data:`GPU_RESOURCE_NAME`) summed over GPU nodes;
#: ``None`` when the key is absent.
ALLOCATABLE_GPUS: Final = "allocatableGpus"
#: Node capacity of the same resource summed over GPU nodes; ``None`` when the key is absent.
CAPACITY_GPUS: Final = "capacityGpus"
#: ClusterPolicy ``status.state`` seen by the gate, e.g. ``"ready"``.
CLUSTER_POLICY_STATE: Final = "clusterPolicyState"
#: Device-plugin pods seen by the gate: ``[{"name", "phase", "ready": bool, "restarts": int}]``.
DEVICE_PLUGIN_PODS: Final = "devicePluginPods"

# --- MIG (gpulab.config.mig) -----------------------------------------------------------------
#: ``migStrategy``: ``"none"``, ``"single"`` or ``"mixed"`` (the operator's ``mig.strategy``).
MIG_STRATEGY: Final = "migStrategy"
#: Node allocatable ``nvidia.com/mig-*`` summed over nodes, as the gate read it:
#: ``{"nvidia.com/mig-1g.18gb": 7}``; ``{}`` when no node has one (no MIG, or not ``mixed``).
MIG_RESOURCES: Final = "migResources"
#: What MIG makes the nodes advertise, as the gate required it (``expectedMigDevices``, else
#: the host's ``nvidia-smi -L``): ``mixed`` ``{"nvidia.com/mig-1g.18gb": 7}``, ``single``
#: ``{"nvidia.com/gpu": 7}``; ``None`` with ``migStrategy`` none, or when unknown.
EXPECTED_MIG_RESOURCES: Final = "expectedMigResources"
#: The resource the smoke Pod requested, ``"nvidia.com/gpu"`` or ``"nvidia.com/mig-1g.18gb"``.
SMOKE_RESOURCE: Final = "smokeResource"

# --- smoke test -----------------------------------------------------------------------
#: Final phase of the smoke Pod, e.g. ``"Succeeded"``.
SMOKE_PHASE: Final = "smokePhase"
#: Driver version parsed from the smoke Pod's nvidia-smi log.
SMOKE_DRIVER_VERSION: Final = "smokeDriverVersion"
#: CUDA version parsed from the smoke Pod's nvidia-smi log (``None`` on very old drivers).
SMOKE_CUDA_VERSION: Final = "smokeCudaVersion"
#: Event reasons seen on the smoke Pod, e.g. ``["Scheduled", "Pulled"]``.
SMOKE_EVENTS: Final = "smokeEvents"
#: Image the smoke Pod ran.
SMOKE_IMAGE: Final = "smokeImage"
#: Node the smoke Pod was scheduled to.
SMOKE_NODE: Final = "smokeNode"
#: How many of ``smokeResource`` the smoke Pod requested (``smokeGpus``, ``all`` resolved:
#: gpulab.config.gpus.smoke_gpu_count), e.g. ``2``.
SMOKE_GPUS: Final = "smokeGpus"
#: The GPU UUIDs the smoke Pod saw (its log's ``nvidia-smi -L`` lines, gpulab.kube.smoke_gpus), e.g.
#: ``["GPU-00000000-0000-4000-8000-000000000000"]``; ``None`` when the log lists none (a Pod of
#: an earlier version, or a simulated log without a listing).
SMOKE_GPU_UUIDS: Final = "smokeGpuUuids"

# --- compute check (a CUDA kernel in a Pod: components/compute.py) ----------------------
#: Final phase of the compute Pod (``"Succeeded"``), ``None`` with ``computeCheck`` off.
COMPUTE_PHASE: Final = "computePhase"
#: ``"passed"`` (phase Succeeded and the vector-add log says ``Test PASSED``), ``"failed"``,
#: or ``"not-tested"`` (``computeCheck`` off: no compute Pod ran).
COMPUTE_RESULT: Final = "computeResult"
#: How many GPUs the compute check covered: the compute Pod's vectorAdd containers
#: (``vectoradd-0`` ...; one of ``smokeResource`` each, as many as ``smokeGpus``) whose log says
#: ``Test PASSED``, e.g. ``2``; ``None`` with ``computeCheck`` off (or a lab deployed before
#: the per-GPU compute check: one container).
COMPUTE_GPUS: Final = "computeGpus"
#: What each vectorAdd container listed with ``nvidia-smi -L`` before it ran:
#: ``{"vectoradd-0": {"gpus": ["GPU-..."], "mig": []}}`` (gpulab.kube.gpu_isolation); the check
#: passed only when each listed exactly what it was given. ``None`` with ``computeCheck`` off,
#: or a lab deployed before the check recorded it.
COMPUTE_GPU_UUIDS: Final = "computeGpuUuids"
#: Image the compute Pod ran (``computeImage``), ``None`` with ``computeCheck`` off.
COMPUTE_IMAGE: Final = "computeImage"

# --- operator settings --------------------------------------------------------------
#: Operand images pinned in config: ``{"devicePlugin": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
#: "toolkit": None, "dcgmExporter": None, "validator": None}``; ``None`` = the chart's default
#: for ``chartVersion`` (gpulab.config.operand_images).
OPERAND_IMAGES: Final = "operandImages"

# --- when each fact was measured (UTC ISO 8601, ``"2026-12-01T09:05:46+00:00"``) -----------
#: When the newest ``pulumi up`` ran the program: the host probe (``host*``) read the host then.
#: Facts measured before it come from an earlier run (the card flags them).
RUN_AT: Final = "runAt"
#: When the readiness gate read ``allocatableGpus``, ``capacityGpus``, ``clusterPolicyState``,
#: ``devicePluginPods`` and ``kubernetesVersion``.
GATE_MEASURED_AT: Final = "gateMeasuredAt"
#: When the smoke check read the smoke Pod's phase, log and events (``smoke*``).
SMOKE_MEASURED_AT: Final = "smokeMeasuredAt"
#: When the compute check read the compute Pod's phase and log (``compute*``); ``None`` with
#: ``computeCheck`` off.
COMPUTE_MEASURED_AT: Final = "computeMeasuredAt"
#: With ``benchmarkPod``: when the benchmark Pod measured ``measuredTflops``.
TFLOPS_MEASURED_AT: Final = "tflopsMeasuredAt"

# --- existing cluster -----------------------------------------------------------------
#: existing variant: what ``pulumi destroy`` leaves behind, e.g. ``["customresourcedefinition/
#: clusterpolicies.nvidia.com"]`` (empty when ``removeCrds`` is on).
LEFTOVERS: Final = "leftovers"
#: existing variant: the nodes' ``nvidia.com/`` labels before the chart went in, ``{node: {key:
#: value}}``; a label after destroy that is not here was the operator's (variants.existing.leftovers).
GPU_LABELS_BEFORE: Final = "gpuLabelsBefore"
#: existing variant: ``adoptExisting``, the objects of someone else's the lab uses as they are
#: (``["Namespace/gpu-operator"]``; gpulab.config.adopt): patched, never created or deleted.
ADOPTED_OBJECTS: Final = "adoptedObjects"
#: existing variant: the UIDs of what the lab did not create where it works, taken before the
#: lab (the adopted namespaces and what is in them), ``{"Kind/ns/name": uid}``; after destroy
#: each must still be there with its UID (variants.existing.leftovers.untouched).
FOREIGN_OBJECTS: Final = "foreignObjects"

# --- measurement ----------------------------------------------------------------------
#: Measured dense matmul throughput per dtype (gpulab.tflops.report.measured_tflops):
#: ``{"bf16": {"tflops": 667.9, "burst": {"tflops", "smClockMHz", "powerW", ...},
#: "sustained": {...}, "reference": {...}}, ...}`` in TFLOP/s, MHz and W; ``tflops`` is the
#: headline (the sustained rate); ``reference`` (the plain loop) on its dtype only; readers also
#: accept the older ``{"bf16": float}``. ``None`` when not measured.
MEASURED_TFLOPS: Final = "measuredTflops"

# --- DCGM exporter metrics (components/dcgm.py, gpulab.kube.dcgm_metrics) ----------------------------
#: What the DCGM exporter reported per GPU while the compute check ran (gpulab.kube.dcgm_metrics.summarize):
#: ``{"endpoint", "scrapes", "seconds", "statistic": "max", "gpus": {uuid: {"gpu",
#: "modelName", "pciBusId", "hostname", "driverVersion", "utilPercent", "fbUsedMiB",
#: "powerW", "tempC", "samples", "migInstances"[, "notComparable": {reading: why}]}},
#: "hostnames": [...], "hostnamesNotNodes": [...], "error": str | None}`` (``notComparable`` on
#: a MIG-enabled GPU: its ``utilPercent`` is None there, not 0; ``hostnamesNotNodes``: host
#: labels naming the exporter's Pod, not a node); ``None`` where
#: nothing was scraped (the simulated lab, ``dcgmExporter`` off).
DCGM_METRICS: Final = "dcgmMetrics"
#: When the scrape ended (UTC ISO 8601); ``None`` where nothing was scraped.
DCGM_MEASURED_AT: Final = "dcgmMeasuredAt"

# --- every GPU node (gpulab.kube.fleet; a found GPU stack) ---------------------------------
#: How the GPU stack got there: ``{"mode": "install"|"found", "namespace": the lab's own
#: (labNamespace), "devicePlugin": ["ns/name"] found by labels, "clusterPolicyState":
#: str|None}``; ``mode`` ``found``: no Helm release, nothing of the stack installed or deleted.
GPU_STACK: Final = "gpuStack"
#: One row per GPU node: ``[{"node", "pool", "product", "expected", "expectedSource",
#: "allocatable", "capacity", "gate", "smoke", "compute", "dcgm", "status", "firstFailure",
#: "fix", "smokeGpuUuids", "computeGpus", "driverVersion" (the smoke Pod's), "labelDriverVersion"
#: (GFD's), "simulated"}]``; each check
#: ``pass`` | ``fail`` | ``not-tested`` | ``not-observable-in-simulation``. None: no per-node
#: check ran (a lab that installs the operator: its node is the single-Pod checks').
NODES: Final = "nodes"
#: The one-line summary: ``"3 nodes, 20 GPUs: 19 allocatable; node gpu-b has 7 of 8"``.
NODES_SUMMARY: Final = "nodesSummary"

# --- how Pods get GPUs (gpuStack dra: gpulab.kube.dra) ------------------------------------
#: Which allocation path the smoke Pod proved: ``"dra"`` (a ResourceClaim of NVIDIA's DRA
#: driver's DeviceClass) or ``"device-plugin"`` (the counted extended resource).
ALLOCATION_PATH: Final = "allocationPath"
#: DRA's evidence, None on the device-plugin path: ``{"deviceClass", "driver", "slices": [{"node",
#: "pool", "devices": [{"name", "uuid", "productName"}], "simulated"}], "claim": {"claim",
#: "podClaim", "devices": [{"request", "driver", "pool", "device", "uuid"}], "reservedFor",
#: "reservedForPod", "uuidsMatch"}}``.
DRA: Final = "dra"

# --- queues and quota (queues: true: gpulab.kube.queues) ----------------------------------
#: The queue proof's facts, None without the queue layer: ``{"measuredAt", "namespace",
#: "localQueue", "clusterQueue", "resource", "quota", "measuredAllocatable",
#: "quotaMatchesAllocatable", "queueingStrategy", "jobs": [{"job", "role", "gpus", "workload",
#: "createdAt", "admittedAt", "finishedAt", "waitedSeconds", "pending": {"reason", "message",
#: "while"} | None}], "gang": {"job", "pods", "perPod", "total", "admitted", "podsCreated",
#: "suspended", "reason", "message", "observedSeconds"}, "unqueuedPod": {"pod", "queueLabel",
#: "workload", "admissionGate", "phase"}, "chartVersion", "chartSource", "controller",
#: "podsSimulated"}``.
QUEUES: Final = "queues"


ALL_KEYS: Final = (
    CLUSTER_KIND,
    KUBERNETES_VERSION,
    CHART_VERSION,
    CHART_SOURCE,
    OPERATOR_COMPONENTS,
    DEVICE_PLUGIN_OWNER,
    SIMULATED,
    SIMULATED_FIELDS,
    KUBECONFIG,
    CLUSTER_IDENTITY,
    OWNS_CLUSTER,
    HOST_IS_CLUSTER,
    NODE_COMMAND,
    HOST_GPU_COUNT,
    HOST_GPU_MODELS,
    HOST_GPUS,
    HOST_DRIVER_VERSION,
    HOST_MAX_CUDA,
    HOST_PROBE_SOURCE,
    HOST_TOPOLOGY,
    NODE_RUNTIME,
    GPU_RESOURCE_NAME,
    ALLOCATABLE_GPUS,
    CAPACITY_GPUS,
    CLUSTER_POLICY_STATE,
    DEVICE_PLUGIN_PODS,
    MIG_STRATEGY,
    MIG_RESOURCES,
    EXPECTED_MIG_RESOURCES,
    SMOKE_RESOURCE,
    SMOKE_PHASE,
    SMOKE_DRIVER_VERSION,
    SMOKE_CUDA_VERSION,
    SMOKE_EVENTS,
    SMOKE_IMAGE,
    SMOKE_NODE,
    SMOKE_GPUS,
    SMOKE_GPU_UUIDS,
    COMPUTE_PHASE,
    COMPUTE_RESULT,
    COMPUTE_GPUS,
    COMPUTE_GPU_UUIDS,
    COMPUTE_IMAGE,
    OPERAND_IMAGES,
    RUN_AT,
    GATE_MEASURED_AT,
    SMOKE_MEASURED_AT,
    COMPUTE_MEASURED_AT,
    LEFTOVERS,
    GPU_LABELS_BEFORE,
    ADOPTED_OBJECTS,
    FOREIGN_OBJECTS,
    MEASURED_TFLOPS,
    TFLOPS_MEASURED_AT,
    DCGM_METRICS,
    DCGM_MEASURED_AT,
    GPU_STACK,
    NODES,
    NODES_SUMMARY,
    ALLOCATION_PATH,
    DRA,
    QUEUES,
)


# --- the typed model ---------------------------------------------------------------------


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
POLICY_SENTINELS: Final = frozenset(
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


def is_unknown_value(value: Any) -> bool:
    """True when ``value`` is :data:`UNKNOWN` or a Pulumi policy SDK unknown sentinel string."""
    return value is UNKNOWN or (isinstance(value, str) and value in POLICY_SENTINELS)


class OutputsError(ValueError):
    """Stack outputs that do not have the lab's shape.

    ``problems``: one line per bad key, ``"<key>: expected <shape>, got <value> (<type>)"``;
    the message lists them all and the first fix.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"stack outputs do not have the lab's shape ({len(self.problems)} key(s)):\n{lines}\n"
            "  first fix: make card (it saves `pulumi stack output --json` to .state/outputs-<stack>.json "
            "from the stack) after make lab with this version of gpu-lab"
        )


class _Bad(Exception):
    """A value that does not fit its shape; the argument says what was expected."""


def shown_value(value: Any) -> str:
    """``value`` (parsed JSON) for an error line: its repr, cut at 60 characters, and its type,
    e.g. ``'12' (str)``."""
    text = repr(value)
    return (text if len(text) <= 60 else text[:57] + "...") + f" ({type(value).__name__})"


#: A shape: takes a JSON value (never None: None is always allowed), returns it normalized
#: (whole floats as int: the engine hands numbers to policies as floats), raises :class:`_Bad`.
Shape = Callable[[Any], Any]


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad("a string")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad("true or false")
    return value


def _int(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad("an integer")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _Bad("an object")
    return {str(k): v for k, v in value.items()}


def _list_of(item: Shape, what: str) -> Shape:
    def shape(value: Any) -> list[Any]:
        if not isinstance(value, (list, tuple)):
            raise _Bad(f"a list of {what}")
        try:
            return [item(v) for v in value]
        except _Bad:
            raise _Bad(f"a list of {what}") from None

    return shape


def _object_of(item: Shape, what: str) -> Shape:
    def shape(value: Any) -> dict[str, Any]:
        obj = _object(value)
        out: dict[str, Any] = {}
        for k, v in obj.items():
            try:
                out[k] = None if v is None else item(v)
            except _Bad:
                raise _Bad(f"an object of {what} (its {k!r} is {shown_value(v)})") from None
        return out

    return shape


def _setting(value: Any) -> bool | int | str:
    """An operator setting: a switch, a count or a name (``deviceListStrategy``)."""
    return value if isinstance(value, (bool, str)) else _int(value)


_STRS: Final = _list_of(_str, "strings")
_OBJECTS: Final = _list_of(_object, "objects")
_COUNTS: Final = _object_of(_int, "integers")


class HostGpu(TypedDict, total=False):
    """One entry of ``hostGpus``."""

    index: int
    name: str
    uuid: str | None
    memoryMiB: int | None
    pciBusId: str | None


class NodeRow(TypedDict, total=False):
    """One row of ``nodes`` (gpulab.kube.fleet.run_fleet): a GPU node and its checks."""

    node: str
    pool: str | None
    product: str | None
    expected: int | None
    expectedSource: str
    allocatable: int | None
    capacity: int | None
    gate: str
    smoke: str
    compute: str
    dcgm: str
    status: str
    firstFailure: str | None
    fix: str | None
    smokeGpuUuids: list[str] | None
    computeGpus: int | None
    driverVersion: str | None
    labelDriverVersion: str | None
    notTested: str | None
    simulated: bool


class DevicePluginPod(TypedDict, total=False):
    """One entry of ``devicePluginPods`` (``simulated``: the sim lab's operand)."""

    name: str
    phase: str
    ready: bool
    restarts: int
    simulated: bool


def _field(key: str, shape: Shape, *, some: bool = False) -> Any:
    """One output: its JSON ``key``, its ``shape``; ``some``: only some labs export it (a
    variant's ``extra_outputs``, the benchmark's), so the writer need not set it."""
    return field(default=None, metadata={"key": key, "shape": shape, "some": some})


@dataclass(frozen=True)
class LabOutputs:
    """The stack outputs, typed: one attribute per key of this module (docs at the key).

    Every attribute is its JSON value (None when null, unknown or absent: :meth:`has`,
    :meth:`is_unknown` and :meth:`unknown` tell which). ``absent``: keys the JSON did not
    have; ``unknown_keys``: keys whose value is not known yet (a preview). The reading
    context, never exported: ``profile`` (the minikube profile named in fixes),
    ``replicas_override`` (time-slicing replicas a reader was told, e.g. the card's
    ``--time-slicing-replicas`` or the policy pack's config) and ``leftover_census`` (after
    destroy of an existing cluster: variants.existing.leftovers.census).

    Build it with :meth:`from_json` (readers) or :meth:`export` (the writer: the Lab).
    """

    cluster_kind: str | None = _field(CLUSTER_KIND, _str)
    kubernetes_version: str | None = _field(KUBERNETES_VERSION, _str)
    chart_version: str | None = _field(CHART_VERSION, _str)
    chart_source: str | None = _field(CHART_SOURCE, _str)
    operator_components: dict[str, bool | int | str | None] | None = _field(
        OPERATOR_COMPONENTS, _object_of(_setting, "booleans, integers and strings")
    )
    device_plugin_owner: str | None = _field(DEVICE_PLUGIN_OWNER, _str)
    simulated_flag: bool | None = _field(SIMULATED, _bool)
    simulated_fields: list[str] | None = _field(SIMULATED_FIELDS, _STRS)
    kubeconfig: str | None = _field(KUBECONFIG, _str)
    cluster_identity: dict[str, Any] | None = _field(CLUSTER_IDENTITY, _object)
    owns_cluster_flag: bool | None = _field(OWNS_CLUSTER, _bool)
    host_is_cluster_flag: bool | None = _field(HOST_IS_CLUSTER, _bool)
    node_command: str | None = _field(NODE_COMMAND, _str)
    host_gpu_count: int | None = _field(HOST_GPU_COUNT, _int)
    host_gpu_models: list[str] | None = _field(HOST_GPU_MODELS, _STRS)
    host_gpus: list[HostGpu] | None = _field(HOST_GPUS, _OBJECTS)
    host_driver_version: str | None = _field(HOST_DRIVER_VERSION, _str)
    host_max_cuda: str | None = _field(HOST_MAX_CUDA, _str)
    host_probe_source: str | None = _field(HOST_PROBE_SOURCE, _str)
    host_topology: dict[str, Any] | None = _field(HOST_TOPOLOGY, _object)
    node_runtime: dict[str, Any] | None = _field(NODE_RUNTIME, _object)
    gpu_resource: str | None = _field(GPU_RESOURCE_NAME, _str)
    allocatable_gpus: int | None = _field(ALLOCATABLE_GPUS, _int)
    capacity_gpus: int | None = _field(CAPACITY_GPUS, _int)
    cluster_policy_state: str | None = _field(CLUSTER_POLICY_STATE, _str)
    device_plugin_pods: list[DevicePluginPod] | None = _field(DEVICE_PLUGIN_PODS, _OBJECTS)
    mig_strategy: str | None = _field(MIG_STRATEGY, _str)
    mig_resources: dict[str, int] | None = _field(MIG_RESOURCES, _COUNTS)
    expected_mig_resources: dict[str, int] | None = _field(EXPECTED_MIG_RESOURCES, _COUNTS)
    smoke_resource: str | None = _field(SMOKE_RESOURCE, _str)
    smoke_phase: str | None = _field(SMOKE_PHASE, _str)
    smoke_driver_version: str | None = _field(SMOKE_DRIVER_VERSION, _str)
    smoke_cuda_version: str | None = _field(SMOKE_CUDA_VERSION, _str)
    smoke_events: list[str] | None = _field(SMOKE_EVENTS, _STRS)
    smoke_image: str | None = _field(SMOKE_IMAGE, _str)
    smoke_node: str | None = _field(SMOKE_NODE, _str)
    smoke_gpus: int | None = _field(SMOKE_GPUS, _int)
    smoke_gpu_uuids: list[str] | None = _field(SMOKE_GPU_UUIDS, _STRS)
    compute_phase: str | None = _field(COMPUTE_PHASE, _str)
    compute_result: str | None = _field(COMPUTE_RESULT, _str)
    compute_gpus: int | None = _field(COMPUTE_GPUS, _int)
    compute_gpu_uuids: dict[str, Any] | None = _field(COMPUTE_GPU_UUIDS, _object)
    compute_image: str | None = _field(COMPUTE_IMAGE, _str)
    operand_images: dict[str, Any] | None = _field(OPERAND_IMAGES, _object)
    run_at: str | None = _field(RUN_AT, _str)
    gate_measured_at: str | None = _field(GATE_MEASURED_AT, _str)
    smoke_measured_at: str | None = _field(SMOKE_MEASURED_AT, _str)
    compute_measured_at: str | None = _field(COMPUTE_MEASURED_AT, _str)
    leftovers: list[str] | None = _field(LEFTOVERS, _STRS, some=True)
    gpu_labels_before: dict[str, Any] | None = _field(GPU_LABELS_BEFORE, _object, some=True)
    adopted_objects: list[str] | None = _field(ADOPTED_OBJECTS, _STRS, some=True)
    foreign_objects: dict[str, Any] | None = _field(FOREIGN_OBJECTS, _object, some=True)
    measured_tflops: dict[str, Any] | None = _field(MEASURED_TFLOPS, _object, some=True)
    tflops_measured_at: str | None = _field(TFLOPS_MEASURED_AT, _str, some=True)
    dcgm_metrics: dict[str, Any] | None = _field(DCGM_METRICS, _object)
    dcgm_measured_at: str | None = _field(DCGM_MEASURED_AT, _str)
    gpu_stack: dict[str, Any] | None = _field(GPU_STACK, _object)
    nodes: list[NodeRow] | None = _field(NODES, _OBJECTS)
    nodes_summary: str | None = _field(NODES_SUMMARY, _str)
    allocation_path: str | None = _field(ALLOCATION_PATH, _str)
    dra: dict[str, Any] | None = _field(DRA, _object)
    queues: dict[str, Any] | None = _field(QUEUES, _object)

    # --- the reading context (not exported) ---
    absent: frozenset[str] = frozenset()
    unknown_keys: frozenset[str] = frozenset()
    profile: str = DEFAULT_PROFILE
    replicas_override: int | None = None
    leftover_census: Mapping[str, Any] | None = None

    # --- readers -------------------------------------------------------------------------

    @classmethod
    def from_json(
        cls,
        raw: Any,
        *,
        profile: str | None = None,
        time_slicing_replicas: int | None = None,
        leftover_census: Mapping[str, Any] | None = None,
    ) -> LabOutputs:
        """The model of ``pulumi stack output --json`` (a dict; keys this version does not
        know are ignored, missing keys are ``absent``, :data:`UNKNOWN` or a policy sentinel
        is ``unknown``).

        ``profile``: the minikube profile fixes name (default gpulab.core.names.DEFAULT_PROFILE);
        ``time_slicing_replicas``: replicas per GPU to use instead of the outputs' (>= 1);
        ``leftover_census``: what an existing cluster holds after destroy.

        Raises:
            OutputsError: ``raw`` is not an object, or any value has the wrong shape (every
                bad key named, e.g. ``hostGpuCount: expected an integer, got 'two' (str)``).
            ValueError: ``time_slicing_replicas`` is not an integer >= 1.
        """
        if not isinstance(raw, Mapping):
            raise OutputsError([f"<document>: expected an object of output keys, got {shown_value(raw)}"])
        values: dict[str, Any] = {}
        absent: set[str] = set()
        unknown: set[str] = set()
        problems: list[str] = []
        for f in _OUTPUT_FIELDS:
            key, shape = f.metadata["key"], f.metadata["shape"]
            if key not in raw:
                absent.add(key)
                continue
            value = raw[key]
            if is_unknown_value(value):
                unknown.add(key)
                continue
            if value is None:
                continue
            try:
                values[f.name] = shape(value)
            except _Bad as bad:
                problems.append(f"{key}: expected {bad.args[0]}, got {shown_value(value)}")
        if time_slicing_replicas is not None and (
            isinstance(time_slicing_replicas, bool)
            or not isinstance(time_slicing_replicas, int)
            or time_slicing_replicas < 1
        ):
            raise ValueError(f"time_slicing_replicas must be an integer >= 1, got {time_slicing_replicas!r}")
        if problems:
            raise OutputsError(problems)
        return cls(
            **values,
            absent=frozenset(absent),
            unknown_keys=frozenset(unknown),
            profile=profile or DEFAULT_PROFILE,
            replicas_override=time_slicing_replicas,
            leftover_census=leftover_census,
        )

    def to_json(self) -> dict[str, Any]:
        """The outputs as ``pulumi stack output --json`` shows them: every key this model has
        a known value for (None included); absent and unknown keys left out."""
        return {
            f.metadata["key"]: getattr(self, f.name)
            for f in _OUTPUT_FIELDS
            if f.metadata["key"] not in self.absent and f.metadata["key"] not in self.unknown_keys
        }

    def with_values(self, **values: Any) -> LabOutputs:
        """A copy with these attributes set (known from now on: no longer absent or unknown),
        e.g. ``with_values(host_gpu_count=2)``; a value of the wrong shape raises
        :class:`OutputsError` naming the key."""
        keys = {_ATTR_KEY[name] for name in values}
        problems = []
        for name, value in values.items():
            if value is not None:
                try:
                    values[name] = _FIELD_BY_ATTR[name].metadata["shape"](value)
                except _Bad as bad:
                    problems.append(f"{_ATTR_KEY[name]}: expected {bad.args[0]}, got {shown_value(value)}")
        if problems:
            raise OutputsError(problems)
        return replace(self, **values, absent=self.absent - keys, unknown_keys=self.unknown_keys - keys)

    def without(self, *keys: str) -> LabOutputs:
        """A copy with output ``keys`` absent (their values None), e.g. ``without(KUBECONFIG)``
        before a reader that must never see a secret. Raises KeyError for an unknown key."""
        changes: dict[str, Any] = {_KEY_ATTR[k]: None for k in keys}
        changes.update(absent=self.absent | set(keys), unknown_keys=self.unknown_keys - set(keys))
        return replace(self, **changes)

    def get(self, key: str) -> Any:
        """The value of output ``key`` (a constant of this module); None when null, unknown or
        absent. For tables of facts keyed by output name (the card); code reads attributes.

        Raises:
            KeyError: ``key`` is not an output of this module.
        """
        return getattr(self, _KEY_ATTR[key])

    def has(self, key: str) -> bool:
        """True when the JSON had ``key`` (known or not): False for a lab of an older version."""
        return key not in self.absent

    def is_unknown(self, key: str) -> bool:
        """True when ``key`` is absent or its value is not known yet (None is not unknown)."""
        return key in self.absent or key in self.unknown_keys

    @property
    def deployed(self) -> bool:
        """True when any fact exists only because something was deployed (the host probe or
        the readiness gate ran): one of :data:`DEPLOYMENT_EVIDENCE` is known and not None."""
        return any(not self.is_unknown(k) and self.get(k) is not None for k in DEPLOYMENT_EVIDENCE)

    def unknown(self, key: str) -> bool:
        """The checklist's "not known yet": :meth:`is_unknown`, or None before anything was
        deployed (after deployment a None is a real absence, e.g. no node has the resource)."""
        if self.is_unknown(key):
            return True
        return self.get(key) is None and not self.deployed

    @property
    def simulated_lab(self) -> bool:
        """True when ``simulated`` is true (the sim variant)."""
        return self.simulated_flag is True

    def is_simulated(self, key: str) -> bool:
        """True when ``key`` is listed in ``simulatedFields``; without that list, whether the
        lab is simulated (label everything, never under-report)."""
        if self.simulated_fields is None:
            return self.simulated_lab
        return key in self.simulated_fields

    def simulated(self, keys: Iterable[str]) -> bool:
        """True when any of ``keys`` is simulated (:meth:`is_simulated`)."""
        return (
            any(self.is_simulated(k) for k in keys)
            if self.simulated_fields is not None
            else self.simulated_lab
        )

    @property
    def owns_cluster(self) -> bool:
        """``ownsCluster``; outputs of a lab from before that key: True unless they list
        ``leftovers`` (only a lab on a cluster it does not own lists them)."""
        if self.owns_cluster_flag is not None:
            return self.owns_cluster_flag
        return not self.has(LEFTOVERS)

    @property
    def host_is_cluster(self) -> bool:
        """``hostIsCluster``; outputs of a lab from before that key: as :attr:`owns_cluster` (the
        one lab whose host was not the cluster was the one on a cluster it did not own)."""
        if self.host_is_cluster_flag is not None:
            return self.host_is_cluster_flag
        return self.owns_cluster

    @property
    def time_slicing_replicas(self) -> int:
        """Replicas per GPU (allocatable = GPUs x replicas), derived once for the card, the
        checklist and the policy pack: ``replicas_override``, else ``operatorComponents``'
        ``timeSlicingReplicas`` (an integer >= 1), else 1."""
        if self.replicas_override is not None:
            return self.replicas_override
        value = (self.operator_components or {}).get("timeSlicingReplicas")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        return 1

    def component_off(self, name: str) -> bool:
        """True when ``operatorComponents`` says operator component ``name`` (``"dcgmExporter"``)
        is switched off; False when on or not recorded."""
        return (self.operator_components or {}).get(name) is False

    # --- the writer ----------------------------------------------------------------------

    @staticmethod
    def export(values: Mapping[str, object], extra: Mapping[str, object] | None = None) -> dict[str, object]:
        """What the Lab exports: ``values`` by attribute name (``{"cluster_kind": cfg.cluster,
        ...}``, plain values or ``pulumi.Output``), plus ``extra`` by output key (a variant's
        ``extra_outputs``), as ``{output key: value}``.

        Raises:
            TypeError: a name or key this model does not have, or a field (other than those
                only some labs export: ``leftovers``, ``gpuLabelsBefore``, ``adoptedObjects``,
                ``foreignObjects``, ``measuredTflops``,
                ``tflopsMeasuredAt``) not set; every one named.
        """
        extra = dict(extra or {})
        problems = [f"unknown field {n!r}" for n in values if n not in _ATTR_KEY]
        problems += [f"unknown output key {k!r}" for k in extra if k not in _KEY_ATTR]
        given = {_ATTR_KEY[n] for n in values if n in _ATTR_KEY} | set(extra)
        problems += [
            f"field {f.name!r} ({f.metadata['key']}) not set"
            for f in _OUTPUT_FIELDS
            if not f.metadata["some"] and f.metadata["key"] not in given
        ]
        twice = [n for n in values if n in _ATTR_KEY and _ATTR_KEY[n] in extra]
        problems += [f"field {n!r} set twice" for n in twice]
        if problems:
            raise TypeError("LabOutputs.export: " + "; ".join(problems))
        written = {_ATTR_KEY[n]: v for n, v in values.items()}
        written.update(extra)
        return {k: written[k] for k in ALL_KEYS if k in written}


#: The model's output fields, in declaration order.
_OUTPUT_FIELDS: Final = tuple(f for f in fields(LabOutputs) if "key" in f.metadata)
_FIELD_BY_ATTR: Final = {f.name: f for f in _OUTPUT_FIELDS}
_ATTR_KEY: Final[dict[str, str]] = {f.name: f.metadata["key"] for f in _OUTPUT_FIELDS}
_KEY_ATTR: Final[dict[str, str]] = {key: name for name, key in _ATTR_KEY.items()}

#: Facts that exist only once something was deployed (host probe or readiness gate ran).
DEPLOYMENT_EVIDENCE: Final = (
    HOST_DRIVER_VERSION,
    HOST_GPU_COUNT,
    KUBERNETES_VERSION,
    DEVICE_PLUGIN_PODS,
    CLUSTER_POLICY_STATE,
    SMOKE_PHASE,
)


def attribute(key: str) -> str:
    """The :class:`LabOutputs` attribute of output ``key`` (``"hostGpuCount"`` ->
    ``"host_gpu_count"``). Raises KeyError for a key the model does not have."""
    return _KEY_ATTR[key]
