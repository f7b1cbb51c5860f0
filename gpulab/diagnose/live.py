"""The diagnosis of a live cluster: its state read through the API, then :mod:`gpulab.diagnose`.

:func:`diagnosis` reads the pods, events, DaemonSets, Deployments and ReplicaSets of every
namespace (their conditions: :mod:`gpulab.diagnose.workloads`), the ClusterPolicy's
conditions, the nodes, the namespaces stuck Terminating, and the last log lines of the
containers that crash, restart, terminated with an error (even with 0 restarts, e.g. a
``restartPolicy: Never`` Pod) or are stuck in init (a restarted container's previous run too), and renders
:func:`gpulab.diagnose.diagnose_cluster`'s findings as the text a failed wait of
:mod:`gpulab.kube` carries. :class:`Context` is what the diagnosis knows beyond the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gpulab import diagnose
from gpulab.core.names import DEFAULT_PROFILE, DEVICE_PLUGIN_DS, GPU_RESOURCE, PROJECT
from gpulab.core.rawapi import pod_log


@dataclass(frozen=True)
class Context:
    """What the diagnosis knows beyond the cluster: the host's facts and the lab's profile.

    ``mig_strategy`` (``none``/``single``/``mixed``) and ``expected_mig`` (``mixed``:
    ``{"nvidia.com/mig-1g.18gb": 7}``, None when unknown) say which resources count
    (:mod:`gpulab.config.mig`); ``gpu_resource`` is the whole-GPU name counted (``nvidia.com/gpu``,
    ``nvidia.com/gpu.shared`` under time-slicing's rename); ``device_plugin`` is the
    ``(namespace, DaemonSet)`` the gate waits for, when it knows it (an existing cluster's own
    plugin is not named as the operator's).
    """

    expected_gpus: int | None = None
    host_max_cuda: str | None = None
    profile: str = DEFAULT_PROFILE
    mig_strategy: str = "none"
    expected_mig: Mapping[str, int] | None = None
    gpu_resource: str = GPU_RESOURCE
    device_plugin: tuple[str, str] | None = None
    #: How a fix runs a command on the GPU node: the variant's template of ``{cmd}``
    #: (gpulab.core.fixes.on_node); None: the minikube node of :attr:`profile`.
    node_command: str | None = None


#: Waiting reasons of a container that failed to run (kubelet's, as kubectl shows them).
_FAILING: Final = frozenset(
    {"CrashLoopBackOff", "Error", "RunContainerError", "CreateContainerError", "StartError"}
)


def _failed(cs: dict[str, Any]) -> bool:
    state = cs.get("state") or {}
    terminated = state.get("terminated") or {}
    return (
        (state.get("waiting") or {}).get("reason") in _FAILING
        or int(cs.get("restartCount") or 0) > 0
        or terminated.get("exitCode") not in (None, 0)
    )


def _unhealthy_containers(pod: dict[str, Any]) -> list[str]:
    """Containers whose log the diagnosis needs, init containers first (a pod stuck in init
    is stuck there): failing, restarted or terminated with a non-zero exit code (any restart
    count), and init containers that run without having completed."""
    status = pod.get("status") or {}
    names = [
        cs["name"]
        for cs in status.get("initContainerStatuses") or []
        if not cs.get("ready") and ((cs.get("state") or {}).get("running") or _failed(cs))
    ]
    names += [cs["name"] for cs in status.get("containerStatuses") or [] if _failed(cs)]
    return names


#: Operand Pods whose running containers' logs are read too (a DCGM exporter that lost its GPU
#: runs on, logging the NVML error).
RUNNING_LOG_PREFIXES: Final = "nvidia-dcgm-exporter-"


def _log_containers(pod: dict[str, Any], plugin_ds: str = DEVICE_PLUGIN_DS) -> list[str]:
    """:func:`_unhealthy_containers`, and a device-plugin pod's containers even when they run
    (``plugin_ds``: the plugin's DaemonSet, whose pods are named ``<plugin_ds>-*``): a plugin
    that finds no GPU, or reports it unhealthy, runs on quietly (``No devices found. Waiting
    indefinitely.``), and its log is the only place that says why allocatable stays 0. At
    most 3 per pod."""
    names = _unhealthy_containers(pod)
    meta = pod.get("metadata") or {}
    running_too = (
        str(meta.get("name") or "").startswith((plugin_ds + "-", RUNNING_LOG_PREFIXES))
        # The lab's own Pods (smoke, compute, benchmark): a container that lost its GPU keeps
        # running ("Failed to initialize NVML: Unknown Error" in its log).
        or (meta.get("labels") or {}).get("app.kubernetes.io/part-of") == PROJECT
    )
    if running_too:
        names += [
            cs["name"]
            for cs in (pod.get("status") or {}).get("containerStatuses") or []
            if cs["name"] not in names
        ]
    return names[:3]


def _wants_previous(pod: dict[str, Any], container: str) -> bool:
    """A restarted container that runs again: its crash is in the previous run's log."""
    status = pod.get("status") or {}
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        if cs.get("name") == container:
            return int(cs.get("restartCount") or 0) > 0 and "running" in (cs.get("state") or {})
    return False


def _read_log(core: Any, pod: dict[str, Any], container: str) -> str | None:
    """The last 50 lines of ``container`` (after its previous run's, when it restarted and
    runs again), or None when the kubelet serves no log (e.g. the simulated lab's kwok nodes)."""
    from kubernetes.client.rest import ApiException

    meta = pod["metadata"]
    texts = []
    for previous in (True, False) if _wants_previous(pod, container) else (False,):
        try:
            texts.append(
                pod_log(
                    core,
                    meta["name"],
                    meta["namespace"],
                    container=container,
                    tail_lines=50,
                    previous=previous,
                )
            )
        except ApiException:
            continue
    return "\n".join(t for t in texts if t) if texts else None


def diagnosis(api: Any, ctx: Context) -> str:
    """The diagnosis of the whole cluster (every namespace) through ``api`` (an ``ApiClient``),
    as text for an error message (:func:`gpulab.diagnose.render`)."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    pods = [api.sanitize_for_serialization(p) for p in core.list_pod_for_all_namespaces().items]
    events = [api.sanitize_for_serialization(e) for e in core.list_event_for_all_namespaces().items]
    dsets = [api.sanitize_for_serialization(d) for d in apps.list_daemon_set_for_all_namespaces().items]
    nodes = [api.sanitize_for_serialization(n) for n in core.list_node().items]
    namespaces = [
        api.sanitize_for_serialization(n)
        for n in core.list_namespace().items
        if n.status is not None and n.status.phase == "Terminating"
    ]
    workloads = [
        {**api.sanitize_for_serialization(d), "kind": "Deployment"}
        for d in apps.list_deployment_for_all_namespaces().items
    ]
    workloads += [
        {**api.sanitize_for_serialization(r), "kind": "ReplicaSet"}
        for r in apps.list_replica_set_for_all_namespaces().items
        if (r.spec and r.spec.replicas)  # the current ones; old revisions keep 0 replicas
    ]
    policy = _cluster_policy(api)
    if policy is not None:
        workloads.append({**policy, "kind": "ClusterPolicy"})
    logs: dict[str, str] = {}
    plugin_ds = ctx.device_plugin[1] if ctx.device_plugin else DEVICE_PLUGIN_DS
    for pod in pods:
        meta = pod["metadata"]
        for c in _log_containers(pod, plugin_ds):
            text = _read_log(core, pod, c)
            if text is not None:
                logs[f"{meta['namespace']}/{meta['name']}/{c}"] = text
    found = diagnose.diagnose_cluster(
        pods=pods,
        events=events,
        daemonsets=dsets,
        nodes=nodes,
        logs=logs,
        expected_gpus=ctx.expected_gpus,
        host_max_cuda=ctx.host_max_cuda,
        profile=ctx.profile,
        node_command=ctx.node_command,
        mig_strategy=ctx.mig_strategy,
        expected_mig=ctx.expected_mig,
        namespaces=namespaces,
        gpu_resource=ctx.gpu_resource,
        device_plugin=ctx.device_plugin,
        workloads=workloads,
    )
    return diagnose.render(found)


def _cluster_policy(api: Any) -> dict[str, Any] | None:
    """ClusterPolicy ``cluster-policy`` as JSON, or None (no CRD, none made, not readable)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    try:
        doc = client.CustomObjectsApi(api).get_cluster_custom_object(
            "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
        )
    except ApiException:
        return None
    return doc if isinstance(doc, dict) else None
