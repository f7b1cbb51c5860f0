"""End to end: the ``existing`` variant through the real engine against a cluster it does not own.

The test brings up the simulated control plane itself (variants.sim.ctl, two kwok nodes
of one GPU each), writes its kubeconfig to a file, and points an ``existing`` stack at
it with ``expectedGpus=2`` and ``simulatedOperands=true`` (no operator process runs
against kwok). It checks the preview against the live API server, then up: allocatable
summed over both GPU nodes is 2, the smoke Pod Succeeded, the checklist's allocatable
item passes, the leftovers are the chart's CRDs. Destroy removes what the stack created
and leaves exactly the listed CRDs: the leftover census (``variants.existing.ctl
leftovers``, against the outputs saved before destroy) lists exactly what the ``leftovers``
output promised (no namespace, no node label beyond those the nodes had before the lab) and
the ``no-leftovers`` checklist item passes. A second round with ``removeCrds=true`` and one
CRD that was there before the lab: destroy deletes the chart's CRDs except that one, and
the census says so. Before that round, another team's namespace of the operator's name, with a
ConfigMap in it, is made by another field manager (``kubectl apply --server-side
--field-manager=other-team``): ``make lab`` stops before any change, naming it and its field
manager (pulumi-kubernetes v4.25.0 would otherwise upsert it: provider/pkg/await/await.go
``Creation`` sends an apply PATCH, never a create, so an existing object becomes the stack's
and ``Deletion`` deletes it); with ``adoptExisting`` the lab patches it instead, and ``make
destroy`` leaves the namespace and its ConfigMap with the same UIDs and the namespace's labels
as they were (the patch's fields relinquished: provider/pkg/ssa/actions.go ``Relinquish``). The
cluster is torn down at the end, whatever happened.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist
from tests.support.sandbox import Project, kube_api, shared_chart
from variants.existing import ctl as existing_ctl

pytestmark = pytest.mark.sim

SIM_TOOLS = ("kwokctl", "kwok", "kube-apiserver", "etcd", "kubectl")
NAME = "e2e-existing"
CRD_PREFIX = "customresourcedefinition/"


@pytest.fixture
def two_gpu_nodes(project: Project, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A simulated cluster with 2 nodes x 1 GPU; yields (kubeconfig file, kubeconfig text)."""
    missing = [t for t in SIM_TOOLS if shutil.which(t, path=project.env["PATH"]) is None]
    if missing:
        pytest.skip(f"simulated control plane not built ({', '.join(missing)}): run `make toolchain`")
    workdir = tmp_path / "sim"
    where = ["--name", NAME, "--workdir", str(workdir)]
    try:
        up = project.sim_ctl("up", *where, "--gpus", "1", "--nodes", "2")
        assert up["nodes"] == ["gpu-sim-node", "gpu-sim-node-2"] and up["totalGpus"] == 2
        path = tmp_path / "kubeconfig.yaml"
        path.write_text(up["kubeconfig"])
        yield path, up["kubeconfig"]
    finally:
        project.sim_ctl("down", *where)
    assert not workdir.exists()


