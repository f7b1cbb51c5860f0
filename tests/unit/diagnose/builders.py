"""Builders of ``kubectl get -o json`` items, events and log lines for the diagnosis tests.

Each document is shaped like what the API server returns (camelCase keys, quantities as
strings, RFC 3339 timestamps); only the fields the diagnosis reads are kept."""

from __future__ import annotations

from typing import Any

from gpulab.diagnose import Diagnosis

NS = "gpu-operator"
T0 = "2026-11-29T10:00:00Z"


# --- builders ---------------------------------------------------------------------------------


def node(
    name: str = "gpu-lab",
    *,
    allocatable: str | None = "1",
    capacity: str | None = "1",
    labels: dict[str, str] | None = None,
    ready: bool = True,
) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8025424Ki", "pods": "110"}
    cap = dict(alloc)
    if allocatable is not None:
        alloc["nvidia.com/gpu"] = allocatable
    if capacity is not None:
        cap["nvidia.com/gpu"] = capacity
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels
            or {
                "kubernetes.io/hostname": name,
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.deploy.device-plugin": "true",
            },
            "creationTimestamp": T0,
        },
        "status": {
            "allocatable": alloc,
            "capacity": cap,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status"
                    if ready
                    else "container runtime network not ready",
                }
            ],
        },
    }


def pod(
    name: str,
    ns: str = NS,
    *,
    phase: str = "Running",
    node_name: str | None = "gpu-lab",
    labels: dict[str, str] | None = None,
    containers: list[dict[str, Any]] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    gpus: int = 0,
    created: str = T0,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    if containers is None:
        res: dict[str, Any] = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}
        containers = [{"name": "main", "image": "busybox:1.36", "resources": res}]
    spec: dict[str, Any] = {"containers": containers, "restartPolicy": "Always"}
    if node_name:
        spec["nodeName"] = node_name
    status: dict[str, Any] = {"phase": phase}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    if conditions is not None:
        status["conditions"] = conditions
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels or {},
            "creationTimestamp": created,
        },
        "spec": spec,
        "status": status,
    }


def running(name: str, *, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": "2026-11-29T10:01:00Z"}},
    }


def waiting(name: str, reason: str, message: str | None = None, **extra: Any) -> dict[str, Any]:
    w: dict[str, Any] = {"reason": reason}
    if message:
        w["message"] = message
    return {"name": name, "ready": False, "restartCount": 0, "state": {"waiting": w}, **extra}


def event(
    obj_name: str,
    reason: str,
    message: str,
    *,
    ns: str = NS,
    kind: str = "Pod",
    type_: str = "Warning",
    at: str = "2026-11-29T10:05:00Z",
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{obj_name}.187c0a1b2c3d4e5f", "namespace": ns},
        "involvedObject": {"kind": kind, "name": obj_name, "namespace": ns, "apiVersion": "v1"},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 3,
        "firstTimestamp": "2026-11-29T10:02:00Z",
        "lastTimestamp": at,
        "source": {"component": "default-scheduler"},
    }


def daemonset(
    name: str,
    *,
    desired: int = 1,
    ready: int = 1,
    node_selector: dict[str, str] | None = None,
    ns: str = NS,
) -> dict[str, Any]:
    tmpl_spec: dict[str, Any] = {"containers": [{"name": name, "image": f"nvcr.io/nvidia/{name}"}]}
    if node_selector is not None:
        tmpl_spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": T0},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": tmpl_spec},
        },
        "status": {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": desired,
            "numberReady": ready,
            "numberAvailable": ready,
            "numberMisscheduled": 0,
        },
    }


def healthy_operator() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    pods = [
        pod(
            "gpu-operator-6d8f9c7b5d-q7x2m",
            labels={"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
            statuses=[running("gpu-operator")],
        ),
        pod(
            "nvidia-device-plugin-daemonset-x2k9p",
            labels={"app": "nvidia-device-plugin-daemonset"},
            statuses=[running("nvidia-device-plugin")],
        ),
        pod(
            "nvidia-container-toolkit-daemonset-7hjzt",
            labels={"app": "nvidia-container-toolkit-daemonset"},
            statuses=[running("nvidia-container-toolkit-ctr")],
        ),
    ]
    dsets = [
        daemonset(
            "nvidia-device-plugin-daemonset",
            node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"},
        ),
        daemonset("nvidia-container-toolkit-daemonset"),
    ]
    return pods, dsets


def rows(diags: list[Diagnosis]) -> list[str]:
    return [d.row for d in diags]
