"""Every GPU node, one row each (``python -m gpulab.kube fleet``): the per-node gate, smoke and compute.

The single-host lab is a fleet of one; a cluster somebody else runs is a fleet of many. For
each GPU node this module

1. decides what it should advertise (:func:`expectation`): GPU Feature Discovery's
   ``nvidia.com/gpu.count`` (times ``nvidia.com/gpu.replicas`` under time-slicing), else the
   count configured for the node's pool (``nodePoolLabel`` / ``nodePoolGpus``), else its own
   capacity (then the row says so: a count taken from the node proves only that the plugin
   registered what it registered);
2. gates it (:func:`gate_node`): Ready, allocatable equal to the expectation, and the device
   plugin's Pod on it Running and Ready where a device-plugin DaemonSet was found by its labels
   (the GPU Operator's ``app=nvidia-device-plugin-daemonset``, or the device plugin chart's
   ``app.kubernetes.io/name=nvidia-device-plugin``);
3. runs a smoke Pod and a compute Pod pinned to it (``nodeSelector kubernetes.io/hostname``:
   the scheduler still checks the node's allocatable), through the single-Pod checks
   :func:`gpulab.kube.smoke.smoke` and :func:`gpulab.kube.compute.compute`, at most
   ``parallelism`` nodes at a time, and compares the UUIDs the Pods saw with what the node
   advertises: the smoke Pod lists exactly its allocatable count of distinct GPUs, each compute
   container one of them, and no UUID is seen on two nodes.

A node that fails never hides the others: every row is kept, with its first failure and its
fix, and nodes that failed the gate are "not tested" for smoke and compute, never "pass". The
DCGM column is "not tested" (no per-node DCGM reading yet), "not observable in simulation" in
the sim lab.

The label names are GFD's, checked in NVIDIA/k8s-device-plugin v0.20.0
(``internal/lm/resource.go``: ``<resource>.count``, ``.product``, ``.replicas``,
``.sharing-strategy``; ``internal/lm/nvml.go``: ``nvidia.com/cuda.driver-version.full``;
``internal/lm/mig-strategy.go``: ``nvidia.com/mig.strategy``); tests/unit/kube/test_fleet.py
cites them.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.core.names import (
    DEVICE_PLUGIN_DS,
    GPU_RESOURCE,
    PROJECT,
    SIMULATED_ANNOTATION,
)
from gpulab.diagnose.live import Context
from gpulab.kube import compute, pod_specs, smoke
from gpulab.kube.client import GateError, is_transient, sanitize
from gpulab.kube.results import FleetResult

Json = Mapping[str, Any]

#: GFD's labels (NVIDIA/k8s-device-plugin v0.20.0 internal/lm/resource.go: ``<resource>.<suffix>``
#: for the full-GPU resource ``nvidia.com/gpu``).
GFD_COUNT: Final = "nvidia.com/gpu.count"
GFD_PRODUCT: Final = "nvidia.com/gpu.product"
GFD_REPLICAS: Final = "nvidia.com/gpu.replicas"
GFD_SHARING: Final = "nvidia.com/gpu.sharing-strategy"
#: internal/lm/mig-strategy.go.
GFD_MIG_STRATEGY: Final = "nvidia.com/mig.strategy"
#: internal/lm/nvml.go (the driver the node's GPUs run).
GFD_DRIVER: Final = "nvidia.com/cuda.driver-version.full"
#: The GPU Operator's node label for a node with an NVIDIA PCI device (NVIDIA/gpu-operator v26.7.0
#: controllers/state_manager.go ``commonGPULabelKey``).
GPU_PRESENT: Final = "nvidia.com/gpu.present"
#: The well-known label the smoke and compute Pods are pinned by.
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
#: Device-plugin DaemonSets the lab recognises by their Pods' labels: the GPU Operator's
#: (its state-device-plugin: ``app: nvidia-device-plugin-daemonset``) and the device plugin's
#: own chart (NVIDIA/k8s-device-plugin v0.20.0 deployments/helm/nvidia-device-plugin,
#: ``app.kubernetes.io/name: nvidia-device-plugin``, the chart's name).
DEVICE_PLUGIN_SELECTORS: Final = (f"app={DEVICE_PLUGIN_DS}", "app.kubernetes.io/name=nvidia-device-plugin")
#: Label on every Pod this module creates (value: the node's short hash), and its prefixes.
CHECK_LABEL: Final = "gpulab.dev/node-check"
SMOKE_PREFIX: Final = "gpu-smoke-"
COMPUTE_PREFIX: Final = "gpu-compute-"

PASS: Final = "pass"
FAIL: Final = "fail"
NOT_TESTED: Final = "not-tested"
NOT_OBSERVABLE: Final = "not-observable-in-simulation"


@dataclass(frozen=True)
class FleetSpec:
    """What the fleet check does.

    Attributes:
        namespace: the lab's namespace (``labNamespace``): its Pods go there, nowhere else.
        smoke_image, compute_image: pinned images; ``compute_image`` None: no compute Pod
            (``computeCheck=false``: "not tested").
        resource: the whole-GPU resource counted and asked for.
        runtime_class: the Pods' ``runtimeClassName`` (None: the node's default).
        parallelism: nodes checked at once (``fleetParallelism``, >= 1).
        timeout: seconds each Pod may take to finish.
        settle: seconds the gate waits for a node to advertise its expectation before it
            judges it (``gpuGraceSeconds``).
        pool_label, pool_gpus: the node pool label key and GPUs per node of each pool
            (``nodePoolLabel``, ``nodePoolGpus``).
        simulated: the nodes are simulated (kwok): the Pods are annotated, DCGM is "not
            observable in simulation".
        profile: named in fixes; node_command: how a fix runs a command on the GPU node (the
            variant's template, gpulab.core.fixes.on_node; None: minikube's).
        installed_in: the namespace of NVIDIA's device plugin chart the lab installed
            (``gpuStack: device-plugin``; None: the stack was found). Then every GPU node must run
            the chart's device-plugin Pod and carry GFD's labels, and the gate waits up to
            ``wait`` seconds for them while the chart's Pods make progress; a Pod of the chart
            stuck (:data:`STUCK_REASONS`) for ``settle`` seconds ends the wait at once.
        wait: seconds the installed chart's Pods may take to come up (image pulls, NFD's first
            pass); 0 with a found stack.
    """

    namespace: str
    smoke_image: str
    compute_image: str | None = None
    resource: str = GPU_RESOURCE
    runtime_class: str | None = None
    parallelism: int = 4
    timeout: float = 300
    settle: float = 10
    pool_label: str = ""
    pool_gpus: Mapping[str, int] = field(default_factory=dict)
    simulated: bool = False
    profile: str = PROJECT
    node_command: str | None = None
    installed_in: str | None = None
    wait: float = 0


#: Container waiting reasons that do not end by themselves (a bad image, a crashing binary, a
#: config the kubelet cannot run): the installed chart's Pod stuck in one for ``settle`` seconds
#: ends the gate's wait.
#: Seconds the node's labels may lag once the chart's Pods are Ready: GPU Feature Discovery
#: publishes a NodeFeature object (``--use-node-feature-api``, default true in NVIDIA/
#: k8s-device-plugin v0.19.0 and v0.20.0 cmd/gpu-feature-discovery/main.go) that NFD's master
#: turns into labels, and NFD's worker writes the PCI label the chart's affinity needs on its
#: first pass, then every ``core.sleepInterval`` (60s by default, node-feature-discovery chart
#: values.yaml ``worker.config``): one such interval.
NFD_PASS_SECONDS: Final = 60.0
STUCK_REASONS: Final = (
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
)


@dataclass(frozen=True)
class Expectation:
    """What one node should advertise: ``count`` of the resource (None: nothing says),
    ``source`` (``"gfd:nvidia.com/gpu.count=8"``, ``"config:nodePoolGpus[pool-a]=8"``,
    ``"capacity"``) and ``replicas`` (GFD's ``nvidia.com/gpu.replicas`` under time-slicing: each
    GPU is advertised that many times, so a Pod's units need not be distinct GPUs; 1 otherwise)."""

    count: int | None
    source: str
    replicas: int = 1

    @property
    def pod_gpus(self) -> int | None:
        """How many units the node's smoke Pod holds: every one advertised, or one under sharing
        (replicas of one GPU are not distinct GPUs, and the plugin may refuse more than one:
        ``failRequestsGreaterThanOne``)."""
        if self.count is None:
            return None
        return 1 if self.replicas > 1 else self.count


def _labels(node: Json) -> Mapping[str, str]:
    return ((node.get("metadata") or {}).get("labels")) or {}


def _name(node: Json) -> str:
    return str((node.get("metadata") or {}).get("name") or "?")


def _quantity(status: Json, key: str, resource: str) -> int | None:
    value = (status.get(key) or {}).get(resource)
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _int_label(labels: Mapping[str, str], key: str) -> int | None:
    value = labels.get(key)
    return int(value) if value is not None and value.strip().isdigit() else None


def expectation(node: Json, spec: FleetSpec) -> Expectation:
    """The node's expected count of ``spec.resource`` (module docstring, step 1).

    GFD's count is of physical GPUs; with ``nvidia.com/gpu.replicas`` > 1 and a sharing
    strategy other than ``none`` the device plugin advertises count x replicas. A node
    whose labels say MIG ``mixed`` advertises MIG resources, not whole GPUs: its expectation
    then comes from capacity, and the row says so.
    """
    labels = _labels(node)
    count = _int_label(labels, GFD_COUNT)
    if count is not None and labels.get(GFD_MIG_STRATEGY) != "mixed":
        replicas = _int_label(labels, GFD_REPLICAS) or 1
        shared = replicas > 1 and labels.get(GFD_SHARING, "none") != "none"
        total = count * replicas if shared else count
        note = f" x {GFD_REPLICAS}={replicas}" if shared else ""
        return Expectation(total, f"gfd:{GFD_COUNT}={count}{note}", replicas if shared else 1)
    pool = labels.get(spec.pool_label) if spec.pool_label else None
    if pool is not None and pool in spec.pool_gpus:
        return Expectation(spec.pool_gpus[pool], f"config:nodePoolGpus[{pool}]={spec.pool_gpus[pool]}")
    capacity = _quantity(node.get("status") or {}, "capacity", spec.resource)
    return Expectation(capacity, "capacity" if capacity is not None else "none")


def is_gpu_node(node: Json, spec: FleetSpec) -> bool:
    """A node the lab checks: labelled by the operator/GFD, in a configured pool, or
    advertising the resource at all (capacity present)."""
    labels = _labels(node)
    if labels.get(GPU_PRESENT) == "true" or GFD_COUNT in labels:
        return True
    if spec.pool_label and labels.get(spec.pool_label) in spec.pool_gpus:
        return True
    return _quantity(node.get("status") or {}, "capacity", spec.resource) is not None


def _ready(node: Json) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


@dataclass(frozen=True)
class NodeGate:
    """One node's gate: ``ok``, ``cause`` and ``fix`` when not, and what it read."""

    ok: bool
    allocatable: int | None
    capacity: int | None
    cause: str = ""
    fix: str = ""


def gate_node(
    node: Json,
    exp: Expectation,
    resource: str,
    plugin_pod: Json | None,
    plugin_found: bool,
    installed_in: str | None = None,
) -> NodeGate:
    """Judge one node (module docstring, step 2). ``plugin_pod``: the device plugin's Pod on
    it (None: none there); ``plugin_found``: a device-plugin DaemonSet was found at all (else
    only allocatable is read, and the row says the plugin was not found); ``installed_in``: the
    namespace of the device plugin chart the lab installed, whose device-plugin Pod and GFD's
    count label every GPU node must have."""
    name = _name(node)
    status = node.get("status") or {}
    alloc = _quantity(status, "allocatable", resource)
    cap = _quantity(status, "capacity", resource)
    describe = f"scripts/kubectl describe node {name}"
    if not _ready(node):
        return NodeGate(False, alloc, cap, f"node {name} is not Ready", f"{describe} (Conditions)")
    if installed_in and plugin_pod is None:
        return NodeGate(
            False,
            alloc,
            cap,
            f"no Pod of the device plugin chart's DaemonSet runs on node {name}",
            f"scripts/kubectl -n {installed_in} get daemonset,pods -o wide; then {describe}: a taint "
            "the chart's Pods do not tolerate, or a node without NFD's feature.node.kubernetes.io/"
            "pci-10de.present or nvidia.com/gpu.present=true label (the chart's node affinity)",
        )
    if installed_in and GFD_COUNT not in _labels(node):
        return NodeGate(
            False,
            alloc,
            cap,
            f"node {name} has no {GFD_COUNT} label: GPU Feature Discovery has not labelled it",
            f"scripts/kubectl -n {installed_in} logs -l app.kubernetes.io/name=gpu-feature-discovery "
            "--all-containers; GFD publishes a NodeFeature object that NFD's master turns into labels: "
            f"scripts/kubectl -n {installed_in} get pods,nodefeatures (is NFD's master running?)",
        )
    if plugin_found and plugin_pod is None:
        return NodeGate(
            False,
            alloc,
            cap,
            f"no device-plugin Pod runs on node {name}",
            f"{describe}: its labels and taints against the device-plugin DaemonSet's nodeSelector",
        )
    if plugin_pod is not None:
        statuses = (plugin_pod.get("status") or {}).get("containerStatuses") or []
        if not statuses or not all(cs.get("ready") for cs in statuses):
            pod = (plugin_pod.get("metadata") or {}).get("name")
            ns = (plugin_pod.get("metadata") or {}).get("namespace")
            stuck = _waiting(plugin_pod)
            return NodeGate(
                False,
                alloc,
                cap,
                f"the device-plugin Pod {ns}/{pod} on node {name} is not Ready"
                + (f" ({stuck})" if stuck else ""),
                f"scripts/kubectl -n {ns} logs {pod}",
            )
    if exp.count is None:
        return NodeGate(
            False, alloc, cap, f"node {name} advertises no {resource}; nothing says how many it has", describe
        )
    if alloc != exp.count:
        have = "no" if alloc is None else str(alloc)
        cause = (
            f"node {name} advertises {have} {resource} allocatable of the {exp.count} expected ({exp.source})"
        )
        unhealthy = cap is not None and alloc is not None and alloc < cap
        fix = (
            f"{describe}; the device plugin marked {cap - alloc} GPU(s) unhealthy (an XID error): "
            "its log on that node, then nvidia-smi -q on the node"
            if unhealthy and cap is not None and alloc is not None
            else f"{describe}; the device plugin's log on that node (did it register every GPU?)"
        )
        return NodeGate(False, alloc, cap, cause, fix)
    return NodeGate(True, alloc, cap)


def pod_name(prefix: str, node: str) -> str:
    """The check Pod's name for ``node``: ``gpu-smoke-<node>``; a name past 63 characters is
    cut and given the node's hash, so two nodes never share a Pod."""
    full = f"{prefix}{node}"
    if len(full) <= 63:
        return full
    return f"{full[:52]}-{_short(node)}"


def _short(node: str) -> str:
    return hashlib.sha256(node.encode()).hexdigest()[:10]


def _pod_body(name: str, node: str, spec: FleetSpec, pod_spec: dict[str, Any]) -> dict[str, Any]:
    """The lab's Pod ``pod_spec`` (gpulab.kube.pod_specs) as a Pod named ``name`` in the lab's
    namespace, pinned to ``node`` by its hostname label."""
    annotations = {"gpulab.dev/simulated-execution": "true"} if spec.simulated else {}
    # Pinned, yet scheduled: the scheduler checks the node's allocatable.
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": spec.namespace,
            "labels": {"app.kubernetes.io/part-of": PROJECT, CHECK_LABEL: _short(node)},
            "annotations": annotations,
        },
        "spec": {**pod_spec, "nodeSelector": {HOSTNAME_LABEL: node}},
    }


