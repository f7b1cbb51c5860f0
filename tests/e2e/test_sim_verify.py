"""End to end on the simulated lab: `make lab`, `make verify`, the debug bundle, the HTML card.

Through ``scripts/lab`` (what the make targets run) in a throwaway copy of the project:

1. ``up``: the lab is built, the card written (md, json, html), the last line the summary;
2. ``verify``: only the gate, the smoke Pod and its check are replaced (URN create times,
   the Pod's UID), every other resource is untouched, and the card's measurement times are
   newer and all "current"; then a no-op ``up``: the gate's and smoke test's facts are flagged
   as an earlier run's (card, summary, HTML);
3. secrets planted where a bundle would pick them up (a stack secret config value, a
   Kubernetes Secret, a Pod's env and annotations, an event), then ``debug-bundle``: the
   archive has the lab's objects and the smoke Pod's log, and none of the secrets;
4. the HTML card in headless Chromium (skipped, with the reason, when it is not installed);
5. the cluster stopped by hand: the bundle still comes, saying what it could not read; then
   ``destroy``.
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

from gpulab.core import outputs as out
from tests import chromium
from tests.support.sandbox import Project, kube_api, shared_chart

pytestmark = pytest.mark.sim

SENTINEL = "gpulab-e2e-sentinel-0c5b7d21e9"
CONFIG_SENTINEL = "gpulab-e2e-config-sentinel-44f0a3"
REPLACED = {"gpu-operator-gate", "smoke-pod", "smoke-check", "compute-pod", "compute-check"}
SUMMARY = re.compile(
    r"^gpu-lab: GPUs 1 allocatable / 1 physical \(simulated\); smoke Succeeded \(simulated\); "
)


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


def test_verify_bundle_and_html_on_the_simulated_lab(project: Project) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart: set GPULAB_CHART_PATH")
    project.init("sim", chartPath=chart, profile="e2e-verify")
    project.pulumi("config", "set", "--secret", "--stack", "sim", "e2e:sentinel", CONFIG_SENTINEL)
    try:
        _lab_verify_bundle(project)
    finally:
        project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "sim", check=False)


def _lab_verify_bundle(project: Project) -> None:
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    lines = _ok(project.lab("up"), "scripts/lab up")
    timings["up"] = time.monotonic() - t0
    assert SUMMARY.match(lines[-1]) and lines[-1].endswith("checklist pass (simulated lab)"), lines[-1]
    assert "earlier run" not in lines[-1]
    before = _resources(project)
    card_before = json.loads((project.dir / "baseline-card.json").read_text())
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

    card = json.loads((project.dir / "baseline-card.json").read_text())
    for group in ("host", "gate", "smoke"):
        new, old = card["measurements"]["groups"][group], card_before["measurements"]["groups"][group]
        assert new["freshness"] == "current", group
        assert new["measuredAt"] > old["measuredAt"], (group, new, old)
    o = project.outputs("sim")
    assert o[out.SMOKE_MEASURED_AT] == card["smoke"]["phase"]["measuredAt"]
    assert o[out.GATE_MEASURED_AT] >= o[out.RUN_AT]

    # A no-op `make lab` re-runs neither the gate nor the smoke check: their facts are then
    # an earlier run's, and the card and the summary say so.
    time.sleep(1.2)
    lines = _ok(project.lab("up"), "scripts/lab up (no-op)")
    assert "smoke Succeeded (simulated, earlier run)" in lines[-1], lines[-1]
    stale = json.loads((project.dir / "baseline-card.json").read_text())["measurements"]["groups"]
    assert {g: m["freshness"] for g, m in stale.items()} == {
        "host": "current",
        "gate": "earlier-run",
        "smoke": "earlier-run",
        "compute": "earlier-run",
    }
    assert stale["smoke"]["measuredAt"] == card["measurements"]["groups"]["smoke"]["measuredAt"]

    kubeconfig = project.secret_outputs("sim")[out.KUBECONFIG]
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

    # The cluster gone by hand: the bundle still comes, and says what it could not read.
    subprocess.run(
        [
            "python3",
            "-m",
            "variants.sim.ctl",
            "down",
            "--name",
            "e2e-verify",
            "--workdir",
            ".state/sim/e2e-verify",
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
    _ok(project.lab("destroy"), "scripts/lab destroy")
    print(f"\ntimings: {', '.join(f'{k} {v:.1f}s' for k, v in timings.items())}")


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
