"""Stack output keys shared by the program, the policy pack, the tests and the baseline card.

Every key the program exports is a constant here, so a rename breaks loudly in every
reader at once instead of silently producing an empty card. Values are plain JSON:
strings, numbers, booleans, lists and dicts (``pulumi stack output --json`` shape).
"""

from __future__ import annotations

from typing import Final

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
#: "powerW", "tempC", "samples"}}, "hostnames": [...], "error": str | None}``; ``None`` where
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
#: "fix", "smokeGpuUuids", "computeGpus", "driverVersion", "simulated"}]``; each check
#: ``pass`` | ``fail`` | ``not-tested`` | ``not-observable-in-simulation``. None: no per-node
#: check ran (a lab that installs the operator: its node is the single-Pod checks').
NODES: Final = "nodes"
#: The one-line summary: ``"3 nodes, 20 GPUs: 19 allocatable; node gpu-b has 7 of 8"``.
NODES_SUMMARY: Final = "nodesSummary"


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
    HOST_GPU_COUNT,
    HOST_GPU_MODELS,
    HOST_GPUS,
    HOST_DRIVER_VERSION,
    HOST_MAX_CUDA,
    HOST_PROBE_SOURCE,
    HOST_TOPOLOGY,
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
    MEASURED_TFLOPS,
    TFLOPS_MEASURED_AT,
    DCGM_METRICS,
    DCGM_MEASURED_AT,
    GPU_STACK,
    NODES,
    NODES_SUMMARY,
)