def smoke_pod(node: str, spec: FleetSpec, gpus: int) -> dict[str, Any]:
    """The node's smoke Pod: the lab's smoke Pod (gpulab.kube.pod_specs.smoke: ``nvidia-smi
    && nvidia-smi -L``) holding every GPU the node advertises."""
    body = pod_specs.smoke(spec.smoke_image, gpus, spec.runtime_class, spec.resource)
    return _pod_body(pod_name(SMOKE_PREFIX, node), node, spec, body)


def compute_pod(node: str, spec: FleetSpec, gpus: int) -> dict[str, Any]:
    """The node's compute Pod: the lab's compute Pod (gpulab.kube.pod_specs.compute: one
    vectorAdd container per GPU, ``vectoradd-<i>``, one ``resource`` each).

    Raises:
        ValueError: the spec has no compute image (the compute check is off) or ``gpus`` < 1.
    """
    if spec.compute_image is None:
        raise ValueError("the fleet check has no compute image: the compute check is off")
    body = pod_specs.compute(spec.compute_image, gpus, spec.runtime_class, spec.resource)
    return _pod_body(pod_name(COMPUTE_PREFIX, node), node, spec, body)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def _fix_of(text: str, default: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("fix:") or stripped.startswith("first fix:"):
            return stripped.split(":", 1)[1].strip()
    return default


class PodRunner:
    """Creates, replaces and deletes the check Pods through the API (``api``: an ApiClient)."""

    def __init__(self, api: Any) -> None:
        from kubernetes import client

        self.api = api
        self.core = client.CoreV1Api(api)

    def replace(self, body: dict[str, Any], timeout: float = 60) -> None:
        """Create ``body``, deleting a Pod of that name first (a re-run) and waiting until it is gone.

        Raises:
            GateError: the old Pod is still there after ``timeout`` seconds.
        """
        from kubernetes.client.rest import ApiException

        name, ns = body["metadata"]["name"], body["metadata"]["namespace"]
        self.delete(name, ns)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.core.read_namespaced_pod(name, ns)
            except ApiException as exc:
                if exc.status == 404:
                    break
                if not is_transient(exc):
                    raise
            if time.monotonic() > deadline:
                raise GateError(f"Pod {ns}/{name} of an earlier run is still there after {timeout:.0f}s")
            time.sleep(0.5)
        self.core.create_namespaced_pod(ns, body)  # type: ignore[arg-type]  # a dict body is accepted

    def delete(self, name: str, namespace: str) -> None:
        """Delete the Pod now (grace 0); gone already is fine."""
        from kubernetes.client.rest import ApiException

        try:
            self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise


#: ``check(api, node_name, gpus, spec) -> dict``: the smoke and compute part of one row.
NodeCheck = Callable[[Any, str, int, FleetSpec], dict[str, Any]]


def check_node(api: Any, node: str, gpus: int, spec: FleetSpec) -> dict[str, Any]:
    """Smoke and compute on one node (module docstring, step 3): the row's ``smoke``,
    ``compute``, ``smokeGpuUuids``, ``computeGpus``, ``driverVersion`` and, on failure,
    ``firstFailure`` and ``fix``. Never raises for the node's own failures."""
    runner = PodRunner(api)
    ctx = Context(gpus, None, spec.profile, gpu_resource=spec.resource, node_command=spec.node_command)
    row: dict[str, Any] = {"smoke": NOT_TESTED, "compute": NOT_TESTED}
    sname = pod_name(SMOKE_PREFIX, node)
    try:
        runner.replace(smoke_pod(node, spec, gpus))
        facts = smoke.smoke(api, spec.namespace, sname, spec.timeout, ctx)
    except GateError as exc:
        text = str(exc)
        return {
            **row,
            "smoke": FAIL,
            "firstFailure": f"smoke: {_first_line(text)}",
            "fix": _fix_of(text, f"scripts/kubectl -n {spec.namespace} describe pod {sname}"),
        }
    finally:
        runner.delete(sname, spec.namespace)
    uuids = list(facts.smoke_gpu_uuids or [])
    row |= {"driverVersion": facts.smoke_driver_version, "smokeGpuUuids": uuids}
    if len(uuids) != gpus or len(set(uuids)) != len(uuids):
        return {
            **row,
            "smoke": FAIL,
            "firstFailure": f"smoke: the Pod holding {gpus} {spec.resource} on {node} listed "
            f"{len(set(uuids))} distinct GPU(s) (nvidia-smi -L)",
            "fix": f"the node runtime's GPU injection on {node} (DEVICE_LIST_STRATEGY, the toolkit's config)",
        }
    row["smoke"] = PASS
    if spec.compute_image is None:
        return row
    cname = pod_name(COMPUTE_PREFIX, node)
    try:
        runner.replace(compute_pod(node, spec, gpus))
        isolation = compute.Isolation(host=tuple(uuids))
        done = compute.compute(api, spec.namespace, cname, spec.timeout, ctx, isolation)
    except GateError as exc:
        text = str(exc)
        return {
            **row,
            "compute": FAIL,
            "firstFailure": f"compute: {_first_line(text)}",
            "fix": _fix_of(
                text, f"scripts/kubectl -n {spec.namespace} logs {cname} --all-containers --prefix"
            ),
        }
    finally:
        runner.delete(cname, spec.namespace)
    return {**row, "compute": PASS, "computeGpus": done.compute_gpus}


#: GPU Feature Discovery's container in the device plugin chart: its GFD DaemonSet's Pods carry the
#: very labels of the plugin's (templates/daemonset-gfd.yml uses the chart's templateLabels, as
#: daemonset-device-plugin.yml does, at v0.19.0 and v0.20.0), so they are told apart by this.
GFD_CONTAINER: Final = "gpu-feature-discovery-ctr"


def _is_gfd(pod: Json) -> bool:
    """A GPU Feature Discovery Pod of the device plugin chart (not a device plugin's)."""
    return any(c.get("name") == GFD_CONTAINER for c in (pod.get("spec") or {}).get("containers") or [])


def _plugin_pods(api: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """(``namespace/name`` of the device-plugin DaemonSets found, their Pods), any namespace:
    the Pods matching :data:`DEVICE_PLUGIN_SELECTORS` (less the chart's GFD Pods, which share
    its labels) and the DaemonSets that own them."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    pods: list[dict[str, Any]] = []
    for selector in DEVICE_PLUGIN_SELECTORS:
        found = [sanitize(p, api) for p in core.list_pod_for_all_namespaces(label_selector=selector).items]
        pods += [p for p in found if not _is_gfd(p)]
    owners = {
        f"{(p.get('metadata') or {}).get('namespace')}/{o.get('name')}"
        for p in pods
        for o in (p.get("metadata") or {}).get("ownerReferences") or []
        if o.get("kind") == "DaemonSet"
    }
    return sorted(owners), pods


def _cluster_policy_state(api: Any) -> str | None:
    """ClusterPolicy ``cluster-policy``'s ``status.state`` where the operator is installed; None otherwise."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        doc = client.CustomObjectsApi(api).get_cluster_custom_object(
            "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
        )
    except ApiException as exc:
        if exc.status in (403, 404):
            return None
        raise
    return ((doc or {}).get("status") or {}).get("state") if isinstance(doc, dict) else None


def duplicate_uuids(rows: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """UUID -> the nodes whose smoke Pods listed it, for UUIDs seen on two or more nodes."""
    where: dict[str, list[str]] = {}
    for row in rows:
        for uuid in row.get("smokeGpuUuids") or []:
            where.setdefault(uuid, []).append(row["node"])
    return {u: nodes for u, nodes in where.items() if len(nodes) > 1}


def summary(rows: Sequence[Mapping[str, Any]]) -> str:
    """The one-line summary: ``"3 nodes, 20 GPUs: 19 allocatable; node gpu-c has 3 of 4"``
    (``"...; every node passed"`` when all did)."""
    expected = sum(int(r.get("expected") or 0) for r in rows)
    alloc = sum(int(r.get("allocatable") or 0) for r in rows)
    short = [
        f"node {r['node']} has {r.get('allocatable') or 0} of {r.get('expected')}"
        for r in rows
        if r.get("expected") is not None and r.get("allocatable") != r.get("expected")
    ]
    failed = [r["node"] for r in rows if r.get("status") == FAIL]
    untested = [r["node"] for r in rows if r.get("status") == NOT_TESTED]
    head = f"{len(rows)} node{'s' if len(rows) != 1 else ''}, {expected} GPUs: {alloc} allocatable"
    if not rows:
        return "no GPU node found"
    tail = short or ([f"failed: {', '.join(failed)}"] if failed else [])
    if short and len(failed) > len(short):
        tail.append(f"failed: {', '.join(failed)}")
    if untested:
        tail.append(f"not tested (GPUs in use): {', '.join(untested)}")
    tail = tail or ["every node passed"]
    return f"{head}; {'; '.join(tail)}"


def _row_status(row: Mapping[str, Any], compute_on: bool) -> str:
    """``pass`` when every check ran and passed; ``fail`` when one failed; else ``not-tested``
    (a busy node's Pods did not run: proves nothing either way)."""
    wanted = ("gate", "smoke", "compute") if compute_on else ("gate", "smoke")
    if all(row.get(k) == PASS for k in wanted):
        return PASS
    return FAIL if any(row.get(k) == FAIL for k in wanted) else NOT_TESTED


def gpus_in_use(pods: Sequence[Json], resource: str) -> dict[str, int]:
    """Node -> how many ``resource`` the node's Pods that have not finished hold (their
    containers' limits, else requests), from Pods as JSON (``kubectl get pods -A -o json``)."""
    used: dict[str, int] = {}
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if not node or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in (p.get("spec") or {}).get("containers") or []:
            res = c.get("resources") or {}
            value = (res.get("limits") or {}).get(resource) or (res.get("requests") or {}).get(resource)
            if value is not None and str(value).isdigit():
                used[node] = used.get(node, 0) + int(str(value))
    return used


def _busy(row: dict[str, Any], held: int, resource: str) -> None:
    """Mark a node whose GPUs other Pods hold: its smoke and compute Pods would wait, so they are
    not run, and the row says why (not a pass, not a failure of the node)."""
    row.update(
        smoke=NOT_TESTED,
        compute=NOT_TESTED,
        notTested=(
            f"{held} of its {row['allocatable']} {resource} are held by other Pods: a Pod holding every "
            "GPU of the node would wait for them"
        ),
        fix=(
            f"run the lab when node {row['node']} is idle "
            f"(scripts/kubectl describe node {row['node']}: Allocated resources)"
        ),
    )


def run_fleet(
    api: Any,
    spec: FleetSpec,
    check: NodeCheck = check_node,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> FleetResult:
    """Gate every GPU node, then smoke and compute the nodes that passed, ``spec.parallelism``
    at a time.

    Returns the :class:`~gpulab.kube.results.FleetResult`: ``nodes`` (one row per GPU node:
    ``{"node", "pool", "product", "expected", "expectedSource", "allocatable", "capacity",
    "gate", "smoke", "compute", "dcgm", "status", "firstFailure", "fix", "smokeGpuUuids",
    "computeGpus", "driverVersion", "simulated"}``), ``nodes_summary``, ``nodes_passed``,
    ``expected_gpus`` (physical: each node's expectation over its replicas),
    ``time_slicing_replicas`` (the replicas every node's GFD labels give, else 1), the gate's
    fields summed over the nodes (``mig_resources`` ``{}``), ``cluster_policy_state`` (None
    where no operator runs), ``device_plugin_found`` (``ns/name``) and its Pods.

    Raises:
        GateError: no GPU node at all, or no node passed its gate (the table of every node
            is the message).
    """
    from kubernetes import client

    gates, dss, pods = _gate_nodes(api, spec, clock, sleep)
    rows = [_row(name, node, exp, g, spec) for name, (node, exp, g) in sorted(gates.items())]
    passing = [r for r in rows if r["gate"] == PASS]
    if not passing:
        installed = spec.installed_in
        tail = f"\n{_Progress(0.0, spec).describe(_chart_pods(api, installed))}" if installed else ""
        raise GateError("no GPU node passed the gate:\n" + table(rows) + tail)
    _check_nodes(api, passing, spec, check, len(rows))
    for uuid, nodes_seen in duplicate_uuids(rows).items():
        for row in rows:
            if row["node"] in nodes_seen and not row.get("firstFailure"):
                others = ", ".join(n for n in nodes_seen if n != row["node"])
                row["smoke"] = FAIL
                row["firstFailure"] = f"smoke: GPU {uuid} was also listed on node {others}"
                row["fix"] = "two nodes cannot hold one GPU: check the nodes' names and how they were cloned"
    for row in rows:
        row["status"] = _row_status(row, spec.compute_image is not None)
    return FleetResult(
        nodes=rows,
        nodes_summary=summary(rows),
        nodes_passed=sum(1 for r in rows if r["status"] == PASS),
        # Physical GPUs: each node's expectation less its time-slicing replicas (GFD's labels).
        expected_gpus=sum(int(r["expected"] or 0) // max(1, int(r.get("replicas") or 1)) for r in rows),
        time_slicing_replicas=_common_replicas(rows),
        allocatable_gpus=sum(int(r["allocatable"] or 0) for r in rows),
        capacity_gpus=sum(int(r["capacity"] or 0) for r in rows),
        gpu_resource=spec.resource,
        mig_resources={},
        cluster_policy_state=_cluster_policy_state(api),
        device_plugin_found=dss,
        device_plugin_pods=[_plugin_row(p) for p in pods],
        kubernetes_version=str(client.VersionApi(api).get_code().git_version),
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


#: ``{node name: (the node as JSON, its expectation, its gate)}``.
Gates = dict[str, tuple[dict[str, Any], Expectation, NodeGate]]


def _gate_nodes(
    api: Any, spec: FleetSpec, clock: Callable[[], float], sleep: Callable[[float], None]
) -> tuple[Gates, list[str], list[dict[str, Any]]]:
    """Every GPU node gated, once each advertises what it should or the wait is over (at most the
    grace; for a chart the lab installed, while its Pods still come up: :class:`_Progress`):
    ``(gates, the device-plugin DaemonSets found, their Pods)``.

    Raises:
        GateError: no GPU node at all.
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    installed = spec.installed_in
    dss, pods = _plugin_pods(api)
    plugin_found = bool(pods) or installed is not None
    progress = _Progress(clock(), spec)
    while True:
        nodes = [n for n in (sanitize(x, api) for x in core.list_node().items) if is_gpu_node(n, spec)]
        dss, pods = _plugin_pods(api) if plugin_found else (dss, pods)
        gates: Gates = {}
        for n in nodes:
            name = _name(n)
            on_node = next((p for p in pods if (p.get("spec") or {}).get("nodeName") == name), None)
            exp = expectation(n, spec)
            gates[name] = (n, exp, gate_node(n, exp, spec.resource, on_node, plugin_found, installed))
        if nodes and all(g[2].ok for g in gates.values()):
            return gates, dss, pods
        chart_pods = _chart_pods(api, installed) if installed else []
        labelled = bool(nodes) and all(GFD_COUNT in _labels(n) for n in nodes)
        if progress.over(clock(), chart_pods, labelled=labelled):
            break
        sleep(1.0)
    if not nodes:
        raise GateError(
            f"no GPU node: no node is labelled {GPU_PRESENT}=true or {GFD_COUNT}, none is in a "
            f"configured pool, and none advertises {spec.resource}\n  fix: scripts/kubectl get nodes "
            "--show-labels (is the GPU stack installed? is GPU Feature Discovery running?)"
            + (f"\n{progress.describe(_chart_pods(api, installed))}" if installed else "")
        )
    return gates, dss, pods


def _row(name: str, node: Json, exp: Expectation, g: NodeGate, spec: FleetSpec) -> dict[str, Any]:
    """The node's row after its gate: smoke and compute not tested yet."""
    labels = _labels(node)
    return {
        "node": name,
        "pool": labels.get(spec.pool_label) if spec.pool_label else None,
        "product": labels.get(GFD_PRODUCT),
        "expected": exp.count,
        "expectedSource": exp.source,
        "replicas": exp.replicas,
        "allocatable": g.allocatable,
        "capacity": g.capacity,
        "gate": PASS if g.ok else FAIL,
        "smoke": NOT_TESTED,
        "compute": NOT_TESTED,
        "dcgm": NOT_OBSERVABLE if spec.simulated else NOT_TESTED,
        "firstFailure": None if g.ok else f"gate: {g.cause}",
        "fix": None if g.ok else g.fix,
        "smokeGpuUuids": None,
        "computeGpus": None,
        "driverVersion": None,
        "labelDriverVersion": labels.get(GFD_DRIVER),
        "simulated": ((node.get("metadata") or {}).get("annotations") or {}).get(SIMULATED_ANNOTATION)
        == "true",
    }


def _check_nodes(api: Any, passing: list[dict[str, Any]], spec: FleetSpec, check: NodeCheck, of: int) -> None:
    """Smoke and compute on each row that passed its gate (of ``of`` GPU nodes),
    ``spec.parallelism`` at a time, the results written into the rows; a node whose GPUs other
    Pods hold is not tested, never waited on (a guest on a cluster in use)."""
    from kubernetes import client

    pods = client.CoreV1Api(api).list_pod_for_all_namespaces().items
    held = gpus_in_use([sanitize(p, api) for p in pods], spec.resource)
    for row in passing:
        if held.get(row["node"]):
            _busy(row, held[row["node"]], spec.resource)
    free = [r for r in passing if not held.get(r["node"])]
    print(
        f"[gpulab] fleet: {len(free)} of {of} GPU nodes passed the gate; smoke and compute "
        f"on each, {spec.parallelism} at a time",
        file=sys.stderr,
        flush=True,
    )
    with ThreadPoolExecutor(max_workers=max(1, min(spec.parallelism, len(free) or 1))) as pool:
        results = list(pool.map(lambda r: check(api, r["node"], _pod_gpus(r), spec), free))
    for row, result in zip(free, results, strict=True):
        row.update(result)
        _driver_matches(row)


def _common_replicas(rows: Sequence[Mapping[str, Any]]) -> int:
    """The time-slicing replicas GFD's labels give every node (1 when none shares, or when the
    nodes differ: then only each node's own row compares allocatable with its labels)."""
    found = {int(r.get("replicas") or 1) for r in rows}
    return found.pop() if len(found) == 1 else 1


def _pod_gpus(row: Mapping[str, Any]) -> int:
    """Units the node's smoke Pod holds: all it advertises, one under time-slicing
    (:attr:`Expectation.pod_gpus`)."""
    return 1 if int(row.get("replicas") or 1) > 1 else int(row["allocatable"])


def _chart_pods(api: Any, namespace: str | None) -> list[dict[str, Any]]:
    """The Pods of the installed chart's namespace, as JSON (none without a namespace)."""
    if not namespace:
        return []
    from kubernetes import client

    items = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    return [sanitize(p, api) for p in items]


#: Restarts after which a Pod of the installed chart is stuck whatever its state at the moment
#: (the operator's gate fails at once on a device plugin that restarted this often:
#: gpulab.kube.gate_rules).
STUCK_RESTARTS: Final = 3


def _statuses(pod: Json) -> list[Json]:
    status = pod.get("status") or {}
    return [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]


def _waiting(pod: Json) -> str | None:
    """Why a Pod is stuck: ``"Unschedulable: <the scheduler's message>"`` when the scheduler
    could not place it (a taint it does not tolerate, no node left for it), the first waiting
    reason of its containers among :data:`STUCK_REASONS`, or ``"restarted N times"`` once a
    container restarted :data:`STUCK_RESTARTS` times and is not Ready (a crash loop is running
    between its back-offs); None otherwise."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        scheduled = (cond.get("type"), cond.get("status"), cond.get("reason"))
        if scheduled == ("PodScheduled", "False", "Unschedulable"):
            return f"Unschedulable: {cond.get('message') or 'no node fits'}"
    for cs in _statuses(pod):
        reason = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
        if reason in STUCK_REASONS:
            return str(reason)
    for cs in _statuses(pod):
        restarts = int(cs.get("restartCount") or 0)
        if restarts >= STUCK_RESTARTS and not cs.get("ready"):
            return f"restarted {restarts} times"
    return None


def _starting(pod: Json) -> bool:
    """The Pod is still coming up: not being deleted, not finished, not stuck, not yet Ready,
    and none of its containers has failed yet (a restart is no progress, it is a crash loop
    starting)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if meta.get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed") or _waiting(pod):
        return False
    if any(int(cs.get("restartCount") or 0) > 0 for cs in _statuses(pod)):
        return False
    conds = status.get("conditions") or []
    return not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


class _Progress:
    """How long the gate waits (:func:`run_fleet`): the grace (``settle``); with a chart the lab
    installed, also while a Pod of it is still coming up and, once none is, one NFD pass for the
    labels, never past ``wait``; a Pod stuck (:data:`STUCK_REASONS`) for ``settle`` ends it."""

    def __init__(self, start: float, spec: FleetSpec) -> None:
        self.start, self.spec = start, spec
        self.last_progress = start
        self.stuck_since: dict[str, float] = {}
        self.stuck: dict[str, str] = {}

    def over(self, now: float, chart_pods: Sequence[Json], labelled: bool) -> bool:
        """True when the wait is over at ``now`` (seconds on the gate's clock)."""
        spec = self.spec
        if not spec.installed_in:
            return now >= self.start + spec.settle
        if now >= self.start + max(spec.settle, spec.wait):
            return True
        self.stuck = {f"{(p.get('metadata') or {}).get('name')}": r for p in chart_pods if (r := _waiting(p))}
        self.stuck_since = {k: self.stuck_since.get(k, now) for k in self.stuck}
        if any(now - t >= spec.settle for t in self.stuck_since.values()):
            return True
        if any(_starting(p) for p in chart_pods):
            self.last_progress = now
        allowance = spec.settle + (0.0 if labelled else NFD_PASS_SECONDS)
        return now >= max(self.start + spec.settle, self.last_progress + allowance)

    def describe(self, chart_pods: Sequence[Json]) -> str:
        """The installed chart's Pods, one line each, for a failed gate's message."""
        lines = [f"  the chart's Pods in {self.spec.installed_in}:"]
        for p in chart_pods:
            meta, status = p.get("metadata") or {}, p.get("status") or {}
            reason = _waiting(p) or status.get("phase")
            node = (p.get("spec") or {}).get("nodeName") or "(unscheduled)"
            lines.append(f"    {meta.get('name')} on {node}: {reason}")
        if len(lines) == 1:
            lines.append("    none (is the release installed? scripts/kubectl get daemonset -A)")
        return "\n".join(lines)


def _driver_matches(row: dict[str, Any]) -> None:
    """The driver the node's smoke Pod printed must be the one GFD labelled the node with
    (``nvidia.com/cuda.driver-version.full``); a row whose smoke passed fails otherwise."""
    labelled, seen = row.get("labelDriverVersion"), row.get("driverVersion")
    if row.get("smoke") == PASS and labelled and seen and labelled != seen:
        row.update(
            smoke=FAIL,
            firstFailure=(
                f"smoke: the Pod on {row['node']} printed driver {seen}; "
                f"the node's {GFD_DRIVER} says {labelled}"
            ),
            fix=(
                f"the driver on {row['node']} changed since GFD labelled it (an upgrade without a reboot?): "
                "nvidia-smi on the node, then restart GPU Feature Discovery there"
            ),
        )


def _plugin_row(pod: Json) -> dict[str, Any]:
    """One device-plugin Pod as the ``devicePluginPods`` output lists it (plus its node)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    return {
        "name": meta.get("name"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "phase": status.get("phase"),
        "ready": bool(statuses) and all(cs.get("ready") for cs in statuses),
        "restarts": sum(int(cs.get("restartCount") or 0) for cs in statuses),
        "simulated": (meta.get("annotations") or {}).get(SIMULATED_ANNOTATION) == "true",
    }


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as text, one line per node (stderr, and the message when no node passed)."""
    lines = []
    for r in rows:
        line = (
            f"  {r['node']}: {r.get('status', r.get('gate'))} (expected {r.get('expected')} from "
            f"{r.get('expectedSource')}, allocatable {r.get('allocatable')}; gate {r.get('gate')}, "
            f"smoke {r.get('smoke')}, compute {r.get('compute')})"
        )
        if r.get("firstFailure"):
            line += f"\n    first failure: {r['firstFailure']}\n    fix: {r.get('fix')}"
        elif r.get("notTested"):
            line += f"\n    not tested: {r['notTested']}\n    fix: {r.get('fix')}"
        lines.append(line)
    return "\n".join(lines)
