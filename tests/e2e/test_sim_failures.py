"""End to end: failures the lab was never shown fail fast, with the cause and a fix that works
(issue 23), on the real engine against the sim lab's real control plane.

One lab (``make lab`` on the sim stack, in a throwaway copy of the project), then, in order:

* a changed check argument (``smokeTimeoutSeconds``) replaces the smoke Pod: a new UID, and
  the check's ``measuredAt`` is when that Pod's container finished;
* an image the registry refuses (``registry.invalid/...``: the sim's Stage answers as
  containerd does for a tag the registry does not have, NVIDIA/gpu-operator#273): the smoke
  wait stops within 60 s naming the image and the fix; the fix, run as printed, recovers;
* a node under DiskPressure (the kubelet's condition, set by ``variants.sim.ctl.faults``; the
  real controller-manager taints the node, the real scheduler keeps the Pod off it): the
  smoke wait stops within 60 s with the prune and the wait for the condition; the pressure
  cleared, the printed wait and ``make lab`` recover;
* a chart whose templates need an API the server lacks (a copy of the chart with a
  ServiceMonitor, NVIDIA/gpu-operator#453): the pre-release check refuses before the release;
* a sharing config naming a ConfigMap that does not exist (``sharingConfigMap``): the
  pre-release check refuses; the ConfigMap created as the fix prints, ``make lab`` passes.

Then ``make destroy`` leaves nothing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sandbox import Project, make_project, missing_toolchain, shared_chart, toolchain_env

# One module-scoped lab, its tests in order: one worker runs them all (make test: --dist loadgroup).
pytestmark = [pytest.mark.sim, pytest.mark.xdist_group("sim-failures")]

#: Every failure must end within this many seconds of the step that meets it (issue 23), as the
#: lab's own message says it ("stopped after Ns": the lab's clock, from the step's start).
LIMIT_S = 60
#: A whole `pulumi up` that fails at once must end well before the wait it would otherwise hit,
#: operatorTimeoutSeconds (600 s by default, Pulumi.yaml): a plain up alone takes 25-80 s on a
#: loaded 2-core machine, so the bound is the wait's, with that margin, not a benchmark.
UP_BOUND_S = 300
PROFILE = "e2e-failures"
NODE = "gpu-sim-node"
REFUSED = "registry.invalid/nvidia/cuda:12.4.1-base-ubuntu22.04"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    env = toolchain_env()
    why = missing_toolchain(env)
    if why:
        pytest.skip(why)
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    project = make_project(tmp_path_factory.mktemp("failures"), env)
    project.init("sim", chartPath=chart, profile=PROFILE)
    try:
        up = _up(project)
        assert up.returncode == 0, _tail(up)
        yield project
    finally:
        down = project.lab("destroy")
        assert down.returncode == 0, _tail(down)
        assert not (project.dir / ".state" / "sim" / PROFILE).exists()


def _up(project: Project) -> subprocess.CompletedProcess[str]:
    return project.pulumi("up", "--yes", "--skip-preview", "--stack", "sim", check=False, timeout=900)


def _tail(p: subprocess.CompletedProcess[str], n: int = 4000) -> str:
    return (p.stdout + p.stderr)[-n:]


def _set(project: Project, key: str, value: str) -> None:
    project.pulumi("config", "set", f"gpu-lab:{key}", value, "--stack", "sim")


def _run_fix(project: Project, fix: str) -> subprocess.CompletedProcess[str]:
    """A printed fix, run as printed from the copy's root (the commands name scripts/...)."""
    return subprocess.run(
        ["bash", "-c", fix],
        cwd=project.dir,
        env={**project.env, "GPULAB_STACK": "sim", "GPULAB_CHOICE_QUIET": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )


def _smoke_pod(project: Project) -> dict[str, Any]:
    from kubernetes import client

    api = project.kube_api("sim")
    pod: dict[str, Any] = api.sanitize_for_serialization(
        client.CoreV1Api(api).read_namespaced_pod("gpu-smoke", "default")
    )
    return pod


def _failed_fast(p: subprocess.CompletedProcess[str], what: str) -> tuple[int, str]:
    """The run failed with ``<what> stopped after Ns`` (N < LIMIT_S), no traceback; returns
    (N, the text)."""
    text = p.stdout + p.stderr
    assert p.returncode != 0, _tail(p)
    assert "Traceback" not in text, _tail(p)
    stopped = re.search(re.escape(what) + r".*? stopped after (\d+)s", text)
    assert stopped, _tail(p)
    after = int(stopped.group(1))
    assert after < LIMIT_S, f"{what} took {after}s"
    return after, text


def test_a_changed_check_argument_replaces_the_smoke_pod(lab: Project) -> None:
    before = _smoke_pod(lab)
    _set(lab, "smokeTimeoutSeconds", "301")
    up = _up(lab)
    assert up.returncode == 0, _tail(up)
    after = _smoke_pod(lab)
    assert after["metadata"]["uid"] != before["metadata"]["uid"]
    inputs = after["metadata"]["annotations"]["gpulab.dev/check-inputs"]
    assert inputs != before["metadata"]["annotations"]["gpulab.dev/check-inputs"]
    finished = after["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    measured = json.loads(lab.pulumi("stack", "output", "--json", "--stack", "sim").stdout)
    smoke = json.dumps(measured)
    assert finished.replace("Z", "+00:00") in smoke, smoke[:2000]


def test_an_image_the_registry_refuses_fails_within_60s_and_its_fix_recovers(lab: Project) -> None:
    _set(lab, "smokeImage", REFUSED)
    t0 = time.monotonic()
    p = _up(lab)
    wall = time.monotonic() - t0
    _, text = _failed_fast(p, "the wait for Pod default/gpu-smoke")
    assert f"image {REFUSED} cannot be pulled: the registry answered and refused the image" in text
    assert "[pull-refused]" in text
    fix = re.search(
        r"fix: go back to the lab's pinned image \([^)]+\): (scripts/pulumi "
        r"config rm gpu-lab:smokeImage && make lab)",
        text,
    )
    assert fix, _tail(p)
    print(f"\nrefused pull: pulumi up failed after {wall:.1f}s")
    done = _run_fix(lab, fix.group(1))
    assert done.returncode == 0, _tail(done)
    assert _smoke_pod(lab)["spec"]["containers"][0]["image"] != REFUSED


def test_disk_pressure_fails_within_60s_and_the_printed_wait_recovers(lab: Project) -> None:
    env = {**lab.env, "GPULAB_KUBECONFIG": lab.secret_outputs("sim")["kubeconfig"]}

    def fault(*extra: str) -> None:
        subprocess.run(
            [
                str(lab.dir / ".venv" / "bin" / "python"),
                "-m",
                "variants.sim.ctl.faults",
                "pressure",
                "--node",
                NODE,
                *extra,
            ],
            cwd=lab.dir,
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )

    fault()
    try:
        _set(lab, "smokeTimeoutSeconds", "302")  # a new smoke Pod meets the pressure
        t0 = time.monotonic()
        p = _up(lab)
        wall = time.monotonic() - t0
        _, text = _failed_fast(p, "the wait for Pod default/gpu-smoke")
        assert f"node {NODE} reports DiskPressure (KubeletHasDiskPressure: kubelet has disk pressure)" in text
        assert "[node-pressure]" in text
        wait = re.search(
            r"then (scripts/kubectl wait --for=condition=DiskPressure=False "
            r"node/\S+ --timeout=6m && make lab)",
            text,
        )
        assert wait, _tail(p)
        print(f"\ndisk pressure: pulumi up failed after {wall:.1f}s")
    finally:
        fault("--clear")  # what the prune does on a real node
    done = _run_fix(lab, wait.group(1))
    assert done.returncode == 0, _tail(done)


def test_a_chart_needing_an_api_the_server_lacks_is_refused_before_the_release(
    lab: Project, tmp_path: Path
) -> None:
    chart = shared_chart()
    assert chart is not None
    copy = tmp_path / "gpu-operator"
    shutil.copytree(chart, copy)
    (copy / "templates" / "servicemonitor.yaml").write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: gpu-operator\n"
        "spec:\n  selector: {}\n",
        encoding="utf-8",
    )
    _set(lab, "chartPath", str(copy))
    try:
        t0 = time.monotonic()
        p = _up(lab)
        wall = time.monotonic() - t0
        text = p.stdout + p.stderr
        assert p.returncode != 0 and "Traceback" not in text, _tail(p)
        assert wall < UP_BOUND_S, f"pulumi up took {wall:.0f}s"
        assert (
            "compat apis: the chart creates a ServiceMonitor (monitoring.coreos.com/v1) "
            "from templates/servicemonitor.yaml" in text
        )
        assert 'no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"' in text
        assert "install what serves monitoring.coreos.com/v1 ServiceMonitor first" in text
        print(f"\nchart API: pulumi up failed after {wall:.1f}s")
    finally:
        _set(lab, "chartPath", chart)
    up = _up(lab)
    assert up.returncode == 0, _tail(up)


def test_a_sharing_config_naming_a_missing_configmap_is_refused_and_the_printed_create_recovers(
    lab: Project, tmp_path: Path
) -> None:
    _set(lab, "sharingConfigMap", "lab-sharing:any")
    t0 = time.monotonic()
    p = _up(lab)
    wall = time.monotonic() - t0
    text = p.stdout + p.stderr
    assert p.returncode != 0 and "Traceback" not in text, _tail(p)
    assert wall < UP_BOUND_S, f"pulumi up took {wall:.0f}s"
    assert "the device plugin's sharing config names ConfigMap gpu-operator/lab-sharing" in text
    create = re.search(
        r"create it first \((scripts/kubectl -n gpu-operator create "
        r"configmap lab-sharing --from-file=any=)<file>\)",
        text,
    )
    assert create, _tail(p)
    print(f"\nmissing ConfigMap: pulumi up failed after {wall:.1f}s")
    config = tmp_path / "any.yaml"
    config.write_text("version: v1\nflags:\n  migStrategy: none\n", encoding="utf-8")
    made = _run_fix(lab, create.group(1) + str(config))
    assert made.returncode == 0, _tail(made)
    up = _up(lab)
    assert up.returncode == 0, _tail(up)
