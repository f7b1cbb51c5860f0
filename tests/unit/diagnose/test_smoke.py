"""The smoke Pod's rows (:mod:`gpulab.diagnose.smoke`)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab import diagnose

from .builders import NS, daemonset, event, healthy_operator, node, pod, rows, running, waiting

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
