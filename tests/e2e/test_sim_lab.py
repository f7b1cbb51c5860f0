"""End to end: the simulated lab's whole life through the real engine against a real API server.

One lab, through ``scripts/lab`` (what the make targets run) in a throwaway copy of the project:

1. ``up`` (``make lab``: preview, then the update, with the policy pack): the outputs, the
   compute check and the pack's verdict; the card written (md, json, html), its last line the
   summary;
2. ``verify``: only the gate, the smoke Pod and its check are replaced (URN create times,
   the Pod's UID), every other resource is untouched, and the card's measurement times are
   newer and all "current";
3. a no-op ``up`` with ``--expect-no-changes``: nothing changes, and the gate's and smoke
   test's facts are flagged as an earlier run's (card, summary, HTML);
4. a 2-GPU Pod stays Pending on the 1-GPU node, and the diagnosis names who holds the GPU;
5. secrets planted where a bundle would pick them up (a stack secret config value, a
   Kubernetes Secret, a Pod's env and annotations, an event), then ``debug-bundle``: the
   archive has the lab's objects and the smoke Pod's log, and none of the secrets;
6. the HTML card in headless Chromium (skipped, with the reason, when it is not installed);
7. the chapter's cleanup done by hand first (the cluster deleted): the bundle still comes,
   saying what it could not read; ``destroy`` confirms the cluster is gone, prunes its
   objects from the state (the stock provider cannot delete a Helm release on a dead
   cluster, pulumi-kubernetes#2675) and ends with an empty stack: no process, no port, no
   directory left.

One lab for all seven, since each step starts from where the one before left the lab. A stopped
(SIGSTOP) cluster's destroy: tests/e2e/test_sim_faults.py. Two simulated GPUs:
tests/e2e/test_sim_2gpu.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab import diagnose
from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.core.rawapi import read_json
from gpulab.kube import crd_check
from gpulab.verdict import card, checklist
from tests import chromium
from tests.support.sandbox import Project, kube_api, shared_chart

pytestmark = pytest.mark.sim

PROFILE = "e2e-one"
SENTINEL = "gpulab-e2e-sentinel-0c5b7d21e9"
CONFIG_SENTINEL = "gpulab-e2e-config-sentinel-44f0a3"
REPLACED = {"gpu-operator-gate", "smoke-pod", "smoke-check", "compute-pod", "compute-check"}
SUMMARY = re.compile(
    r"^gpu-lab: GPUs 1 allocatable / 1 physical \(simulated\); smoke Succeeded \(simulated\); "
)
#: What ``make destroy`` drops from the state once it confirmed the cluster is gone.
PRUNED = (
    "gpu-operator-namespace, gpu-operator-release, gpu-operator-sim-device-plugin, smoke-pod, compute-pod"
)


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


def test_the_lab_up_verify_noop_contention_bundle_html_then_destroy_after_deletion_by_hand(
    project: Project,
) -> None:
    chart = _chart()
    project.init("sim", chartPath=chart, profile=PROFILE)
    project.pulumi("config", "set", "--secret", "--stack", "sim", "e2e:sentinel", CONFIG_SENTINEL)
    try:
        _the_whole_life(project, chart)
    finally:
        # Whatever failed above, leave no cluster running behind.
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", check=False)


def _the_whole_life(project: Project, chart: str) -> None:
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    up = project.lab("up")
    timings["up"] = time.monotonic() - t0
    lines = _ok(up, "scripts/lab up")
    assert SUMMARY.match(lines[-1]) and lines[-1].endswith("checklist pass (simulated lab)"), lines[-1]
    assert "earlier run" not in lines[-1]
    o = project.outputs("sim")
    kubeconfig = project.secret_outputs("sim")[out.KUBECONFIG]  # the same for the lab's whole life
    _compute_check_and_the_pack(kubeconfig, up, o)
    _the_charts_crds_made_before_the_release(kubeconfig, chart, up.stdout + up.stderr)
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

    card_before = _verify(project, timings)
    _noop(project, card_before, timings)

    server = yaml.safe_load(kubeconfig)["clusters"][0]["cluster"]["server"]
    port = int(server.rsplit(":", 1)[1])
    assert _listening(port)
    _contention(kubeconfig)

    _plant_secrets(kubeconfig)
    t0 = time.monotonic()
    p = project.lab("debug-bundle")
    timings["debug-bundle"] = time.monotonic() - t0
    files = _bundle(p, project)
    for name in (
        "README.txt",
        "stack/outputs.json",
        "cluster/nodes.json",
        "cluster/clusterpolicies.json",
        "cluster/gpu-operator/pods.json",
        "cluster/gpu-operator/daemonsets.json",
        "cluster/gpu-operator/events.json",
        "cluster/gpu-operator/helm-releases.json",
        "logs/default/gpu-smoke/cuda.log",
        "host/probe.json",
        "host/preflight.json",
        "tools.json",
    ):
        assert name in files, f"{name} missing from the bundle: {sorted(files)}"
    assert "Driver Version: 580.159.04" in files["logs/default/gpu-smoke/cuda.log"]
    assert json.loads(files["cluster/gpu-operator/helm-releases.json"])[0]["status"] == "deployed"
    assert "e2e-planted" in files["cluster/gpu-operator/pods.json"]
    _assert_no_secret(files, kubeconfig)

    _html(project)

    # The chapter's cleanup done by hand: the cluster deleted. The bundle still comes, and says
    # what it could not read.
    workdir = project.dir / ".state" / "sim" / PROFILE
    assert workdir.exists()
    subprocess.run(
        [
            "python3",
            "-m",
            "variants.sim.ctl",
            "down",
            "--name",
            PROFILE,
            "--workdir",
            f".state/sim/{PROFILE}",
        ],
        cwd=project.dir,
        env=project.env,
        check=True,
        capture_output=True,
    )
    p = project.lab("debug-bundle")
    files = _bundle(p, project)
    assert "Could not read:" in files["README.txt"] and "  cluster: " in files["README.txt"]
    assert "gpu-lab: could not read cluster:" in p.stderr
    assert "stack/outputs.json" in files and not any(n.startswith("cluster/") for n in files)
    _assert_no_secret(files, kubeconfig)

    # `make destroy` all the same: the lab confirms the cluster is gone and prunes its objects
    # from the state (ops.teardown), then `pulumi destroy` on the stock provider.
    t0 = time.monotonic()
    down = project.lab("destroy")
    timings["destroy"] = time.monotonic() - t0
    _ok(down, "scripts/lab destroy")
    assert "is gone (the sim cluster directory" in down.stderr, down.stderr
    assert (
        f"removed its 5 unreachable Kubernetes resource(s) from the sim stack's state ({PRUNED})"
        in down.stderr
    ), down.stderr
    export = json.loads(project.pulumi("stack", "export", "--stack", "sim").stdout)
    assert not export["deployment"].get("resources"), export["deployment"].get("resources")
    assert not workdir.exists(), f"{workdir} left behind"
    assert _cluster_pids(workdir) == [], "cluster processes left running"
    assert not _listening(port), f"port {port} still listening"
    print(f"\ntimings: {', '.join(f'{k} {v:.1f}s' for k, v in timings.items())}")


def _verify(project: Project, timings: dict[str, float]) -> dict[str, Any]:
    """``make verify`` replaces only the measuring resources (see the module docstring); the
    card before it."""
    before = _resources(project)
    card_before: dict[str, Any] = json.loads((project.dir / "baseline-card.json").read_text())
    assert {m["freshness"] for m in card_before["measurements"]["groups"].values()} == {"current"}
    time.sleep(1.2)  # the stamps have one-second resolution

    t0 = time.monotonic()
    p = project.lab("verify")
    timings["verify"] = time.monotonic() - t0
    lines = _ok(p, "scripts/lab verify")
    assert "re-running the readiness gate, the smoke test (a fresh smoke Pod)" in p.stderr, p.stderr
    assert "the compute check (a fresh compute Pod)" in p.stderr, p.stderr
    assert SUMMARY.match(lines[-1]) and lines[-1].endswith("checklist pass (simulated lab)"), lines[-1]
    after = _resources(project)
    assert set(after) == set(before)
    replaced = {name for name in after if after[name]["created"] != before[name]["created"]}
    assert replaced == REPLACED, f"replaced {sorted(replaced)}, expected only {sorted(REPLACED)}"
    for name in (n for n in set(after) - REPLACED if after[n].get("custom")):  # components mirror them
        assert _plain(after[name].get("outputs")) == _plain(before[name].get("outputs")), f"{name} changed"
        assert after[name].get("modified") == before[name].get("modified"), f"{name} was updated"
    uids = [state["smoke-pod"]["outputs"]["metadata"]["uid"] for state in (before, after)]
    assert uids[0] != uids[1], "the smoke Pod must be a fresh one"

    card_after: dict[str, Any] = json.loads((project.dir / "baseline-card.json").read_text())
    for group in ("host", "gate", "smoke"):
        new, old = card_after["measurements"]["groups"][group], card_before["measurements"]["groups"][group]
        assert new["freshness"] == "current", group
        assert new["measuredAt"] > old["measuredAt"], (group, new, old)
    o = project.outputs("sim")
    assert o[out.SMOKE_MEASURED_AT] == card_after["smoke"]["phase"]["measuredAt"]
    assert o[out.GATE_MEASURED_AT] >= o[out.RUN_AT]
    return card_after


def _noop(project: Project, card_before: dict[str, Any], timings: dict[str, float]) -> None:
    """A no-op ``make lab`` (``--expect-no-changes``: the CLI fails on any change) re-runs
    neither the gate nor the smoke check: their facts are then an earlier run's, and the card
    and the summary say so."""
    time.sleep(1.2)
    t0 = time.monotonic()
    p = project.lab("up", pulumi_args="--expect-no-changes")
    timings["no-op up"] = time.monotonic() - t0
    lines = _ok(p, "scripts/lab up (no-op)")
    assert "unchanged" in p.stdout, p.stdout
    assert "smoke Succeeded (simulated, earlier run)" in lines[-1], lines[-1]
    stale = json.loads((project.dir / "baseline-card.json").read_text())["measurements"]["groups"]
    assert {g: m["freshness"] for g, m in stale.items()} == {
        "host": "current",
        "gate": "earlier-run",
        "smoke": "earlier-run",
        "compute": "earlier-run",
    }
    assert stale["smoke"]["measuredAt"] == card_before["measurements"]["groups"]["smoke"]["measuredAt"]


def _contention(kubeconfig: str) -> None:
    """A long-running Pod takes the node's one GPU; a second smoke Pod asks for 2 and stays
    Pending with ``Insufficient nvidia.com/gpu``; the diagnosis names it and who holds the GPU."""
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
    # The node below NVML (issue 37): the capture's root, every fact labelled simulated.
    rt = o[out.NODE_RUNTIME]
    assert out.NODE_RUNTIME in o[out.SIMULATED_FIELDS] and rt["simulated"] is True
    assert rt["root"] == "capture:h200-1gpu/root" and rt["toolkit"] == "1.20.2" and rt["findings"] == []
    assert [(g["address"], g["inNvml"]) for g in rt["pciGpus"]] == [("0000:00:06.0", True)]
    assert rt["cdi"][0]["driverVersion"] == o[out.HOST_DRIVER_VERSION]
    assert c["nodeRuntime"]["simulated"] is True
    assert "## Node runtime (below NVML)" in md and "Read under `capture:h200-1gpu/root` *(simulated)*" in md
    census = "1 NVIDIA GPU(s) on the bus, 1 of them listed by NVML; 0 NVSwitch(es) *(simulated)*"
    assert f"| PCI census | {census} |" in md


def _the_charts_crds_made_before_the_release(kubeconfig: str, chart: str, said: str) -> None:
    """The pre-release check created the chart's CRDs (crd_check.create_absent, the lab's own
    cluster), so Helm skipped them and its 2-s wait: on the API server each is Established,
    compares ``same`` with the chart's file, and no release owns it (as Helm's crds/ install)."""
    from kubernetes import client

    ext = client.ApiextensionsV1Api(kube_api(kubeconfig))
    crds = crd_check.chart_crds(Path(chart), nfd=True)
    assert crds
    for crd in crds:
        assert f"created customresourcedefinition/{crd.name}" in said, said[-4000:]
        live = read_json(ext.read_custom_resource_definition, crd.name)
        assert crd_check.compare(crd, live, crd_check.chart_version(Path(chart))).state == "same", crd.name
        conditions = {c["type"]: c["status"] for c in live["status"]["conditions"]}
        assert conditions["Established"] == "True", (crd.name, conditions)
        assert "meta.helm.sh/release-name" not in (live["metadata"].get("annotations") or {}), crd.name


def _compute_check_and_the_pack(
    kubeconfig: str, up: subprocess.CompletedProcess[str], o: dict[str, Any]
) -> None:
    """The compute check in the simulated lab, after an up with the policy pack: the compute
    Pod ``gpu-compute`` ran after the smoke Pod, kwok served it the vectorAdd log marked
    simulated, the check read ``Test PASSED`` from it; the outputs carry the compute keys,
    listed as simulated; ``compute-works`` reads "not observable in simulation", never a pass.
    The pack (issue #5's engine test): every item passed or marked not observable."""
    # `make lab` previews first; the pack's verdict after the update is what follows "Updating".
    assert "[mandatory]" not in up.stdout + up.stderr, up.stdout[-3000:]
    _, updating, after_update = up.stdout.partition("\nUpdating (")
    assert updating, f"no update in the run's output:\n{up.stdout[-3000:]}"
    _the_pack_passed_or_marked_each_item(after_update, o)
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
    assert "[compute-works] not observable in the simulated lab" in after_update

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


def _resources(project: Project) -> dict[str, dict[str, Any]]:
    export = json.loads(project.pulumi("stack", "export", "--stack", "sim").stdout)
    return {r["urn"].rsplit("::", 1)[-1]: r for r in export["deployment"].get("resources") or []}


def _plain(value: Any) -> Any:
    """A state value with secrets' ciphertexts (re-encrypted at every checkpoint) left out."""
    if isinstance(value, dict):
        if "ciphertext" in value:
            return "<secret>"
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _ok(p: subprocess.CompletedProcess[str], what: str) -> list[str]:
    assert p.returncode == 0, f"{what} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p.stdout.splitlines()


def _plant_secrets(kubeconfig: str) -> None:
    """The sentinels where the bundle reads: a Secret, a Pod's env and annotation, an event."""
    from kubernetes import client

    api = kube_api(kubeconfig)
    core = client.CoreV1Api(api)
    core.create_namespaced_secret(
        "gpu-operator",
        {"metadata": {"name": "e2e-planted"}, "stringData": {"token": SENTINEL}},
    )
    core.create_namespaced_pod(
        "gpu-operator",
        {
            "metadata": {"name": "e2e-planted", "annotations": {"e2e/note": CONFIG_SENTINEL}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox:1.37",
                        "env": [{"name": "GREETING", "value": f"hello {SENTINEL}"}],
                    }
                ]
            },
        },
    )
    core.create_namespaced_event(
        "default",
        {
            "metadata": {"name": "e2e-planted.1"},
            "involvedObject": {"kind": "Pod", "name": "gpu-smoke", "namespace": "default"},
            "reason": "E2E",
            "message": f"printed a secret: {SENTINEL}",
            "type": "Normal",
        },
    )


