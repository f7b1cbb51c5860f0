"""The kind and k3s variants through the real engine: previews plan every resource, the
policy pack accepts their operator values, and kind's preflight stops a host that is not
prepared the nvkind way before anything is planned.

No kind, Docker or root here: with ``hostProbe: off`` (the planning mode) the program runs
no host command; the preflight test puts test doubles of nvidia-smi, docker and kind on
PATH. The existing variant's preview needs a live API server; it runs in
tests/e2e/test_existing_lab.py against the simulated control plane.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.support.sandbox import Project, shared_chart

pytestmark = pytest.mark.engine

CAPTURE = (
    Path(__file__).resolve().parents[2] / "gpulab" / "host" / "captures" / "h200-1gpu" / "nvidia-smi.txt"
)
COMMON = (
    "gpu-operator-namespace",
    "gpu-operator-release",
    "gpu-operator-gate",
    "smoke-pod",
    "smoke-check",
    "kubernetes:helm.sh/v3:Release",
)


def _chart() -> str:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart (set GPULAB_CHART_PATH)")
    return chart


def _preview(project: Project, stack: str) -> str:
    p = project.pulumi(
        "preview", "--stack", stack, "--diff", "--policy-pack", "policy", check=False, timeout=300
    )
    text = p.stdout + p.stderr
    assert p.returncode == 0, text
    assert "[mandatory]" not in text, text
    return text


def test_kind_preview_plans_the_cluster_the_operator_without_toolkit_and_the_smoke_test(
    project: Project,
) -> None:
    project.init("kind", hostProbe="off", chartPath=_chart(), profile="kind-plan")
    text = _preview(project, "kind")
    for name in ("gpulab:kind:KindCluster", "kind-cluster", *COMMON):
        assert name in text, f"{name} not planned:\n{text}"
    assert "variants.kind.ctl" in text and ".state/kind/kind-plan" in text
    assert "kindest/node:v1.34.0@sha256:7416a61b" in text
    assert 'runtimeClassName: "nvidia"' in text, text
    # The stack file and config keep the operator's toolkit off; the policy accepted it.
    assert "toolkit-fits-runtime" not in text
    export = project.pulumi("stack", "export", "--stack", "kind").stdout
    assert '"type": "gpulab:' not in export, "a preview must create nothing"


def test_k3s_preview_plans_the_install_and_points_the_toolkit_at_k3s_containerd(project: Project) -> None:
    project.init("k3s", hostProbe="off", chartPath=_chart())
    text = _preview(project, "k3s")
    for name in ("gpulab:k3s:K3sCluster", "k3s-cluster", *COMMON):
        assert name in text, f"{name} not planned:\n{text}"
    assert "variants.k3s.ctl" in text and "v1.34.1+k3s1" in text
    assert "/run/k3s/containerd/containerd.sock" in text, text
    assert "/var/lib/rancher/k3s/agent/etc/containerd/config.toml" in text, text
    assert 'runtimeClassName: "nvidia"' in text, text


QUERY_ROW = "0, NVIDIA H200, GPU-00000000-0000-4000-8000-000000000000, 580.159.04, 143771, 00000000:00:06.0"
FAKE_NVIDIA_SMI = f"""#!/bin/sh
case "$1" in
  --query-gpu=*) echo "{QUERY_ROW}" ;;
  *) cat {CAPTURE} ;;
esac
"""
# A daemon with the nvidia runtime loaded but runc as the default: nvkind's first set-up
# step was skipped.
FAKE_DOCKER = """#!/bin/sh
echo '{"Runtimes": {"nvidia": {}, "runc": {}}, "DefaultRuntime": "runc"}'
"""
FAKE_KIND = """#!/bin/sh
echo "fake kind: must not run during preview" >&2
exit 1
"""


def test_kind_preview_on_a_host_not_prepared_stops_in_preflight(project: Project, tmp_path: Path) -> None:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    for name, text in (
        ("nvidia-smi", FAKE_NVIDIA_SMI),
        ("docker", FAKE_DOCKER),
        ("kind", FAKE_KIND),
        ("nvidia-ctk", "#!/bin/sh\nexit 0\n"),
    ):
        p = bin_dir / name
        p.write_text(text)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    project.env["PATH"] = f"{bin_dir}:{project.env['PATH']}"
    project.init("kind", chartPath=_chart())
    p = project.pulumi("preview", "--stack", "kind", check=False, timeout=300)
    text = p.stdout + p.stderr
    assert p.returncode != 0, text
    assert "docker-default-runtime" in text and "'runc', not nvidia" in text, text
    assert "nvidia-ctk runtime configure --runtime=docker --set-as-default" in text, text
    if not Path("/etc/nvidia-container-runtime/config.toml").exists():
        assert "nvidia-volume-mounts" in text, text
    assert "kind-cluster" not in text
