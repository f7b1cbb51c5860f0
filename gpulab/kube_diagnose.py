"""The diagnosis of a live cluster: its state read through the API, then :mod:`gpulab.diagnose`.

:func:`diagnosis` reads the pods, events and DaemonSets of every namespace, the nodes, and
the last log lines of the containers that crash or restart, and renders
:func:`gpulab.diagnose.diagnose_cluster`'s findings as the text a failed wait of
:mod:`gpulab.kube` carries. :class:`Context` is what the diagnosis knows beyond the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpulab.names import DEFAULT_PROFILE


@dataclass(frozen=True)
class Context:
    """What the diagnosis knows beyond the cluster: the host's facts and the lab's profile.

    ``mig_strategy`` (``none``/``single``/``mixed``) and ``expected_mig`` (``mixed``:
    ``{"nvidia.com/mig-1g.18gb": 7}``, None when unknown) say which resources count
    (:mod:`gpulab.mig`).
    """

    expected_gpus: int | None = None
    host_max_cuda: str | None = None
    profile: str = DEFAULT_PROFILE
    mig_strategy: str = "none"
    expected_mig: Mapping[str, int] | None = None


def _unhealthy_containers(pod: dict[str, Any]) -> list[str]:
    names = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in ("CrashLoopBackOff", "Error") or cs.get("restartCount", 0) > 0:
            names.append(cs["name"])
    for cs in (pod.get("status") or {}).get("initContainerStatuses") or []:
        if not cs.get("ready") and ((cs.get("state") or {}).get("running") or cs.get("restartCount", 0)):
            names.append(cs["name"])
    return names


def diagnosis(api: Any, ctx: Context) -> str:
    """The diagnosis of the whole cluster (every namespace) through ``api`` (an ``ApiClient``),
    as text for an error message (:func:`gpulab.diagnose.render`)."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from gpulab import diagnose

    core = client.CoreV1Api(api)
    apps = client.AppsV1Api(api)
    pods = [api.sanitize_for_serialization(p) for p in core.list_pod_for_all_namespaces().items]
    events = [api.sanitize_for_serialization(e) for e in core.list_event_for_all_namespaces().items]
    dsets = [api.sanitize_for_serialization(d) for d in apps.list_daemon_set_for_all_namespaces().items]
    nodes = [api.sanitize_for_serialization(n) for n in core.list_node().items]
    logs: dict[str, str] = {}
    for pod in pods:
        meta = pod["metadata"]
        for c in _unhealthy_containers(pod)[:3]:
            try:
                logs[f"{meta['namespace']}/{meta['name']}/{c}"] = core.read_namespaced_pod_log(
                    meta["name"], meta["namespace"], container=c, tail_lines=50
                )
            except ApiException:
                continue
    found = diagnose.diagnose_cluster(
        pods=pods,
        events=events,
        daemonsets=dsets,
        nodes=nodes,
        logs=logs,
        expected_gpus=ctx.expected_gpus,
        host_max_cuda=ctx.host_max_cuda,
        profile=ctx.profile,
        mig_strategy=ctx.mig_strategy,
        expected_mig=ctx.expected_mig,
    )
    return diagnose.render(found)