def _bundle(p: subprocess.CompletedProcess[str], project: Project) -> dict[str, str]:
    lines = _ok(p, "scripts/lab debug-bundle")
    m = re.match(r"gpu-lab: debug bundle (\S+\.tar\.gz) \(([\d.]+ (?:B|KiB|MiB)), (\d+) files\):", lines[0])
    assert m, lines[0]
    path = project.dir / m.group(1)
    assert path.parent == project.dir / ".state"
    with tarfile.open(path) as tar:
        names = [x for x in tar.getmembers() if x.isfile()]
        assert len(names) == int(m.group(3))
        files = {x.name.split("/", 1)[1]: tar.extractfile(x).read().decode() for x in names}  # type: ignore[union-attr]
    for name in files:
        assert f"  {name}" in p.stdout, f"{name} not listed"
    return files


def _assert_no_secret(files: dict[str, str], kubeconfig: str) -> None:
    doc = yaml.safe_load(kubeconfig)
    user = doc["users"][0]["user"]
    secrets = [SENTINEL, CONFIG_SENTINEL, *(v for k, v in user.items() if isinstance(v, str) and len(v) > 8)]
    secrets.append(doc["clusters"][0]["cluster"]["certificate-authority-data"])
    for name, text in files.items():
        for secret in secrets:
            assert secret not in text, f"a secret ({secret[:6]}...) leaked into {name}"
        assert "BEGIN RSA PRIVATE KEY" not in text and "PRIVATE KEY-----" not in text, name


def _html(project: Project) -> None:
    page = project.dir / "baseline-card.html"
    html = page.read_text()
    card = json.loads((project.dir / "baseline-card.json").read_text())
    for item in card["checklist"]["items"]:
        assert f'data-item="{item["id"]}" data-status="{item["status"]}"' in html
    assert 'id="tflops-not-measured"' in html and "<svg" not in html
    if chromium.binary() is None:
        print(f"\nHTML in Chromium skipped: {chromium.MISSING}")
        return
    png = chromium.screenshot(page, project.dir / "card.png", 1200, 2400)
    assert chromium.png_size(png) == (1200, 2400) and png.stat().st_size > 50_000
    dom = chromium.dump_dom(page)
    for item in card["checklist"]["items"]:
        assert f'data-item="{item["id"]}"' in dom
    # After the no-op up: the gate's and the smoke test's facts are flagged as an earlier run's.
    assert 'id="simulated-banner"' in dom and 'id="stale-banner"' in dom
    assert 'data-source="smokePhase" data-freshness="earlier-run"' in dom
    assert Path(png).is_file()
