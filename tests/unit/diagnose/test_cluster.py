""":func:`gpulab.diagnose.diagnose_cluster` as a whole."""

from __future__ import annotations

from gpulab import diagnose

from .builders import healthy_operator, node, pod

# --- healthy ----------------------------------------------------------------------------------


def test_healthy_cluster_has_no_diagnosis() -> None:
    pods, dsets = healthy_operator()
    smoke = pod("gpu-smoke", "default", phase="Succeeded", gpus=1)
    diags = diagnose.diagnose_cluster(
        pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()], expected_gpus=1
    )
    assert diags == []
    assert "no problem found" in diagnose.render(diags)
