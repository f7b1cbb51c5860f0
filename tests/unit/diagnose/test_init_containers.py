"""Init containers and the validator (:mod:`gpulab.diagnose.init_containers`)."""

from __future__ import annotations

from gpulab import diagnose

from .builders import NS, healthy_operator, node, pod, running, waiting

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


# --- how long it has been stuck ----------------------------------------------------------------


def test_an_init_container_waiting_to_start_is_stuck_since_the_pod_did_not_initialize() -> None:
    from datetime import UTC, datetime

    validator = pod(
        "nvidia-operator-validator-5hq8d",
        phase="Pending",
        labels={"app": "nvidia-operator-validator"},
        init_statuses=[waiting("driver-validation", "PodInitializing")],
        conditions=[
            {
                "type": "Initialized",
                "status": "False",
                "reason": "ContainersNotInitialized",
                "lastTransitionTime": "2026-11-29T08:00:00Z",
            }
        ],
    )
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=[*pods, validator],
        events=[],
        daemonsets=dsets,
        nodes=[node()],
        now=datetime(2026, 11, 29, 10, 30, 15, tzinfo=UTC),
    )
    d = next(x for x in diags if x.row == "validator-stuck")
    assert (
        "waiting (PodInitializing), stuck for 2h 30m (not initialized since 2026-11-29T08:00:00Z)" in d.reason
    )
    assert "minikube -p gpu-lab ssh -- nvidia-smi" in d.fix  # driver-validation's own fix


def test_each_validator_init_container_gets_its_own_fix() -> None:
    from gpulab.core import fixes_operator

    ns, name = "gpu-operator", "nvidia-operator-validator-x"
    assert "hostPaths.driverInstallDir" in fixes_operator.validator_init("driver-validation", ns, name)
    assert "nvidia runtime class" in fixes_operator.validator_init("toolkit-validation", ns, name)
    assert "app=nvidia-cuda-validator" in fixes_operator.validator_init("cuda-validation", ns, name)
    assert "allocatable nvidia.com/gpu" in fixes_operator.validator_init("plugin-validation", ns, name)
    assert fixes_operator.validator_init("other", ns, name) == f"scripts/kubectl -n {ns} logs {name} -c other"
