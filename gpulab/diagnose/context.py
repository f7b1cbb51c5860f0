"""The cluster state one :func:`~gpulab.diagnose.diagnose_cluster` call reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gpulab.diagnose.fields import _event_time, _get, _name, _ns
from gpulab.diagnose.record import GPU_RESOURCE, Json


@dataclass
class _Ctx:
    pods: list[Json]
    events: list[Json]
    daemonsets: list[Json]
    nodes: list[Json]
    logs: Mapping[str, str]
    host_max_cuda: str | None
    profile: str
    #: The whole-GPU resource the lab counts: ``nvidia.com/gpu``, or ``nvidia.com/gpu.shared``
    #: under time-slicing's rename (gpulab.config.time_slicing).
    gpu_resource: str = GPU_RESOURCE
    #: Terminating namespaces (``kubectl get ns -o json`` items).
    namespaces: list[Json] = field(default_factory=list)
    #: When the state was read (aware UTC), for how long something has been stuck.
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    #: ``(namespace, DaemonSet)`` of the device plugin the gate waits for; None: the
    #: operator's (or minikube addon's) ``nvidia-device-plugin*`` DaemonSet, found by name.
    device_plugin: tuple[str, str] | None = None
    #: How a fix runs a command on the GPU node (gpulab.core.fixes.on_node); None: minikube's.
    node_command: str | None = None

    def pod_events(self, pod: Json) -> list[Json]:
        ns, name = _ns(pod), _name(pod)
        found = [
            e
            for e in self.events
            if _get(e, "involvedObject", "name") == name
            and (_get(e, "involvedObject", "kind") in (None, "Pod"))
            and (_get(e, "involvedObject", "namespace") or _ns(e)) == ns
        ]
        return sorted(found, key=_event_time)

    def log(self, pod: Json, container: str) -> str:
        return self.logs.get(f"{_ns(pod)}/{_name(pod)}/{container}", "")

    def daemonset(self, name: str) -> Json | None:
        for ds in self.daemonsets:
            if _name(ds) == name:
                return ds
        return None
