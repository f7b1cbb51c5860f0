"""End to end: the simulated lab through the real engine against a real API server.

up (with the policy pack) -> outputs, the compute check and the pack's verdict -> no-op up ->
a 2-GPU Pod stays Pending on the 1-GPU node (and the diagnosis names who holds the GPU) ->
destroy -> nothing left (no process, no port, no directory). Two simulated GPUs: tests/e2e/test_sim_2gpu.py.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab import diagnose
from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card, checklist
from tests.support.sandbox import Project, kube_api, shared_chart

pytestmark = pytest.mark.sim


def _chart() -> str:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    return chart


def _cluster_pids(workdir: Path) -> list[int]:
    """PIDs of processes whose command line mentions the cluster's work directory."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(workdir) in cmd:
            pids.append(int(proc.name))
    return pids


def _listening(port: int) -> bool:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def test_simulated_lab_up_noop_contention_destroy(project: Project) -> None:
    chart = _chart()
    project.init("sim", chartPath=chart, profile="e2e-one")
    try:
        _up_noop_contention_destroy(project)
    finally:
        # Whatever failed above, leave no cluster running behind.
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", check=False)


def _topology_shown_dcgm_not_observable(o: dict[str, Any]) -> None:
    """The capture's topology is exported and labelled simulated; no DCGM exporter runs, so its
    checklist item is not observable (issue #15 points 2 and 3)."""
    topo = o[out.HOST_TOPOLOGY]
    assert topo["source"] == "capture:h200-1gpu (nvidia-smi topo -m)", topo
    assert [(g["index"], g["cpuAffinity"], g["numaNode"], g["links"]) for g in topo["gpus"]] == [
        (0, "0-15", 0, [])
    ]
    assert out.HOST_TOPOLOGY in o[out.SIMULATED_FIELDS]
    # Nothing scraped: the outputs are null, which `pulumi stack output --json` leaves out.
    assert o.get(out.DCGM_METRICS) is None and o.get(out.DCGM_MEASURED_AT) is None
    items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}
    assert items["dcgm-reports-gpus"].status == checklist.NOT_OBSERVABLE, items["dcgm-reports-gpus"]
    c = card.build_card(LabOutputs.from_json(o))
    assert c["topology"]["simulated"] is True and c["dcgm"]["status"] == "not-observable-in-simulation"
    md = card.render_markdown(c)
    assert "read with capture:h200-1gpu (nvidia-smi topo -m) *(simulated)*" in md
    assert "not observable in simulation: no DCGM exporter runs" in md


def _up_noop_contention_destroy(project: Project) -> None:
    up_s, up = project.timed("up", "--yes", "--skip-preview", "--stack", "sim", "--policy-pack", "policy")
    o = project.outputs("sim")
    _compute_check_and_the_pack(project, up, o)
    assert o[out.SIMULATED] is True
    assert o[out.ALLOCATABLE_GPUS] == 1 and o[out.CAPACITY_GPUS] == 1
    assert o[out.HOST_DRIVER_VERSION] == "580.159.04"
    assert o[out.SMOKE_DRIVER_VERSION] == o[out.HOST_DRIVER_VERSION]
    assert o[out.SMOKE_CUDA_VERSION] == "13.0"
    assert o[out.SMOKE_PHASE] == "Succeeded"
    assert "Scheduled" in o[out.SMOKE_EVENTS]
    assert o[out.CLUSTER_POLICY_STATE] == "ready"
    assert o[out.KUBERNETES_VERSION] == "v1.36.3"
    assert o[out.KUBECONFIG] == "[secret]"
    _topology_shown_dcgm_not_observable(o)

    noop_s, noop = project.timed("up", "--yes", "--skip-preview", "--stack", "sim", "--expect-no-changes")
    assert "unchanged" in noop.stdout, noop.stdout

    kubeconfig = project.secret_outputs("sim")[out.KUBECONFIG]
    server = yaml.safe_load(kubeconfig)["clusters"][0]["cluster"]["server"]
    port = int(server.rsplit(":", 1)[1])
    assert _listening(port)

    from kubernetes import client

    api = kube_api(kubeconfig)
    core = client.CoreV1Api(api)

    def gpu_pod(name: str, gpus: int, restart: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "restartPolicy": restart,
                "containers": [
                    {
                        "name": "cuda",
                        "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
                        "command": ["sleep", "infinity"],
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                    }
                ],
            },
        }

    def failed_scheduling(name: str) -> str:
        for _ in range(60):
            evs = core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
            message = " ".join(e.message or "" for e in evs if e.reason == "FailedScheduling")
            if message:
                return message
            time.sleep(1)
        return ""

    # A long-running Pod takes the node's one GPU; a second smoke Pod asks for 2.
    core.create_namespaced_pod("default", gpu_pod("gpu-holder", 1, "Always"))
    for _ in range(60):
        if core.read_namespaced_pod("gpu-holder", "default").status.phase == "Running":
            break
        time.sleep(1)
    core.create_namespaced_pod("default", gpu_pod("gpu-smoke-2", 2, "Never"))
    message = failed_scheduling("gpu-smoke-2")
    assert core.read_namespaced_pod("gpu-smoke-2", "default").status.phase == "Pending"
    assert "Insufficient nvidia.com/gpu" in message, message
    pods = [api.sanitize_for_serialization(p) for p in core.list_pod_for_all_namespaces().items]
    events = [api.sanitize_for_serialization(e) for e in core.list_event_for_all_namespaces().items]
    nodes = [api.sanitize_for_serialization(n) for n in core.list_node().items]
    text = diagnose.render(diagnose.diagnose_cluster(pods=pods, events=events, daemonsets=[], nodes=nodes))
    assert "pod default/gpu-smoke-2" in text and "Insufficient nvidia.com/gpu" in text, text
    assert "default/gpu-holder holds 1" in text, f"the diagnosis must name who holds the GPU:\n{text}"
    for name in ("gpu-holder", "gpu-smoke-2"):
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)

    workdir = project.dir / ".state" / "sim" / "e2e-one"
    assert workdir.exists()
    destroy_s, _ = project.timed("destroy", "--yes", "--skip-preview", "--stack", "sim")
    export = json.loads(project.pulumi("stack", "export", "--stack", "sim").stdout)
    assert not export["deployment"].get("resources"), export["deployment"].get("resources")
    assert not workdir.exists(), f"{workdir} left behind"
    assert _cluster_pids(workdir) == [], "cluster processes left running"
    assert not _listening(port), f"port {port} still listening"
    print(f"\ntimings: up {up_s:.1f}s, no-op up {noop_s:.1f}s, destroy {destroy_s:.1f}s")


