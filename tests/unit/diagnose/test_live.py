"""gpulab.diagnose.live: which containers' logs the live diagnosis reads, and its context."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kubernetes.client.rest import ApiException

from gpulab.core.names import DEFAULT_PROFILE
from gpulab.diagnose.live import Context, _log_containers, _read_log, _unhealthy_containers


def test_the_logs_read_are_those_of_crashing_restarting_or_stuck_containers() -> None:
    pod = {
        "status": {
            "containerStatuses": [
                {"name": "ok", "state": {"running": {}}, "restartCount": 0},
                {"name": "crash", "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
                {"name": "restarted", "state": {"running": {}}, "restartCount": 2},
            ],
            "initContainerStatuses": [
                {"name": "done", "ready": True, "state": {"terminated": {"exitCode": 0}}},
                {"name": "stuck", "ready": False, "state": {"running": {"startedAt": "t"}}},
            ],
        }
    }
    # Init containers first: a pod stuck in init is stuck there.
    assert _unhealthy_containers(pod) == ["stuck", "crash", "restarted"]
    assert _unhealthy_containers({}) == []


def test_a_container_that_terminated_with_an_error_is_read_even_with_0_restarts() -> None:
    # restartPolicy: Never (the smoke Pod, the validator's workload Pods): no restart ever.
    pod = {
        "status": {
            "containerStatuses": [
                {"name": "cuda", "restartCount": 0, "state": {"terminated": {"exitCode": 1}}},
                {"name": "fine", "restartCount": 0, "state": {"terminated": {"exitCode": 0}}},
            ],
            "initContainerStatuses": [
                {"name": "cuda-validation", "ready": False, "state": {"terminated": {"exitCode": 1}}},
            ],
        }
    }
    assert _unhealthy_containers(pod) == ["cuda-validation", "cuda"]


class _Core:
    """A CoreV1Api stand-in: logs per (container, previous); a missing one is a 400."""

    def __init__(self, logs: dict[tuple[str, bool], str]) -> None:
        self.logs = logs
        self.calls: list[tuple[str, bool]] = []

    def read_namespaced_pod_log(self, name: str, ns: str, **kw: Any) -> Any:
        assert kw["_preload_content"] is False, "the log is read raw (pod_log)"
        key = (kw["container"], bool(kw.get("previous")))
        self.calls.append(key)
        if key not in self.logs:
            raise ApiException(status=400, reason="previous terminated container not found")
        return SimpleNamespace(data=self.logs[key].encode())


def _pod(cs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "gpu-operator"}, "status": {"containerStatuses": [cs]}}


def test_a_restarted_container_that_runs_again_is_read_with_its_previous_run() -> None:
    core = _Core({("c", True): "E crash line", ("c", False): "I started again"})
    pod = _pod({"name": "c", "restartCount": 3, "state": {"running": {}}})
    assert _read_log(core, pod, "c") == "E crash line\nI started again"
    assert core.calls == [("c", True), ("c", False)]


def test_a_crash_looping_container_is_read_once_and_no_log_is_none() -> None:
    core = _Core({("c", False): "E last run"})
    waiting = _pod({"name": "c", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}})
    assert _read_log(core, waiting, "c") == "E last run"
    assert core.calls == [("c", False)]
    assert _read_log(_Core({}), waiting, "c") is None  # kwok serves no log


def test_context_defaults_to_the_lab_profile_and_no_host_facts() -> None:
    assert Context() == Context(expected_gpus=None, host_max_cuda=None, profile=DEFAULT_PROFILE)


def test_a_running_plugins_log_is_read_for_the_plugin_the_gate_names() -> None:
    """A plugin that reports its GPU unhealthy runs on: its log says why allocatable is 0. The
    operator's plugin pods are recognised by name, another plugin's by the DaemonSet given."""

    def plugin(name: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": "kube-system"},
            "status": {
                "containerStatuses": [{"name": "device-plugin", "ready": True, "state": {"running": {}}}]
            },
        }

    assert _log_containers(plugin("nvidia-device-plugin-daemonset-x2k")) == ["device-plugin"]
    assert _log_containers(plugin("gpulab-device-plugin-9t87r")) == []
    assert _log_containers(plugin("gpulab-device-plugin-9t87r"), "gpulab-device-plugin") == ["device-plugin"]


def test_a_running_lab_pod_and_dcgm_exporter_have_their_logs_read() -> None:
    """A container that lost its GPU keeps running: NVIDIA/nvidia-docker#1671's "Failed to
    initialize NVML: Unknown Error" is only in the running container's log."""
    lab = {
        "metadata": {
            "name": "gpu-compute",
            "namespace": "default",
            "labels": {"app.kubernetes.io/part-of": "gpu-lab"},
        },
        "status": {"containerStatuses": [{"name": "vectoradd-0", "state": {"running": {}}}]},
    }
    assert _log_containers(lab) == ["vectoradd-0"]
    exporter = {
        "metadata": {"name": "nvidia-dcgm-exporter-abcde", "namespace": "gpu-operator"},
        "status": {"containerStatuses": [{"name": "nvidia-dcgm-exporter", "state": {"running": {}}}]},
    }
    assert _log_containers(exporter) == ["nvidia-dcgm-exporter"]
    other = {
        "metadata": {"name": "web", "namespace": "default"},
        "status": {"containerStatuses": [{"name": "c", "state": {"running": {}}}]},
    }
    assert _log_containers(other) == []
