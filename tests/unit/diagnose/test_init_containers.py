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
