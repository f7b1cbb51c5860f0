"""End to end: the simulated fleet (``stacks/sim-fleet.yaml``) and a found GPU stack on ``existing``.

1. ``GPULAB_STACK=sim-fleet make lab``: three kwok GPU nodes of 8, 8 and 4 simulated GPUs, the
   GPU stack found installed (a simulated device-plugin DaemonSet "somebody else" deployed). The
   lab installs no Helm release, gates every node against GPU Feature Discovery's
   ``nvidia.com/gpu.count``, runs a smoke and a compute Pod pinned to each, and passes with one
   row per node in the outputs and on the card (md, json, HTML); ``make destroy`` leaves nothing.
2. The same fleet with ``gpu-c=4/3``: gpu-c's labels say 4 GPUs, it advertises 3 (the device
   plugin marked one unhealthy: capacity 4, allocatable 3). ``make lab`` fails (the checklist's
   exit code), naming gpu-c and its cause, while gpu-a and gpu-b report pass: a node that fails
   never hides the others.
3. ``existing`` with ``gpuStack: found`` on a simulated fleet the test starts itself: no Helm
   release, nothing of the found stack touched, and the leftover census after destroy is empty
   (the lab's namespace and Pods are gone; the found DaemonSet and its namespace are still there).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project, kube_api

pytestmark = pytest.mark.sim

STACK = "sim-fleet"
PROFILE = "gpu-lab-fleet"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
SIM_TOOLS = ("kwokctl", "kwok", "kube-apiserver", "etcd", "kubectl")
ROOT = Path(__file__).resolve().parents[2]


def _resource_types(project: Project, stack: str) -> set[str]:
    export = json.loads(project.pulumi("stack", "export", "--stack", stack).stdout)
    return {str(r.get("type")) for r in export["deployment"].get("resources") or []}


def _rows(o: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["node"]: r for r in o[out.NODES]}


def test_the_fleet_passes_with_a_row_per_node_and_comes_down(project: Project) -> None:
    with project.round_trip(STACK, PROFILE) as up:
        o = project.outputs(STACK)
        assert HELM_RELEASE not in _resource_types(project, STACK)
        assert o[out.GPU_STACK]["mode"] == "found"
        assert o[out.GPU_STACK]["devicePlugin"] == ["gpu-operator/nvidia-device-plugin-daemonset"]
        rows = _rows(o)
        assert sorted(rows) == ["gpu-a", "gpu-b", "gpu-c"]
        assert [rows[n]["expected"] for n in ("gpu-a", "gpu-b", "gpu-c")] == [8, 8, 4]
        for name, row in rows.items():
            assert row["status"] == "pass" and row["gate"] == row["smoke"] == row["compute"] == "pass", row
            assert row["expectedSource"] == f"gfd:nvidia.com/gpu.count={row['expected']}"
            assert len(set(row["smokeGpuUuids"])) == row["expected"] == row["computeGpus"], (name, row)
            assert row["dcgm"] == "not-observable-in-simulation" and row["simulated"] is True
        assert o[out.NODES_SUMMARY] == "3 nodes, 20 GPUs: 20 allocatable; every node passed"
        assert out.NODES in o[out.SIMULATED_FIELDS] and o[out.SIMULATED] is True
        items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}
        assert items["every-gpu-node-passes"].status == "pass", items["every-gpu-node-passes"]
        # The card: a row per node in each of its forms, and the summary on its last line.
        card = json.loads((project.dir / "baseline-card.json").read_text())
        assert [r["node"] for r in card["nodes"]["rows"]] == ["gpu-a", "gpu-b", "gpu-c"]
        md = (project.dir / "baseline-card.md").read_text()
        html = (project.dir / "baseline-card.html").read_text()
        for name in rows:
            assert f"| {name} |" in md and f'data-node="{name}"' in html
        assert "3 nodes, 20 GPUs: 20 allocatable; every node passed" in up.stderr + up.stdout
        # Only the lab's namespace holds its Pods; the per-node Pods were deleted after reading.
        from kubernetes import client

        core: Any = client.CoreV1Api(project.kube_api(STACK))
        left = [p.metadata.name for p in core.list_namespaced_pod("gpu-lab").items]
        assert left == ["gpu-compute", "gpu-smoke"] or sorted(left) == ["gpu-compute", "gpu-smoke"], left


def test_a_node_short_of_its_labels_fails_named_and_the_others_pass(project: Project) -> None:
    project.init(STACK, simNodes="gpu-a=8,gpu-b=8,gpu-c=4/3", profile="gpu-lab-fleet-short")
    try:
        up = project.lab("up", stack=STACK)
        assert up.returncode == 1, f"{up.stdout[-2000:]}\n{up.stderr[-2000:]}"
        o = project.outputs(STACK)
        rows = _rows(o)
        assert rows["gpu-a"]["status"] == rows["gpu-b"]["status"] == "pass", rows
        bad = rows["gpu-c"]
        assert bad["status"] == "fail" and bad["gate"] == "fail", bad
        assert bad["smoke"] == bad["compute"] == "not-tested", bad  # never "pass" on what did not run
        assert bad["allocatable"] == 3 and bad["capacity"] == 4 and bad["expected"] == 4, bad
        assert bad["firstFailure"] == (
            "gate: node gpu-c advertises 3 nvidia.com/gpu allocatable of the 4 expected "
            "(gfd:nvidia.com/gpu.count=4)"
        )
        assert "unhealthy" in bad["fix"] and "describe node gpu-c" in bad["fix"], bad["fix"]
        assert o[out.NODES_SUMMARY] == "3 nodes, 20 GPUs: 19 allocatable; node gpu-c has 3 of 4"
        item = next(i for i in checklist.evaluate(LabOutputs.from_json(o)) if i.id == "every-gpu-node-passes")
        assert item.status == "fail" and "gpu-c: gate: node gpu-c advertises 3" in item.observed, item
        assert "passed: gpu-a, gpu-b" in item.observed, item
        # What make lab printed names the node and its cause.
        said = up.stdout + up.stderr
        assert "node gpu-c has 3 of 4" in said and "gpu-c: fail" in said, said[-3000:]
    finally:
        down = project.lab("destroy", stack=STACK)
    assert down.returncode == 0, down.stderr[-3000:]
    assert not (project.dir / ".state" / "sim" / "gpu-lab-fleet-short").exists()


def test_existing_with_the_gpu_stack_found_installs_nothing_and_leaves_nothing(
    project: Project, tmp_path: Path
) -> None:
    from kubernetes import client

    missing = [t for t in SIM_TOOLS if shutil.which(t, path=project.env["PATH"]) is None]
    if missing:
        pytest.skip(f"simulated control plane not built ({', '.join(missing)}): run `make toolchain`")
    workdir = tmp_path / "sim"
    where = ["--name", "e2e-found", "--workdir", str(workdir)]
    try:
        up = project.sim_ctl(
            "up",
            *where,
            "--node-spec",
            "gpu-x=4",
            "--node-spec",
            "gpu-y=2",
            "--preinstalled",
            "--log-namespace",
            "gpu-lab",
        )
        path = tmp_path / "kubeconfig.yaml"
        path.write_text(up["kubeconfig"])
        api = kube_api(up["kubeconfig"])
        apps: Any = client.AppsV1Api(api)
        before = apps.read_namespaced_daemon_set(
            "nvidia-device-plugin-daemonset", "gpu-operator"
        ).metadata.uid
        # No expectedGpus: each node's labels say what it has. simulatedOperands: kwok runs no GPU.
        project.init("existing", kubeconfigPath=str(path), gpuStack="found", simulatedOperands="true")
        # The engine directly, as test_existing_lab does: without a host probe (the cluster is
        # not this host) the card's host facts stay unknown, which is the existing lab's card.
        project.pulumi("up", "--yes", "--skip-preview", "--stack", "existing", timeout=900)
        o = project.outputs("existing")
        assert HELM_RELEASE not in _resource_types(project, "existing")
        assert sorted(_rows(o)) == ["gpu-x", "gpu-y"] and o[out.HOST_GPU_COUNT] == 6
        assert (
            o[out.LEFTOVERS] == []
            and o[out.NODES_SUMMARY] == "2 nodes, 6 GPUs: 6 allocatable; every node passed"
        )
        saved = tmp_path / "outputs.json"
        saved.write_text(json.dumps(o))
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "existing", timeout=900)
        census = subprocess.run(
            [
                "python3",
                "-m",
                "variants.existing.ctl",
                "leftovers",
                "--kubeconfig-path",
                str(path),
                "--outputs",
                str(saved),
            ],
            cwd=project.dir,
            env=project.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert census.returncode == 0, census.stdout + census.stderr[-2000:]
        doc = json.loads(census.stdout)
        assert doc["leftovers"] == [] and doc["namespace"] is None and doc["item"]["status"] == "pass", doc
        # The found stack is untouched: the same DaemonSet object, its namespace still there.
        after = apps.read_namespaced_daemon_set("nvidia-device-plugin-daemonset", "gpu-operator").metadata.uid
        assert after == before
    finally:
        project.sim_ctl("down", *where)


def test_a_guest_missing_a_permission_is_told_which_before_anything_is_created(
    project: Project, tmp_path: Path
) -> None:
    """The ClusterRole of deploy/rbac/gpu-lab-guest.yaml bound, its namespaced Role not: the lab
    stops at its access check, naming the Pod permissions it lacks in labNamespace, and the
    namespace was never created (the sim control plane runs RBAC: --authorization-mode=Node,RBAC)."""
    import yaml
    from kubernetes import client

    missing = [t for t in SIM_TOOLS if shutil.which(t, path=project.env["PATH"]) is None]
    if missing:
        pytest.skip(f"simulated control plane not built ({', '.join(missing)}): run `make toolchain`")
    workdir = tmp_path / "sim"
    where = ["--name", "e2e-guest", "--workdir", str(workdir)]
    try:
        up = project.sim_ctl(
            "up", *where, "--node-spec", "gpu-x=2", "--preinstalled", "--log-namespace", "gpu-lab"
        )
        admin = kube_api(up["kubeconfig"])
        core: Any = client.CoreV1Api(admin)
        rbac: Any = client.RbacAuthorizationV1Api(admin)
        core.create_namespaced_service_account("default", {"metadata": {"name": "gpu-lab-guest"}})
        docs = list(yaml.safe_load_all((ROOT / "deploy" / "rbac" / "gpu-lab-guest.yaml").read_text()))
        role = next(d for d in docs if d["kind"] == "ClusterRole")
        rbac.create_cluster_role(role)
        subject = {"kind": "ServiceAccount", "name": "gpu-lab-guest", "namespace": "default"}
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": "gpu-lab-guest"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role["metadata"]["name"],
                },
                "subjects": [subject],
            }
        )
        token = core.create_namespaced_service_account_token(
            "gpu-lab-guest", "default", {"spec": {"expirationSeconds": 3600}}
        ).status.token
        kc = yaml.safe_load(up["kubeconfig"])
        kc["users"] = [{"name": kc["users"][0]["name"], "user": {"token": token}}]
        path = tmp_path / "guest.yaml"
        path.write_text(yaml.safe_dump(kc))
        project.init("existing", kubeconfigPath=str(path), gpuStack="found", simulatedOperands="true")
        run = project.pulumi("up", "--yes", "--skip-preview", "--stack", "existing", check=False, timeout=600)
        assert run.returncode != 0
        said = run.stdout + run.stderr
        assert "create pods in namespace gpu-lab: the per-node smoke and compute Pods" in said, said[-3000:]
        assert "get pods/log in namespace gpu-lab" in said and "deploy/rbac/gpu-lab-guest.yaml" in said
        assert "nothing was created" in said
        names = [n.metadata.name for n in core.list_namespace().items]
        assert "gpu-lab" not in names, names
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "existing", timeout=600)
    finally:
        project.sim_ctl("down", *where)
