"""gpulab.kube.queues: the proof's Jobs and Pod, and how it reads Kueue's Workloads."""

from __future__ import annotations

from gpulab.config.queues import QUEUE_LABEL
from gpulab.kube import queues


def test_a_proof_job_asks_for_its_gpus_in_the_queue_and_starts_suspended() -> None:
    job = queues.job_manifest("j", "default", "gpu-lab", "nvidia.com/gpu", 1, 3, "img:1")
    assert job["metadata"]["labels"][QUEUE_LABEL] == "gpu-lab"
    spec = job["spec"]
    assert (spec["parallelism"], spec["completions"], spec["suspend"], spec["backoffLimit"]) == (
        3,
        3,
        True,
        0,
    )
    pod = spec["template"]
    (c,) = pod["spec"]["containers"]
    assert c["resources"]["limits"] == c["resources"]["requests"] == {"nvidia.com/gpu": 1}
    assert c["command"] == ["sleep", str(queues.RUN_SECONDS)] and pod["spec"]["restartPolicy"] == "Never"
    # kwok's job-complete Stage waits this long in the sim (variants/sim/stages/40-pod-complete-job.yaml).
    assert pod["metadata"]["annotations"] == {queues.RUN_TIME_ANNOTATION: f"{queues.RUN_SECONDS}s"}
    # No minimum parallelism: Kueue admits the whole pod set or nothing.
    assert "annotations" not in job["metadata"]


def test_the_unqueued_pod_has_no_queue_label() -> None:
    pod = queues.unqueued_pod("default", "img:1")
    assert QUEUE_LABEL not in pod["metadata"]["labels"] and pod["metadata"]["name"] == queues.UNQUEUED


def test_workloads_are_matched_to_their_job_and_read_by_condition() -> None:
    wl = {
        "metadata": {
            "name": "job-a-1",
            "ownerReferences": [{"uid": "u1"}],
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True", "lastTransitionTime": "2026-01-01T00:00:07Z"},
            ]
        },
    }
    assert queues.owned_by([{"metadata": {"ownerReferences": [{"uid": "u2"}]}}, wl], "u1") is wl
    assert queues.owned_by([wl], "u3") is None
    assert (
        queues.is_true(wl, "Admitted")
        and not queues.is_true(wl, "Finished")
        and not queues.is_true(None, "x")
    )
    row = queues.job_row("a", "first", 2, wl, None)
    assert (row["workload"], row["admittedAt"], row["finishedAt"], row["waitedSeconds"]) == (
        "job-a-1",
        "2026-01-01T00:00:07Z",
        None,
        7.0,
    )
    assert queues.seconds_between(None, "2026-01-01T00:00:07Z") is None
