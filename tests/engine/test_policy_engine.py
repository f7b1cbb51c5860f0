"""The checklist policy pack through the real engine (issue #5's two engine tests).

* ``pulumi preview --policy-pack policy`` of a sim stack whose smoke image needs CUDA 13.1,
  while the host probe (the h200-1gpu capture: driver 580.159.04, CUDA 13.0) reports 13.0,
  fails with ``smoke-image-cuda-fits-host``'s message.
* ``pulumi up --policy-pack policy`` of the simulated lab passes every checklist item or
  marks it "not observable in the simulated lab" (advisory, from ``checklist-unverified``):
  asserted on the up of tests/e2e/test_sim_lab.py (one lab for both).

Both need ``make toolchain`` (the ``project`` fixture skips without the CLI) and the
simulated control plane's binaries on PATH (the sim variant's preflight runs even at
preview), and the offline gpu-operator chart (``$GPULAB_CHART_PATH`` or the workplace copy).
"""

from __future__ import annotations

import shutil

import pytest

from .conftest import Project, shared_chart

pytestmark = pytest.mark.engine

SIM_TOOLS = ("kwokctl", "kwok", "kube-apiserver", "etcd", "kubectl")
CUDA_131 = "nvidia/cuda:13.1.0-base-ubuntu24.04"


def _sim_ready(project: Project) -> str:
    """The chart path; skips when the sim lab cannot run on this machine."""
    missing = [t for t in SIM_TOOLS if shutil.which(t, path=project.env["PATH"]) is None]
    if missing:
        pytest.skip(
            f"simulated control plane not built ({', '.join(missing)} not on PATH): run `make toolchain`"
        )
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart (set GPULAB_CHART_PATH)")
    return chart


def test_preview_refuses_a_smoke_image_newer_than_the_hosts_cuda(project: Project) -> None:
    chart = _sim_ready(project)
    project.init("sim", chartPath=chart, profile="policy-cuda", smokeImage=CUDA_131)
    p = project.pulumi("preview", "--stack", "sim", "--policy-pack", "policy", check=False, timeout=300)
    text = p.stdout + p.stderr
    assert p.returncode != 0, text
    assert "[mandatory]" in text and "smoke-image-cuda-fits-host" in text, text
    # The message names image CUDA, host driver, max CUDA and the newest tag that fits.
    assert "needs CUDA 13.1" in text, text
    assert "driver 580.159.04" in text and "CUDA 13.0 at most" in text, text
    assert "nvidia/cuda:13.0.2-base-ubuntu24.04" in text, text
    # A preview creates nothing.
    export = project.pulumi("stack", "export", "--stack", "sim").stdout
    assert '"type": "gpulab:' not in export


def test_the_pack_starts_from_its_declared_virtualenv_whatever_path_holds(project: Project) -> None:
    """The pack runs the way Pulumi's Python host starts one: ``PulumiPolicy.yaml``'s
    ``runtime.options.virtualenv`` (``../.venv``), resolved against the pack's directory
    (pulumi/pulumi v3.259.0 sdk/python/cmd/pulumi-language-python ``RunPlugin``,
    sdk/python/toolchain/pip.go). With no venv on PATH and no PULUMI_PYTHON_CMD, the ambient
    ``python3`` has no ``pulumi_policy``: only the declared virtualenv can start the pack, and
    the violation below is its own output."""
    chart = _sim_ready(project)
    bins = [p for p in project.env["PATH"].split(":") if not p.rstrip("/").endswith(".venv/bin")]
    for var in ("PULUMI_PYTHON_CMD", "VIRTUAL_ENV"):
        project.env.pop(var, None)
    project.env["PATH"] = ":".join(bins)
    ambient = shutil.which("python3", path=project.env["PATH"])
    if ambient:
        import subprocess

        probe = subprocess.run([ambient, "-c", "import pulumi_policy"], capture_output=True)
        if probe.returncode == 0:
            pytest.skip(f"the ambient {ambient} has pulumi_policy: it could start the pack without the venv")
    project.init("sim", chartPath=chart, profile="policy-venv", smokeImage=CUDA_131)
    p = project.pulumi("preview", "--stack", "sim", "--policy-pack", "policy", check=False, timeout=300)
    text = p.stdout + p.stderr
    assert "smoke-image-cuda-fits-host" in text and "needs CUDA 13.1" in text, text
    assert "No module named" not in text, text