def _leftover_census(
    project: Project, kubeconfig: Path, outputs: dict[str, Any], tmp: Path
) -> dict[str, Any]:
    """``variants.existing.ctl leftovers`` against ``outputs`` (saved before destroy)."""
    saved = tmp / "outputs-before-destroy.json"
    saved.write_text(json.dumps(outputs))
    p = subprocess.run(
        [
            "python3",
            "-m",
            "variants.existing.ctl",
            "leftovers",
            "--kubeconfig-path",
            str(kubeconfig),
            "--outputs",
            str(saved),
        ],
        cwd=project.dir,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode in (0, 1), p.stderr[-3000:]
    doc: dict[str, Any] = json.loads(p.stdout)
    assert (p.returncode == 0) == (doc["item"]["status"] == "pass"), doc
    return doc


#: Another team's namespace of the operator's name, with a ConfigMap in it (round two).
OTHER_TEAM = """apiVersion: v1
kind: Namespace
metadata:
  name: gpu-operator
  labels: {team: other-team}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: team-config
  namespace: gpu-operator
data: {owner: other-team}
"""


def _other_team(project: Project, kubeconfig: Path) -> None:
    """Make :data:`OTHER_TEAM` with field manager ``other-team`` (server-side apply)."""
    apply = ["apply", "--server-side", "--field-manager=other-team", "-f", "-"]
    subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *apply],
        input=OTHER_TEAM,
        cwd=project.dir,
        env=project.env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _other_team_now(api: Any) -> dict[str, Any]:
    """The other team's namespace and ConfigMap: their UIDs, and the namespace's labels."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    ns = core.read_namespace("gpu-operator")
    cm = core.read_namespaced_config_map("team-config", "gpu-operator")
    return {
        "Namespace/gpu-operator": ns.metadata.uid,
        "ConfigMap/gpu-operator/team-config": cm.metadata.uid,
        "labels": {k: v for k, v in (ns.metadata.labels or {}).items() if k != "kubernetes.io/metadata.name"},
    }


def _crds(api: Any) -> set[str]:
    from kubernetes import client

    return {c.metadata.name for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items}


def test_existing_cluster_with_two_gpu_nodes_up_checks_destroy_and_leftovers(
    project: Project, two_gpu_nodes: tuple[Path, str], tmp_path: Path
) -> None:
    from kubernetes import client

    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    path, kubeconfig = two_gpu_nodes
    api = kube_api(kubeconfig)
    chart_crds = existing_ctl.chart_crds(Path(chart), nfd=True)
    project.init(
        "existing",
        kubeconfigPath=str(path),
        expectedGpus=2,
        simulatedOperands="true",
        chartPath=chart,
        profile=NAME,
    )
    try:
        # The preview talks to the live API server (its kubeconfig is known at preview).
        preview = project.pulumi("preview", "--stack", "existing", "--diff", timeout=300).stdout
        planned = ("existing-census", "gpu-operator-release", "gpu-operator-sim-device-plugin", "smoke-pod")
        for name in planned:
            assert name in preview, f"{name} not planned:\n{preview}"
        assert "variants.sim.ctl" not in preview  # no cluster lifecycle

        project.pulumi("up", "--yes", "--skip-preview", "--stack", "existing", timeout=900)
        o = project.outputs("existing")
        assert o[out.CLUSTER_KIND] == "existing"
        assert o[out.ALLOCATABLE_GPUS] == 2 and o[out.CAPACITY_GPUS] == 2, o
        assert o[out.HOST_GPU_COUNT] == 2 and o[out.HOST_PROBE_SOURCE] == "config:expectedGpus"
        assert o[out.SMOKE_PHASE] == "Succeeded"
        assert o[out.SMOKE_NODE] in ("gpu-sim-node", "gpu-sim-node-2")
        assert o[out.SIMULATED] is True and out.ALLOCATABLE_GPUS in o[out.SIMULATED_FIELDS]
        assert o[out.CLUSTER_POLICY_STATE] == "ready"
        assert len(o[out.DEVICE_PLUGIN_PODS]) == 2, "one stand-in device-plugin pod per GPU node"
        assert o["leftovers"] == [CRD_PREFIX + c for c in chart_crds]
        # The census before the chart recorded the nodes' own nvidia.com/ labels (kwok's).
        before = o[out.GPU_LABELS_BEFORE]
        assert set(before) == {"gpu-sim-node", "gpu-sim-node-2"}, before
        assert all(labels.get("nvidia.com/gpu.present") == "true" for labels in before.values())
        items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}
        assert items["allocatable-matches-gpus"].status == checklist.PASS, items["allocatable-matches-gpus"]

        project.pulumi("up", "--yes", "--skip-preview", "--stack", "existing", "--expect-no-changes")

        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "existing", timeout=900)
        core = client.CoreV1Api(api)
        assert "gpu-operator" not in {n.metadata.name for n in core.list_namespace().items}
        assert not [p for p in core.list_namespaced_pod("default").items if p.metadata.name == "gpu-smoke"]
        assert {n.metadata.name for n in core.list_node().items} == {"gpu-sim-node", "gpu-sim-node-2"}
        left = _crds(api)
        assert set(chart_crds) <= left, f"the listed leftovers must still be there: {sorted(left)}"
        census = _leftover_census(project, path, o, tmp_path)
        assert census["leftovers"] == o["leftovers"], census
        assert census["namespace"] is None and census["labels"] == {} and census["labelsBaseline"] is True
        assert census["item"]["id"] == "no-leftovers" and census["item"]["status"] == "pass", census["item"]

        # Round two: the user removed the leftovers but one CRD that was there before the lab.
        keep = "gpuclusters.nvidia.com"
        assert keep in chart_crds
        subprocess.run(
            [
                "python3",
                "-m",
                "variants.existing.ctl",
                "remove-crds",
                "--kubeconfig-path",
                str(path),
                *[f"--crd={c}" for c in chart_crds],
                f"--keep={keep}",
            ],
            cwd=project.dir,
            env=project.env,
            check=True,
            capture_output=True,
        )
        assert _crds(api) & set(chart_crds) == {keep}
        project.pulumi("config", "set", "--stack", "existing", "gpu-lab:removeCrds", "true")

        # And another team's namespace of the operator's name is there: make lab stops first.
        _other_team(project, path)
        theirs = _other_team_now(api)
        refused = project.lab("up", stack="existing", timeout=600)
        said = refused.stdout + refused.stderr
        assert refused.returncode != 0, said[-3000:]
        assert "Namespace gpu-operator exists and is not the lab's" in said, said[-3000:]
        assert re.search(r"field managers [^;)]*other-team", said), said[-3000:]
        assert "gpu-lab:adoptExisting Namespace/gpu-operator" in said
        export = json.loads(project.pulumi("stack", "export", "--stack", "existing").stdout)
        made = [r["type"] for r in export["deployment"].get("resources") or []]
        assert set(made) <= {"pulumi:pulumi:Stack"}, f"nothing may be created on refusal: {made}"
        assert _other_team_now(api) == theirs

        # The recorded opt-in: the lab uses the namespace as it is, and destroy leaves it.
        adopted = "Namespace/gpu-operator"
        project.pulumi("config", "set", "--stack", "existing", "gpu-lab:adoptExisting", adopted)
        project.pulumi("up", "--yes", "--skip-preview", "--stack", "existing", timeout=900)
        o = project.outputs("existing")
        assert o["leftovers"] == [CRD_PREFIX + keep, "namespace/gpu-operator"]
        assert o[out.ADOPTED_OBJECTS] == [adopted]
        foreign = o[out.FOREIGN_OBJECTS]
        uids = {k: v for k, v in theirs.items() if k != "labels"}
        assert {k: foreign.get(k) for k in uids} == uids, foreign
        assert o[out.ALLOCATABLE_GPUS] == 2 and o[out.SMOKE_PHASE] == "Succeeded"
        down = project.lab("destroy", stack="existing", timeout=900)
        assert down.returncode == 0, (down.stdout + down.stderr)[-3000:]
        assert _crds(api) & set(chart_crds) == {keep}, "only the CRD from before the lab may remain"
        # The other team's namespace and ConfigMap by UID, and the namespace's labels as they were.
        assert _other_team_now(api) == theirs
        census = _leftover_census(project, path, o, tmp_path)
        assert census["leftovers"] == o["leftovers"], census
        assert census["untouched"] == {"checked": len(foreign), "missing": [], "replaced": []}, census
        assert census["item"]["status"] == "pass", census["item"]
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "existing", check=False, timeout=900)
    export = json.loads(project.pulumi("stack", "export", "--stack", "existing").stdout)
    assert not export["deployment"].get("resources")
