"""The program on a cluster it does not own: what the plan would take over stops it before any
resource (program.edge.takeover_failures), and an adopted namespace is patched, not created.

The cluster's answer is recorded JSON (tests/unit/program_harness.run_program ``cluster``); the
refusal is asserted on the PreflightError and on the registrations (none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.config.lab import getter
from gpulab.core import names
from gpulab.core import outputs as out
from gpulab.host.preflight import PreflightError
from gpulab.kube import takeover
from program import edge
from tests.unit import program_harness
from tests.unit.kube.test_takeover import other_team_namespace, release_secret
from tests.unit.program_harness import run_program
from variants import registry
from variants.registry import parse_config

NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"
NAMESPACE = "kubernetes:core/v1:Namespace"


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "gpu",
        "clusters": [{"name": "gpu", "cluster": {"server": "https://10.0.0.1:6443"}}],
        "users": [{"name": "admin", "user": {"token": "t"}}],
        "contexts": [{"name": "gpu", "context": {"cluster": "gpu", "user": "admin"}}],
    }
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


#: The census of a cluster with another team's namespace (variants.existing.ctl census).
CENSUS = {
    "kubernetesVersion": "v1.36.3",
    "nodes": 1,
    "gpuNodes": [{"name": "n1", "allocatable": 2, "capacity": 2}],
    "preexistingCrds": [],
    "gpuLabels": {},
    "foreignObjects": {"Namespace/gpu-operator": "uid-ns", "ConfigMap/gpu-operator/team-config": "uid-cm"},
}


@pytest.fixture(autouse=True)
def census(monkeypatch: pytest.MonkeyPatch) -> None:
    """The existing census' output; no chart path from the environment."""
    real = program_harness.fake_stdout

    def fake(purpose: str, gpus: int = 1) -> str:
        return json.dumps(CENSUS) if purpose == "existing-census" else real(purpose, gpus)

    monkeypatch.setattr(program_harness, "fake_stdout", fake)
    monkeypatch.delenv("GPULAB_CHART_PATH", raising=False)


def existing(kubeconfig: Path, chart: str, **extra: Any) -> dict[str, Any]:
    return {
        "cluster": "existing",
        "kubeconfigPath": str(kubeconfig),
        "expectedGpus": 2,
        "chartPath": chart,
        **extra,
    }


def test_another_teams_namespace_and_release_stop_the_program_before_any_resource(
    kubeconfig: Path, chart: str
) -> None:
    cluster = {
        "Namespace/gpu-operator": other_team_namespace(),
        "HelmRelease/gpu-operator/gpu-operator": [release_secret("Install complete")],
    }
    run = run_program(existing(kubeconfig, chart), cluster=cluster)
    assert isinstance(run.error, PreflightError), run.error
    assert [f.subject for f in run.error.failures] == [
        "Namespace/gpu-operator",
        "HelmRelease/gpu-operator/gpu-operator",
    ]
    said = str(run.error)
    assert (
        "Namespace gpu-operator exists and is not the lab's" in said and "field managers other-team" in said
    )
    assert "gpu-lab:adoptExisting Namespace/gpu-operator" in said
    assert run.registrations == [], "nothing may be registered on refusal"


def test_an_adopted_namespace_is_a_patch_without_the_labs_marker_and_recorded(
    kubeconfig: Path, chart: str
) -> None:
    adopted = "Namespace/gpu-operator"
    run = run_program(
        existing(kubeconfig, chart, adoptExisting=adopted), cluster={adopted: other_team_namespace()}
    )
    assert run.error is None, run.error
    (ns,) = [r for r in run.registrations if r.typ in (NAMESPACE, NAMESPACE_PATCH)]
    assert ns.typ == NAMESPACE_PATCH
    assert ns.inputs["metadata"] == {
        "name": "gpu-operator",
        "labels": {"pod-security.kubernetes.io/enforce": "privileged"},
    }
    assert run.outputs[out.ADOPTED_OBJECTS] == [adopted]
    assert "namespace/gpu-operator" in run.outputs[out.LEFTOVERS]
    census = run.by_name("existing-census").argv("create")
    assert "--adopt=gpu-operator" in census
    assert run.outputs[out.FOREIGN_OBJECTS] == CENSUS["foreignObjects"]


