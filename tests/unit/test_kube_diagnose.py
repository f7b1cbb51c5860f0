"""gpulab.kube_diagnose: which containers' logs the live diagnosis reads, and its context."""

from __future__ import annotations

from gpulab.kube_diagnose import Context, _unhealthy_containers
from gpulab.names import DEFAULT_PROFILE


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
    assert _unhealthy_containers(pod) == ["crash", "restarted", "stuck"]
    assert _unhealthy_containers({}) == []


def test_context_defaults_to_the_lab_profile_and_no_host_facts() -> None:
    assert Context() == Context(expected_gpus=None, host_max_cuda=None, profile=DEFAULT_PROFILE)
