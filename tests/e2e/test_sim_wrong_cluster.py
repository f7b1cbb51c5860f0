"""End to end: a later run whose kubeconfig reaches another cluster stops before anything
changes, naming both (issue #21, point 4).

Two simulated clusters, A and B (variants.sim.ctl). An ``existing`` stack is built on A
through ``scripts/lab up`` (the operator's release, the simulated operands, the checks). Its
``kubeconfigPath`` is then pointed at B and ``make lab`` runs again: the stack's
``cluster-identity`` command, re-run as an in-place update with the identity it recorded,
fails naming A and B; B gets nothing (no ``gpu-operator`` namespace, no Helm record) and A
keeps its release. Pointed back at A, ``make destroy`` removes the lab. Both clusters are
torn down at the end, whatever happened.

Before B: the same cluster A at another endpoint (issue #37, item 3). ``kubeconfigPath`` is
pointed at a copy of A's kubeconfig naming ``https://localhost:<port>`` instead of
``https://127.0.0.1:<port>``: the same API server, whose certificate names both (kwok v0.8.0
``pkg/kwokctl/pki/pki.go``, ``DefaultAltNames``). ``make lab`` and ``make verify`` stop
before ``pulumi up``, naming both endpoints, the cluster's kube-system UID and the existing
variant's fix, and change nothing.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.sandbox import Project, kube_api, shared_chart

pytestmark = pytest.mark.sim


@pytest.fixture
def clusters(project: Project, tmp_path: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """Clusters ``a`` and ``b``: {name: {"kubeconfig": path, "info": up's JSON}}."""
    made: dict[str, dict[str, Any]] = {}
    try:
        for name in ("a", "b"):
            where = ["--name", f"wrong-{name}", "--workdir", str(tmp_path / f"sim-{name}")]
            info = project.sim_ctl("up", *where, "--gpus", "1")
            path = tmp_path / f"kubeconfig-{name}.yaml"
            path.write_text(info["kubeconfig"])
            made[name] = {"kubeconfig": path, "info": info, "where": where}
        yield made
    finally:
        for c in made.values():
            project.sim_ctl("down", *c["where"])


def _lab(project: Project, action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(project.dir / "scripts" / "lab"), action],
        cwd=project.dir,
        env={**project.env, "GPULAB_STACK": "existing", "GPULAB_CHOICE_QUIET": "1"},
        capture_output=True,
        text=True,
        timeout=900,
    )


def _namespaces(kubeconfig: Path) -> set[str]:
    from kubernetes import client

    api = kube_api(kubeconfig.read_text())
    return {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}


def test_a_kubeconfig_reaching_another_cluster_changes_nothing(
    project: Project, clusters: dict[str, dict[str, Any]]
) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    a, b = clusters["a"], clusters["b"]
    project.init(
        "existing",
        chartPath=chart,
        kubeconfigPath=str(a["kubeconfig"]),
        expectedGpus=1,
        simulatedOperands="true",
    )
    t0 = time.monotonic()
    up = _lab(project, "up")
    took = {"make lab on A": time.monotonic() - t0}
    # The existing lab's checklist leaves host facts "not evaluated" (hostProbe off): exit 1
    # with the card written; the deployment itself must have succeeded.
    # The engine's diagnostics (a failed check's message) are on stdout: both tails on failure.
    last = (up.stdout.strip().splitlines() or [""])[-1]
    assert up.returncode in (0, 1) and last.startswith("gpu-lab: GPUs"), (
        f"exit {up.returncode}\n--- stdout\n{up.stdout[-4000:]}\n--- stderr\n{up.stderr[-2000:]}"
    )
    recorded = project.outputs("existing")["clusterIdentity"]
    assert recorded["server"] == a["info"]["identity"]["server"]
    assert recorded["kubeSystemUid"] == a["info"]["identity"]["kubeSystemUid"]
    assert "gpu-operator" in _namespaces(a["kubeconfig"])
    before = json.loads(project.pulumi("stack", "export", "--stack", "existing").stdout)

    # The same cluster A at another address of its API server: named, nothing changed.
    recorded_server = a["info"]["identity"]["server"]
    assert recorded_server.startswith("https://127.0.0.1:"), recorded_server
    moved_server = recorded_server.replace("://127.0.0.1:", "://localhost:")
    moved = a["kubeconfig"].with_name("kubeconfig-a-localhost.yaml")
    moved.write_text(a["kubeconfig"].read_text().replace(recorded_server, moved_server))
    project.pulumi("config", "set", "--stack", "existing", "gpu-lab:kubeconfigPath", str(moved))
    for action in ("up", "verify"):
        t0 = time.monotonic()
        run = _lab(project, action)
        took[f"make {'lab' if action == 'up' else action} at A's other address"] = time.monotonic() - t0
        said = run.stdout + run.stderr
        assert run.returncode != 0, said[-4000:]
        assert "answers at another address than the one recorded" in said, said[-4000:]
        assert f"recorded: {recorded_server}" in said and f"live:     {moved_server}" in said, said[-4000:]
        assert f"kube-system uid {a['info']['identity']['kubeSystemUid']}" in said, said[-4000:]
        assert f"--server={recorded_server}`" in said, said[-4000:]  # the variant's fix
        assert "Updating (existing)" not in said, said[-4000:]  # stopped before `pulumi up`
    changed = json.loads(project.pulumi("stack", "export", "--stack", "existing").stdout)
    moved_text = said

    project.pulumi("config", "set", "--stack", "existing", "gpu-lab:kubeconfigPath", str(b["kubeconfig"]))
    t0 = time.monotonic()
    wrong = _lab(project, "up")
    took["make lab pointed at B"] = time.monotonic() - t0
    text = wrong.stdout + wrong.stderr
    assert wrong.returncode != 0, text[-4000:]
    assert "reaches another cluster than the one this stack recorded" in text, text[-4000:]
    for c in (a, b):
        assert c["info"]["identity"]["kubeSystemUid"] in text, text[-4000:]
        assert c["info"]["identity"]["server"] in text, text[-4000:]
    assert "`GPULAB_STACK=existing make destroy`" in text, text[-4000:]
    # Nothing changed: B got nothing, A keeps the release, the state's objects are as before.
    assert "gpu-operator" not in _namespaces(b["kubeconfig"])
    assert "gpu-operator" in _namespaces(a["kubeconfig"])
    after = json.loads(project.pulumi("stack", "export", "--stack", "existing").stdout)

    def plain(value: Any) -> Any:  # secrets are re-encrypted at every checkpoint
        if isinstance(value, dict):
            return "<secret>" if "ciphertext" in value else {k: plain(v) for k, v in value.items()}
        return [plain(v) for v in value] if isinstance(value, list) else value

    def k8s(doc: dict[str, Any]) -> dict[str, Any]:
        return {
            r["urn"]: plain(r.get("outputs"))
            for r in doc["deployment"]["resources"]
            if r["type"].startswith("kubernetes:") or r["type"] == "pulumi:providers:kubernetes"
        }

    assert k8s(after) == k8s(before)
    assert k8s(changed) == k8s(before)

    # The printed fix, as printed, in this state (still pointed at B): destroy uses the
    # recorded cluster's kubeconfig from the state and deletes nothing in B.
    t0 = time.monotonic()
    down = subprocess.run(
        ["bash", "-c", "GPULAB_STACK=existing make destroy"],
        cwd=project.dir,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    took["make destroy"] = time.monotonic() - t0
    assert down.returncode == 0, down.stderr[-4000:]
    assert "gpu-operator" not in _namespaces(a["kubeconfig"])
    print("\ntimings: " + ", ".join(f"{k} {v:.1f}s" for k, v in took.items()))
    print(
        "the endpoint change:\n"
        + "\n".join(
            ln
            for ln in moved_text.splitlines()
            if ln.lstrip().startswith(("gpu-lab:", "recorded:", "live:", "fix:"))
        )
    )
    print(
        "the refusal:\n"
        + "\n".join(line for line in text.splitlines() if "recorded" in line or "now:" in line)
    )
