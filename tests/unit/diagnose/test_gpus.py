"""GPU accounting over pods (:mod:`gpulab.diagnose.gpus`)."""

from __future__ import annotations

from gpulab import diagnose

from .builders import pod


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