def test_without_adoption_the_namespace_is_the_labs_and_the_release_carries_the_marker(
    kubeconfig: Path, chart: str
) -> None:
    run = run_program(existing(kubeconfig, chart))
    assert run.error is None, run.error
    ns = run.by_name("gpu-operator-namespace")
    assert ns.typ == NAMESPACE
    assert ns.inputs["metadata"]["labels"]["app.kubernetes.io/managed-by"] == names.PROJECT
    assert run.by_name("gpu-operator-release").inputs["description"] == names.RELEASE_DESCRIPTION
    assert run.outputs[out.ADOPTED_OBJECTS] == []


@pytest.mark.parametrize(
    ("extra", "refs"),
    [
        (
            {},
            ["Namespace/gpu-operator", "HelmRelease/gpu-operator/gpu-operator", "Pod/default/gpu-smoke"],
        ),
        (
            {"simulatedOperands": "true", "computeCheck": "true"},
            [
                "Namespace/gpu-operator",
                "HelmRelease/gpu-operator/gpu-operator",
                "DaemonSet/gpu-operator/nvidia-device-plugin-daemonset",
                "Pod/default/gpu-smoke",
                "Pod/default/gpu-compute",
            ],
        ),
        (
            {"gpuStack": "found", "labNamespace": "team-gpu", "expectedGpus": 0, "chartPath": ""},
            ["Namespace/team-gpu", "Pod/team-gpu/gpu-smoke"],
        ),
        (
            {"gpuStack": "device-plugin"},
            [
                "Namespace/gpu-lab",
                "Namespace/nvidia-device-plugin",
                "HelmRelease/nvidia-device-plugin/nvidia-device-plugin",
                "Pod/gpu-lab/gpu-smoke",
            ],
        ),
    ],
)
def test_the_plan_names_every_object_the_lab_creates_itself(
    kubeconfig: Path, chart: str, extra: dict[str, Any], refs: list[str]
) -> None:
    config = {**existing(kubeconfig, chart), "computeCheck": "false", **extra}
    cfg = parse_config({k: str(v) for k, v in config.items()}, {})
    assert [p.ref for p in edge.planned_objects(cfg)] == refs


def test_a_cluster_that_cannot_be_read_is_a_failed_check_not_a_pass(kubeconfig: Path, chart: str) -> None:
    raw = {k: str(v) for k, v in existing(kubeconfig, chart).items()}
    cfg = parse_config(raw, {})

    def unreachable(api: Any, p: takeover.Planned) -> None:
        raise ConnectionRefusedError("connection refused")

    (f,) = edge.takeover_failures(cfg, registry.get("existing"), read=unreachable, get=getter(raw))
    assert f.id == takeover.CHECK and not f.ok and "connection refused" in f.observed
    assert "get namespaces must work" in f.fix


def test_a_cluster_the_lab_owns_is_not_read(chart: str) -> None:
    cfg = parse_config({"cluster": "sim", "chartPath": chart}, {})

    def never(api: Any, p: takeover.Planned) -> None:
        raise AssertionError("read")

    assert edge.takeover_failures(cfg, registry.get("sim"), read=never) == []


def test_an_object_this_identity_may_not_read_is_left_to_the_access_check(
    kubeconfig: Path, chart: str
) -> None:
    """A guest (``gpuStack: found``) that may not read a planned object gets HTTP 403: that is
    not an unreadable cluster; the access check names the permission (tests/e2e/test_sim_fleet.py
    ``test_a_guest_missing_a_permission_is_told_which_before_anything_is_created``)."""
    from kubernetes.client.rest import ApiException

    raw = {k: str(v) for k, v in existing(kubeconfig, chart).items()}
    cfg, get = parse_config(raw, {}), getter(raw)
    seen: list[str] = []

    def forbidden(api: Any, p: takeover.Planned) -> None:
        seen.append(p.ref)
        raise ApiException(status=403, reason="Forbidden")

    assert edge.takeover_failures(cfg, registry.get("existing"), read=forbidden, get=get) == []
    assert seen == [p.ref for p in edge.planned_objects(cfg)]

    def broken(api: Any, p: takeover.Planned) -> None:
        raise ApiException(status=500, reason="Internal Server Error")

    (f,) = edge.takeover_failures(cfg, registry.get("existing"), read=broken, get=get)
    assert not f.ok and "500" in f.observed
