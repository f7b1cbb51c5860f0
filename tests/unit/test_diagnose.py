"""Diagnosis from hand-written ``kubectl get -o json`` items, events and log lines.

Each document below is shaped like what the API server returns (camelCase keys, quantities
as strings, RFC 3339 timestamps); only the fields the diagnosis reads are kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import diagnose
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


# --- healthy ----------------------------------------------------------------------------------


def test_healthy_cluster_has_no_diagnosis() -> None:
    pods, dsets = healthy_operator()
    smoke = pod("gpu-smoke", "default", phase="Succeeded", gpus=1)
    diags = diagnose.diagnose_cluster(
        pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()], expected_gpus=1
    )
    assert diags == []
    assert "no problem found" in diagnose.render(diags)


# --- allocatable ------------------------------------------------------------------------------


def test_allocatable_key_missing_on_every_node_is_not_registered() -> None:
    pods, _ = healthy_operator()
    dsets = [daemonset("nvidia-device-plugin-daemonset", desired=1, ready=0)]
    diags = diagnose.diagnose_cluster(
        pods=pods[:1],
        events=[],
        daemonsets=dsets,
        nodes=[node(allocatable=None, capacity=None)],
    )
    d = next(d for d in diags if d.row == "allocatable-zero")
    assert d.variant == "not-registered"
    assert "device plugin not registered" in d.reason
    assert d.object == "node gpu-lab"
    assert "ready 0/1" in d.detail
    assert "minikube -p gpu-lab ssh -- nvidia-smi" in d.fix
    assert "logs -l app=nvidia-device-plugin-daemonset" in d.fix


def test_allocatable_zero_with_capacity_is_unhealthy() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(allocatable="0", capacity="1")]
    )
    assert rows(diags) == ["allocatable-zero"]
    d = diags[0]
    assert d.variant == "unhealthy"
    assert "devices unhealthy (e.g. XID errors)" in d.reason
    assert "xid" in d.fix.lower()


def test_allocatable_zero_with_zero_capacity_means_no_devices_seen() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(allocatable="0", capacity="0")]
    )
    assert diags[0].variant == "no-devices"


def test_allocatable_below_expected_count() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods,
        events=[],
        daemonsets=dsets,
        nodes=[node(allocatable="1", capacity="2")],
        expected_gpus=2,
    )
    assert rows(diags) == ["allocatable-mismatch"]
    assert diags[0].variant == "fewer"
    assert "is 1, expected 2" in diags[0].reason


def test_insufficient_gpu_names_the_holders() -> None:
    pods, dsets = healthy_operator()
    holder = pod("trainer-0", "ml", gpus=1, statuses=[running("main")])
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Pending",
        node_name=None,
        gpus=1,
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    ev = event(
        "gpu-smoke",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.",
        ns="default",
    )
    diags = diagnose.diagnose_cluster(
        pods=[*pods, holder, smoke], events=[ev], daemonsets=dsets, nodes=[node()]
    )
    assert rows(diags) == ["gpu-insufficient"]
    d = diags[0]
    assert d.variant == "held-by-pods"
    assert d.object == "pod default/gpu-smoke"
    assert "ml/trainer-0 holds 1" in d.reason
    assert "1 of 1 allocatable" in d.reason
    assert "kubectl -n ml delete pod trainer-0" in d.fix
    assert "Insufficient nvidia.com/gpu" in d.detail


def test_insufficient_gpu_with_allocatable_missing_is_reported_as_not_registered() -> None:
    pods, dsets = healthy_operator()
    smoke = pod("gpu-smoke", "default", phase="Pending", node_name=None, gpus=1)
    ev = event(
        "gpu-smoke",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        ns="default",
    )
    diags = diagnose.diagnose_cluster(
        pods=[*pods, smoke],
        events=[ev],
        daemonsets=dsets,
        nodes=[node(allocatable=None, capacity=None)],
    )
    assert rows(diags) == ["allocatable-zero"]
    assert "pod default/gpu-smoke Pending" in diags[0].detail


def test_gpu_holders_counts_bound_live_pods_only() -> None:
    pods = [
        pod("a", "ml", gpus=2),
        pod("done", "ml", phase="Succeeded", gpus=1),
        pod("failed", "ml", phase="Failed", gpus=1),
        pod("waiting", "ml", phase="Pending", node_name=None, gpus=1),
        pod("cpu-only", "ml"),
        pod(
            "requests-only",
            "ml",
            containers=[
                {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
                {"name": "d", "resources": {"limits": {"cpu": "1"}}},
            ],
        ),
        pod("elsewhere", "ml", node_name="other", gpus=1),
    ]
    assert diagnose.gpu_holders(pods) == [("ml/a", 2), ("ml/requests-only", 1), ("ml/elsewhere", 1)]
    assert diagnose.gpu_holders(pods, node="gpu-lab") == [("ml/a", 2), ("ml/requests-only", 1)]


def test_gpu_request_takes_the_larger_of_init_and_main() -> None:
    p = pod(
        "x",
        containers=[
            {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
            {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
        ],
    )
    p["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {"nvidia.com/gpu": "3"}}}]
    assert diagnose.gpu_request(p) == 3


# --- operator pending -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "variant"),
    [
        ("0/1 nodes are available: 1 Insufficient cpu.", "insufficient-cpu"),
        ("0/1 nodes are available: 1 Insufficient memory.", "insufficient-memory"),
        (
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: "
            "0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            "insufficient-cpu-memory",
        ),
    ],
)
def test_operator_pending_on_cpu_or_memory(message: str, variant: str) -> None:
    operator = pod(
        "gpu-operator-6d8f9c7b5d-q7x2m",
        phase="Pending",
        node_name=None,
        labels={"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
    )
    nfd = pod(
        "gpu-operator-node-feature-discovery-worker-8wz5c",
        phase="Pending",
        node_name=None,
        labels={"app.kubernetes.io/name": "node-feature-discovery"},
    )
    events = [
        event(operator["metadata"]["name"], "FailedScheduling", message),
        event(nfd["metadata"]["name"], "FailedScheduling", message),
    ]
    diags = diagnose.diagnose_cluster(
        pods=[operator, nfd],
        events=events,
        daemonsets=[],
        nodes=[node(allocatable=None, capacity=None)],
    )
    assert rows(diags)[:2] == ["operator-pending", "operator-pending"]
    # Root cause first: the missing allocatable is a consequence and comes after.
    assert rows(diags)[-1] == "allocatable-zero"
    d = diags[0]
    assert d.variant == variant
    assert d.object == f"pod {NS}/gpu-operator-6d8f9c7b5d-q7x2m"
    assert "give the node >= 4 CPUs / 8 GiB (minikube start --cpus 4 --memory 8g)" in d.fix
    assert "Insufficient" in d.detail


# --- smoke ContainerCreating ------------------------------------------------------------------


def test_smoke_container_creating_while_toolkit_not_ready() -> None:
    pods, _ = healthy_operator()
    toolkit = pod(
        "nvidia-container-toolkit-daemonset-7hjzt",
        labels={"app": "nvidia-container-toolkit-daemonset"},
        statuses=[running("nvidia-container-toolkit-ctr", ready=False)],
    )
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Pending",
        gpus=1,
        statuses=[waiting("cuda", "ContainerCreating")],
    )
    ev = event(
        "gpu-smoke",
        "FailedCreatePodSandBox",
        "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox "
        'runtime: no runtime for "nvidia" is configured',
        ns="default",
    )
    dsets = [
        daemonset("nvidia-device-plugin-daemonset"),
        daemonset("nvidia-container-toolkit-daemonset", desired=1, ready=0),
    ]
    logs = {
        f"{NS}/nvidia-container-toolkit-daemonset-7hjzt/nvidia-container-toolkit-ctr": (
            'time="2026-11-29T10:03:00Z" level=info msg="Parsing arguments"\n'
            'time="2026-11-29T10:03:01Z" level=info msg="Waiting for signal"\n'
        )
    }
    diags = diagnose.diagnose_cluster(
        pods=[pods[0], pods[1], toolkit, smoke],
        events=[ev],
        daemonsets=dsets,
        nodes=[node()],
        logs=logs,
    )
    d = next(d for d in diags if d.row == "smoke-container-creating")
    assert d.variant == "toolkit-not-ready"
    assert d.object == "pod default/gpu-smoke/container cuda"
    assert "kubectl -n gpu-operator logs -l app=nvidia-container-toolkit-daemonset" in d.fix
    assert "rollout status ds/nvidia-container-toolkit-daemonset" in d.fix
    assert "ready 0/1" in d.detail
    assert "Waiting for signal" in d.detail
    assert 'no runtime for "nvidia"' in d.detail
    # The toolkit itself (not ready) is listed before the smoke pod it blocks.
    assert rows(diags).index("pod-not-ready") < rows(diags).index("smoke-container-creating")


def test_smoke_container_creating_with_toolkit_ready_points_at_the_runtime() -> None:
    pods, dsets = healthy_operator()
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Pending",
        gpus=1,
        statuses=[waiting("cuda", "ContainerCreating")],
    )
    diags = diagnose.diagnose_cluster(pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["smoke-container-creating"]
    assert diags[0].variant == "runtime"


# --- CUDA newer than the driver ---------------------------------------------------------------

CUDA_START_ERROR = (
    "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
    "runc create failed: unable to start container process: error during container init: "
    "error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as "
    "'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, "
    "please update your driver to a newer version, or use an earlier cuda container: unknown"
)


def cuda_smoke(status: dict[str, Any]) -> dict[str, Any]:
    return pod(
        "gpu-smoke",
        "default",
        phase="Failed" if "terminated" in status["state"] else "Running",
        containers=[
            {
                "name": "cuda",
                "image": "nvidia/cuda:12.8.1-base-ubuntu22.04",
                "resources": {"limits": {"nvidia.com/gpu": "1"}},
            }
        ],
        statuses=[status],
    )


@pytest.mark.parametrize(
    "status",
    [
        {
            "name": "cuda",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 128, "reason": "StartError", "message": CUDA_START_ERROR}},
        },
        {
            "name": "cuda",
            "ready": False,
            "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
            "lastState": {
                "terminated": {"exitCode": 128, "reason": "StartError", "message": CUDA_START_ERROR}
            },
        },
        {
            "name": "cuda",
            "ready": False,
            "restartCount": 0,
            "state": {"waiting": {"reason": "RunContainerError", "message": CUDA_START_ERROR}},
        },
    ],
    ids=["terminated", "lastState", "waiting"],
)
def test_cuda_image_newer_than_driver_from_status(status: dict[str, Any]) -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=[*pods, cuda_smoke(status)],
        events=[],
        daemonsets=dsets,
        nodes=[node()],
        host_max_cuda="12.4",
    )
    assert rows(diags) == ["cuda-image-newer-than-driver"]
    d = diags[0]
    assert d.object == "pod default/gpu-smoke/container cuda"
    assert "needs CUDA >= 12.8" in d.reason
    assert "supports CUDA <= 12.4" in d.reason
    assert "nvidia/cuda:12.4.1-base-ubuntu22.04" in d.fix
    assert "570.26" in d.fix  # minimum driver for CUDA 12.8
    assert "unsatisfied condition: cuda>=12.8" in d.detail


def test_cuda_condition_found_in_an_event_and_max_taken_from_it() -> None:
    pods, dsets = healthy_operator()
    smoke = cuda_smoke(
        {
            "name": "cuda",
            "ready": False,
            "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        }
    )
    ev = event(
        "gpu-smoke",
        "Failed",
        'Error: failed to start container "cuda": nvidia-container-cli: requirement error: '
        "unsatisfied condition: cuda>=12.8 (driver supports CUDA 12.2)",
        ns="default",
    )
    diags = diagnose.diagnose_cluster(pods=[*pods, smoke], events=[ev], daemonsets=dsets, nodes=[node()])
    d = diags[0]
    assert d.row == "cuda-image-newer-than-driver"
    assert "supports CUDA <= 12.2" in d.reason
    assert "nvidia/cuda:12.2.2-base-ubuntu22.04" in d.fix


def test_cuda_without_known_max_still_says_what_to_do() -> None:
    pods, dsets = healthy_operator()
    status = {
        "name": "cuda",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": {"exitCode": 128, "reason": "StartError", "message": CUDA_START_ERROR}},
    }
    diags = diagnose.diagnose_cluster(
        pods=[*pods, cuda_smoke(status)], events=[], daemonsets=dsets, nodes=[node()]
    )
    assert diags[0].row == "cuda-image-newer-than-driver"
    assert "max unknown" in diags[0].reason
    assert "CUDA Version" in diags[0].fix


# --- device plugin NVML ------------------------------------------------------------------------

PLUGIN_LOG = """\
I1129 10:04:01.112233       1 main.go:235] "Starting NVIDIA Device Plugin" version="v0.18.0"
I1129 10:04:01.112301       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins
I1129 10:04:01.112400       1 main.go:317] Loading configuration.
E1129 10:04:01.120001       1 factory.go:112] Incompatible strategy detected auto
E1129 10:04:01.120050       1 factory.go:113] If this is a GPU node, did you configure the \
NVIDIA Container Toolkit?
E1129 10:04:01.120099       1 main.go:177] error starting plugins: error creating plugin manager: \
unable to create plugin manager: nvml init failed: could not load NVML library: \
libnvidia-ml.so.1: cannot open shared object file: No such file or directory
"""


def test_device_plugin_crashloop_without_nvml_means_runtime_does_not_inject() -> None:
    plugin = pod(
        "nvidia-device-plugin-daemonset-x2k9p",
        labels={"app": "nvidia-device-plugin-daemonset"},
        statuses=[
            {
                "name": "nvidia-device-plugin",
                "ready": False,
                "restartCount": 6,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    )
    logs = {f"{NS}/nvidia-device-plugin-daemonset-x2k9p/nvidia-device-plugin": PLUGIN_LOG}
    diags = diagnose.diagnose_cluster(
        pods=[plugin],
        events=[],
        daemonsets=[daemonset("nvidia-device-plugin-daemonset", ready=0)],
        nodes=[node(allocatable=None, capacity=None)],
        logs=logs,
    )
    assert rows(diags) == ["device-plugin-crashloop", "allocatable-zero"]
    d = diags[0]
    assert d.variant == "nvml-not-injected"
    assert d.object == (
        "pod gpu-operator/nvidia-device-plugin-daemonset-x2k9p/container nvidia-device-plugin"
    )
    assert "does not inject the driver" in d.reason
    assert "6 restart(s)" in d.reason
    assert "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker" in d.fix
    assert "could not load NVML library" in d.detail


def test_device_plugin_crashloop_for_another_reason_quotes_the_log() -> None:
    plugin = pod(
        "nvidia-device-plugin-daemonset-x2k9p",
        labels={"app": "nvidia-device-plugin-daemonset"},
        statuses=[waiting("nvidia-device-plugin", "CrashLoopBackOff", restartCount=2)],
    )
    logs = {
        f"{NS}/nvidia-device-plugin-daemonset-x2k9p/nvidia-device-plugin": (
            "E1129 10:04:01 main.go:132] error parsing config file: unmarshal error\n"
        )
    }
    diags = diagnose.diagnose_cluster(pods=[plugin], events=[], daemonsets=[], nodes=[node()], logs=logs)
    assert diags[0].row == "device-plugin-crashloop"
    assert diags[0].variant == "other"
    assert "error parsing config file" in diags[0].detail
    assert "--previous" in diags[0].fix


# --- DaemonSet on no node ----------------------------------------------------------------------


def test_daemonset_with_no_desired_pods_names_the_missing_labels() -> None:
    dsets = [
        daemonset(
            "nvidia-device-plugin-daemonset",
            desired=0,
            ready=0,
            node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"},
        ),
        # Normal when MIG is off: never reported.
        daemonset(
            "nvidia-mig-manager",
            desired=0,
            ready=0,
            node_selector={"nvidia.com/gpu.deploy.mig-manager": "true"},
        ),
    ]
    plain = node(allocatable=None, capacity=None, labels={"kubernetes.io/hostname": "gpu-lab"})
    diags = diagnose.diagnose_cluster(pods=[], events=[], daemonsets=dsets, nodes=[plain])
    assert rows(diags) == ["daemonset-no-nodes", "allocatable-zero"]
    d = diags[0]
    assert d.object == "daemonset gpu-operator/nvidia-device-plugin-daemonset"
    assert "nvidia.com/gpu.deploy.device-plugin=true" in d.reason
    assert "node gpu-lab lacks nvidia.com/gpu.deploy.device-plugin=true" in d.detail
    assert "kubectl get nodes --show-labels" in d.fix
    assert "kubectl label node gpu-lab nvidia.com/gpu.deploy.device-plugin=true" in d.fix


def test_daemonset_not_ready_without_pods_is_reported_once() -> None:
    dsets = [daemonset("gpu-feature-discovery", desired=1, ready=0)]
    ev = event(
        "gpu-feature-discovery",
        "FailedCreate",
        'Error creating: pods "gpu-feature-discovery-" is forbidden: exceeded quota',
        kind="DaemonSet",
    )
    diags = diagnose.diagnose_cluster(pods=[], events=[ev], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["daemonset-not-ready"]
    assert "exceeded quota" in diags[0].detail


# --- validator --------------------------------------------------------------------------------


def test_validator_stuck_in_driver_validation_names_pod_container_and_last_line() -> None:
    validator = pod(
        "nvidia-operator-validator-5hq8d",
        phase="Pending",
        labels={"app": "nvidia-operator-validator"},
        init_statuses=[
            running("driver-validation", ready=False),
            waiting("toolkit-validation", "PodInitializing"),
            waiting("cuda-validation", "PodInitializing"),
            waiting("plugin-validation", "PodInitializing"),
        ],
        statuses=[waiting("nvidia-operator-validator", "PodInitializing")],
    )
    logs = {
        f"{NS}/nvidia-operator-validator-5hq8d/driver-validation": (
            'time="2026-11-29T10:06:00Z" level=info msg="version: v26.7.0"\n'
            "running command chroot with args [/host nvidia-smi]\n"
            "command failed, retrying after 5 seconds\n\n"
        )
    }
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=[*pods, validator],
        events=[],
        daemonsets=dsets,
        nodes=[node(allocatable=None, capacity=None)],
        logs=logs,
    )
    d = diags[0]
    assert d.row == "validator-stuck"
    assert d.variant == "driver-validation"
    assert d.object == "pod gpu-operator/nvidia-operator-validator-5hq8d/container driver-validation"
    assert "running since" in d.reason
    assert d.detail == "last log line: command failed, retrying after 5 seconds"
    assert "kubectl -n gpu-operator logs nvidia-operator-validator-5hq8d -c driver-validation" in d.fix
    # Only the first unfinished init container is reported.
    assert sum(1 for x in diags if x.row == "validator-stuck") == 1


# --- DCGM exporter ----------------------------------------------------------------------------


def test_dcgm_exporter_failure_is_not_blocking_and_comes_last() -> None:
    dcgm = pod(
        "nvidia-dcgm-exporter-7k2lq",
        labels={"app": "nvidia-dcgm-exporter"},
        statuses=[
            {
                "name": "nvidia-dcgm-exporter",
                "ready": False,
                "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    )
    logs = {
        f"{NS}/nvidia-dcgm-exporter-7k2lq/nvidia-dcgm-exporter": (
            'time="2026-11-29T10:07:00Z" level=info msg="Starting dcgm-exporter"\n'
            'time="2026-11-29T10:07:01Z" level=fatal msg="Failed to watch metrics: Error watching '
            'fields: Profiling module returned an unrecoverable error"\n'
        )
    }
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=[dcgm, *pods],
        events=[],
        daemonsets=[*dsets, daemonset("nvidia-dcgm-exporter", ready=0)],
        nodes=[node(allocatable="0", capacity="1")],
        logs=logs,
    )
    assert rows(diags) == ["allocatable-zero", "dcgm-exporter-failing"]
    d = diags[-1]
    assert d.blocking is False
    assert d.variant == "profiling-unsupported"
    assert "Profiling module returned an unrecoverable error" in d.detail
    assert "not blocking" in diagnose.render(diags)


# --- other pod failures -----------------------------------------------------------------------


def test_image_pull_failure() -> None:
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Pending",
        gpus=1,
        statuses=[
            waiting(
                "cuda",
                "ImagePullBackOff",
                'Back-off pulling image "nvidia/cuda:12.4.1-base-ubuntu22.04"',
                image="nvidia/cuda:12.4.1-base-ubuntu22.04",
            )
        ],
    )
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["image-pull-failed"]
    assert "minikube image load nvidia/cuda:12.4.1-base-ubuntu22.04" in diags[0].fix


def test_admission_refusal_of_the_gpu_is_a_failed_pod() -> None:
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Failed",
        gpus=1,
        reason="UnexpectedAdmissionError",
        message="Allocate failed due to requested number of devices unavailable for "
        "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected",
    )
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["pod-failed"]
    assert "refused the GPU at admission" in diags[0].fix


def test_node_not_ready_comes_first() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(ready=False, allocatable=None)]
    )
    assert rows(diags) == ["node-not-ready", "allocatable-zero"]


def test_render_numbers_blocks_with_all_fields() -> None:
    d = Diagnosis(
        row="operator-pending",
        object="pod gpu-operator/x",
        reason="Pending",
        detail="0/1 nodes are available: 1 Insufficient cpu.",
        fix="give the node >= 4 CPUs",
        variant="insufficient-cpu",
    )
    text = diagnose.render([d, d])
    assert text.startswith("[1] operator-pending (insufficient-cpu), blocking\n")
    assert "\n[2] operator-pending" in text
    for field in ("object: pod gpu-operator/x", "reason: Pending", "detail: 0/1", "fix:    give"):
        assert field in text


# --- Helm -------------------------------------------------------------------------------------


def test_helm_name_in_use_gives_the_exact_uninstall() -> None:
    d = diagnose.diagnose_helm_error("Error: INSTALLATION FAILED: cannot re-use a name that is still in use")
    assert d is not None
    assert d.row == "helm-name-in-use"
    assert "helm uninstall gpu-operator -n gpu-operator" in d.fix
    assert "pulumi up" in d.fix


def test_helm_timeout_without_cluster_state_says_how_to_look() -> None:
    d = diagnose.diagnose_helm_error("Error: INSTALLATION FAILED: context deadline exceeded")
    assert d is not None
    assert d.row == "helm-timeout"
    assert d.variant == "no-cluster-state"
    assert "kubectl -n gpu-operator get pods" in d.fix


def test_helm_timeout_names_the_pod_that_was_not_ready() -> None:
    operator = pod(
        "gpu-operator-6d8f9c7b5d-q7x2m",
        phase="Pending",
        node_name=None,
        labels={"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"},
    )
    ev = event(
        "gpu-operator-6d8f9c7b5d-q7x2m",
        "FailedScheduling",
        "0/1 nodes are available: 1 Insufficient cpu.",
    )
    d = diagnose.diagnose_helm_error(
        "Error: UPGRADE FAILED: timed out waiting for the condition",
        pods=[operator],
        events=[ev],
        daemonsets=[],
        nodes=[node(allocatable=None, capacity=None)],
    )
    assert d is not None
    assert d.row == "helm-timeout"
    assert d.variant == "operator-pending"
    assert d.object == "pod gpu-operator/gpu-operator-6d8f9c7b5d-q7x2m"
    assert "Insufficient cpu" in d.detail
    assert "minikube start --cpus 4 --memory 8g" in d.fix
    assert "timed out" in d.reason


def test_helm_timeout_with_healthy_cluster_suggests_a_longer_wait() -> None:
    pods, dsets = healthy_operator()
    d = diagnose.diagnose_helm_error(
        "Error: context deadline exceeded", pods=pods, events=[], daemonsets=dsets, nodes=[node()]
    )
    assert d is not None
    assert d.variant == "slow"
    assert "operatorTimeoutSeconds" in d.fix


def test_helm_leftover_crd() -> None:
    d = diagnose.diagnose_helm_error(
        "Error: INSTALLATION FAILED: rendered manifests contain a resource that already exists. "
        'Unable to continue with install: CustomResourceDefinition "clusterpolicies.nvidia.com" '
        'in namespace "" exists and cannot be imported into the current release: invalid '
        "ownership metadata"
    )
    assert d is not None
    assert d.row == "helm-resource-exists"
    assert "kubectl delete customresourcedefinition clusterpolicies.nvidia.com" in d.fix


def test_helm_unknown_error_is_none() -> None:
    assert diagnose.diagnose_helm_error("Error: something nobody has seen") is None


# --- minikube start ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stderr",
    [
        "X Exiting due to PROVIDER_DOCKER_ERROR: docker run ...: exit status 125\n"
        'stderr:\ndocker: Error response from daemon: could not select device driver "" '
        "with capabilities: [[gpu]].\n",
        "docker: Error response from daemon: unknown or invalid runtime name: nvidia.\n",
        "docker: Error response from daemon: failed to create task for container: "
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1\n",
    ],
)
def test_minikube_start_gpu_failure(stderr: str) -> None:
    d = diagnose.diagnose_minikube_start(stderr)
    assert d.row == "minikube-start-failed"
    assert d.variant == "docker-gpu-runtime"
    assert "sudo nvidia-ctk runtime configure --runtime=docker" in d.fix
    assert "docker run --rm --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi" in d.fix
    assert d.detail


def test_minikube_start_unknown_failure_still_gives_the_chapter_reaction() -> None:
    d = diagnose.diagnose_minikube_start("E1129 something odd\n! StartHost failed\n")
    assert d.variant == "unknown"
    assert "docker run --rm --gpus all" in d.fix
    assert d.detail == "! StartHost failed"


def test_minikube_start_docker_not_running() -> None:
    d = diagnose.diagnose_minikube_start(
        'X Exiting due to PROVIDER_DOCKER_NOT_RUNNING: "docker version" exit status 1: '
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.\n"
    )
    assert d.variant == "docker-not-running"