def _compute_check_and_the_pack(
    project: Project, up: subprocess.CompletedProcess[str], o: dict[str, Any]
) -> None:
    """The compute check in the simulated lab, after an up with the policy pack: the compute
    Pod ``gpu-compute`` ran after the smoke Pod, kwok served it the vectorAdd log marked
    simulated, the check read ``Test PASSED`` from it; the outputs carry the compute keys,
    listed as simulated; ``compute-works`` reads "not observable in simulation", never a pass.
    The pack (issue #5's engine test): every item passed or marked not observable."""
    _the_pack_passed_or_marked_each_item(up.stdout + up.stderr, o)
    # The check read a log with Test PASSED from a Pod that reached Succeeded.
    assert o[out.COMPUTE_RESULT] == "passed" and o[out.COMPUTE_PHASE] == "Succeeded"
    assert o[out.COMPUTE_GPUS] == 1  # one GPU: one vectorAdd container
    # What the container listed (the capture's GPU, in its simulated log), as the check read it.
    assert o[out.COMPUTE_GPU_UUIDS] == {
        "vectoradd-0": {"gpus": ["GPU-00000000-0000-4000-8000-000000000000"], "mig": []}
    }
    assert o[out.COMPUTE_IMAGE] == "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
    assert o[out.COMPUTE_MEASURED_AT] >= o[out.SMOKE_MEASURED_AT]
    assert {out.COMPUTE_PHASE, out.COMPUTE_RESULT} <= set(o[out.SIMULATED_FIELDS])
    assert o[out.OPERAND_IMAGES] == dict.fromkeys(("devicePlugin", "toolkit", "dcgmExporter", "validator"))

    item = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}["compute-works"]
    assert item.status == "not-observable-in-simulation", item
    assert "not observable in simulation" in item.observed and item.simulated
    assert (
        checklist.overall(checklist.evaluate(LabOutputs.from_json(o))) == "pass"
    )  # the card adds "(simulated lab)"
    # The pack says so after up, without blocking it.
    assert "[compute-works] not observable in the simulated lab" in up.stdout + up.stderr

    kubeconfig = project.secret_outputs("sim")[out.KUBECONFIG]
    from kubernetes import client

    core = client.CoreV1Api(kube_api(kubeconfig))
    pod = core.read_namespaced_pod("gpu-compute", "default")
    assert pod.status.phase == "Succeeded"
    assert pod.metadata.annotations["gpulab.dev/simulated-execution"] == "true"
    assert [c.name for c in pod.spec.containers] == ["vectoradd-0"]
    assert pod.spec.containers[0].resources.limits == {"nvidia.com/gpu": "1"}
    lines = (
        core.read_namespaced_pod_log("gpu-compute", "default", _preload_content=False)
        .data.decode()
        .splitlines()
    )
    assert "gpu-lab simulated" in lines[0], lines[:2]
    assert "Test PASSED" in lines
    assert "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-4000-8000-000000000000)" in lines
    # One GPU at a time: the compute Pod started after the smoke Pod had finished.
    smoke = core.read_namespaced_pod("gpu-smoke", "default")
    smoke_done = smoke.status.container_statuses[0].state.terminated.finished_at
    assert pod.metadata.creation_timestamp >= smoke_done


