"""The MicroK8s variant through the real engine: the preview plans the snap's install command,
the operator with its toolkit pointed at the snap's containerd, and the smoke test, and the
policy pack (``toolkit-fits-runtime`` among its mandatory policies) accepts them.

No snapd or root here: with ``hostProbe: off`` (the planning mode) the program runs no host
command.
"""

from __future__ import annotations

import pytest

from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.engine


def test_microk8s_preview_plans_the_install_and_points_the_toolkit_at_the_snap_s_containerd(
    project: Project,
) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart (set GPULAB_CHART_PATH)")
    project.init("microk8s", hostProbe="off", chartPath=chart)
    p = project.pulumi(
        "preview", "--stack", "microk8s", "--diff", "--policy-pack", "policy", check=False, timeout=300
    )
    text = p.stdout + p.stderr
    assert p.returncode == 0 and "[mandatory]" not in text, text
    for name in ("gpulab:microk8s:MicroK8sCluster", "microk8s-cluster", "gpu-operator-release", "smoke-pod"):
        assert name in text, f"{name} not planned:\n{text}"
    assert "variants.microk8s.ctl" in text and "1.35/stable" in text
    assert "/var/snap/microk8s/current/args/containerd-template.toml" in text, text
    assert "/var/snap/microk8s/common/run/containerd.sock" in text, text
    assert "file=/var/snap/microk8s/current/args/containerd.toml" in text, text
    assert "runtimeClassName" not in text, text