def _the_pack_passed_or_marked_each_item(text: str, o: dict[str, Any]) -> None:
    """The pack after up: no mandatory violation, every item evaluated, none violated at any
    level; the unobservable ones said so; the outputs give the same verdict."""
    assert "[mandatory]" not in text, text
    assert "[events-scheduled-and-pulled] not observable in the simulated lab" in text, text
    for item in checklist.ITEM_IDS:
        assert f"[{item}] not evaluated" not in text, text
        assert f"[{item}] observed:" not in text, text  # no violation of any level
    assert o[out.SIMULATED] is True
    items = checklist.evaluate(LabOutputs.from_json(o))
    assert {i.id: i.status for i in items} == {
        "device-plugin-stable": checklist.PASS,
        "allocatable-matches-gpus": checklist.PASS,
        "driver-version-matches": checklist.PASS,
        "events-scheduled-and-pulled": checklist.NOT_OBSERVABLE,
        "baseline-card-complete": checklist.PASS,
        "compute-works": checklist.NOT_OBSERVABLE,
        "dcgm-reports-gpus": checklist.NOT_OBSERVABLE,
        # The simulated Pod's UUIDs equal the capture's: compared, but not observable.
        "pods-see-every-gpu": checklist.NOT_OBSERVABLE,
    }


def _teardown(project: Project) -> subprocess.CompletedProcess[str]:
    """What `make destroy` runs before `pulumi destroy` (gpulab.ops.teardown)."""
    return subprocess.run(
        [str(project.dir / ".venv" / "bin" / "python"), "-m", "gpulab.ops.teardown", "--stack", "sim"],
        cwd=project.dir,
        env={**project.env, "GPULAB_ROOT": str(project.dir)},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_destroy_after_cluster_deleted_by_hand(project: Project) -> None:
    """The chapter's cleanup done by hand first: destroy still ends with an empty stack, on the
    stock provider, after the lab confirmed the cluster is gone and pruned its objects."""
    chart = _chart()
    project.init("sim", chartPath=chart, profile="e2e-gone")
    try:
        _delete_by_hand_then_destroy(project)
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", check=False)


def _delete_by_hand_then_destroy(project: Project) -> None:
    project.pulumi("up", "--yes", "--skip-preview", "--stack", "sim")
    env = {**project.env}
    subprocess.run(
        [
            "python3",
            "-m",
            "variants.sim.ctl",
            "down",
            "--name",
            "e2e-gone",
            "--workdir",
            ".state/sim/e2e-gone",
        ],
        cwd=project.dir,
        env=env,
        check=True,
        capture_output=True,
    )
    # As `make destroy` does: the stock provider cannot delete a Helm release on a dead
    # cluster (pulumi-kubernetes#2675), so the lab confirms the cluster is gone and prunes.
    t = _teardown(project)
    assert t.returncode == 0, t.stderr
    assert "is gone (the sim cluster directory" in t.stderr, t.stderr
    pruned = (
        "gpu-operator-namespace, gpu-operator-release, gpu-operator-sim-device-plugin, smoke-pod, compute-pod"
    )
    assert (
        f"removed its 5 unreachable Kubernetes resource(s) from the sim stack's state ({pruned})" in t.stderr
    )
    project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", timeout=600)
    export = json.loads(project.pulumi("stack", "export", "--stack", "sim").stdout)
    assert not export["deployment"].get("resources")


def test_a_cluster_that_does_not_answer_is_destroyed_all_the_same(project: Project) -> None:
    """An API server that is stopped (SIGSTOP: present, not answering) is the lab's own cluster
    all the same: ``make destroy`` finishes within its bound (no finalizer waits), drops the
    Kubernetes resources from the state, deletes the cluster with its own command (which
    continues the stopped processes to stop them) and leaves nothing (issue #21)."""
    import os
    import signal

    from variants.sim.ctl.process import Paths, _cluster_pids, _pid_alive

    chart = _chart()
    project.init("sim", chartPath=chart, profile="e2e-paused")
    paths = Paths("e2e-paused", project.dir / ".state" / "sim" / "e2e-paused")
    try:
        project.pulumi("up", "--yes", "--skip-preview", "--stack", "sim")
        pids = sorted(_cluster_pids(paths))
        assert pids
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        t0 = time.monotonic()
        down = project.lab("destroy", timeout=600)
        took = time.monotonic() - t0
        assert down.returncode == 0, down.stderr[-3000:]
        assert "does not answer (the sim cluster directory" in down.stderr and "exists;" in down.stderr, (
            down.stderr
        )
        assert "removed its 5 unreachable Kubernetes resource(s)" in down.stderr, down.stderr
        assert took < 180, f"make destroy took {took:.0f}s on a stopped cluster"
        assert not paths.workdir.exists()
        deadline = time.monotonic() + 10  # an exited component may be a zombie until init reaps it
        while [p for p in pids if _pid_alive(p)] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in pids if _pid_alive(p)]
        after = json.loads(project.pulumi("stack", "export", "--stack", "sim").stdout)
        assert not after["deployment"].get("resources")
        print(f"\ntimings: make destroy of a stopped cluster {took:.1f}s")
    finally:
        for pid in sorted(_cluster_pids(paths)):
            os.kill(pid, signal.SIGCONT)
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", check=False, timeout=600)
