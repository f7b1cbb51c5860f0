"""Compatibility before the release (gpulab.kube.compat, kube_version, chart_apis): Helm's
kubeVersion semantics, the kinds a chart renders against what the server serves, the
ConfigMaps the values name. The failures quoted are real reports'."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gpulab.kube import chart_apis, compat, kube_version
from tests.support.sandbox import shared_chart

# --- kubeVersion, as Helm's chartutil.IsCompatibleRange (Masterminds/semver v3) decides it ---


@pytest.mark.parametrize(
    ("constraint", "version", "ok"),
    [
        # microcks/microcks#383: "chart requires kubeVersion: >=1.17.0 which is incompatible
        # with Kubernetes v1.19.6-eks-49a6c0" (a prerelease only matches a prerelease comparator).
        (">=1.17.0", "v1.19.6-eks-49a6c0", False),
        (">=1.17.0-0", "v1.19.6-eks-49a6c0", True),
        # permitio/opal-helm-chart#15: ">= 1.18.0 which is incompatible with Kubernetes v1.21.5-eks-bc4871b".
        (">= 1.18.0", "v1.21.5-eks-bc4871b", False),
        # The GPU Operator chart v26.7.0's own constraint, against the versions the lab targets.
        (">= 1.16.0-0", "v1.34.0", True),
        (">= 1.16.0-0", "v1.36.3", True),
        (">= 1.16.0-0", "v1.30.3-eks-a18cd3a", True),
        # Build metadata is ignored (k3s).
        ("< 1.22.0-0", "v1.25.3+k3s1", False),
        (">=1.19.0 <1.22.0", "v1.21.2", True),
        (">=1.19.0, <1.22.0", "v1.22.0", False),
        ("~1.34", "v1.34.9", True),
        ("^1.30", "v1.36.0", True),
        ("1.20 - 1.25", "v1.26.0", False),
        (">=1.30 || <1.10", "v1.9.0", True),
    ],
)
def test_kube_version_as_helm_decides_it(constraint: str, version: str, ok: bool) -> None:
    assert kube_version.satisfies(constraint, version) is ok


def test_a_refused_kube_version_is_a_problem_with_helms_words_and_a_fix() -> None:
    p = compat.check_kube_version(">=1.17.0", "v1.19.6-eks-49a6c0")
    assert p is not None and p.check == "kubeVersion"
    assert (
        p.cause
        == "chart requires kubeVersion: >=1.17.0 which is incompatible with Kubernetes v1.19.6-eks-49a6c0"
    )
    assert "scripts/pulumi config set gpu-lab:chartVersion <version> && make lab" in p.fix
    assert compat.check_kube_version("", "v1.36.3") is None
    bad = compat.check_kube_version(">= one", "v1.36.3")
    assert bad is not None and "cannot parse" in bad.cause


# --- the kinds the chart renders -------------------------------------------------------------


def _chart(tmp_path: Path, templates: dict[str, str], values: str = "", crds: str = "") -> Path:
    d = tmp_path / "c"
    (d / "templates").mkdir(parents=True)
    (d / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n", encoding="utf-8")
    (d / "values.yaml").write_text(values, encoding="utf-8")
    for name, text in templates.items():
        (d / "templates" / name).write_text(text, encoding="utf-8")
    if crds:
        (d / "crds").mkdir()
        (d / "crds" / "crd.yaml").write_text(crds, encoding="utf-8")
    return d


SERVICE_MONITOR = (
    "{{- if .Values.metrics.serviceMonitor.enabled }}\napiVersion: monitoring.coreos.com/v1\n"
    "kind: ServiceMonitor\nmetadata:\n  name: x\n{{- end }}\n"
)


def _served(table: dict[str, set[str]]) -> Any:
    return lambda gv: frozenset(table[gv]) if gv in table else None


def test_a_kind_the_server_does_not_serve_is_refused_with_helms_message(tmp_path: Path) -> None:
    """NVIDIA/gpu-operator#453: 'no matches for kind "ServiceMonitor" in version
    "monitoring.coreos.com/v1"' (and NVIDIA/gpu-monitoring-tools#132, Helm's older "unable to
    recognize" wording): the chart renders a ServiceMonitor, no Prometheus operator is there."""
    chart = _chart(
        tmp_path, {"sm.yaml": SERVICE_MONITOR}, "metrics:\n  serviceMonitor:\n    enabled: false\n"
    )
    needs = chart_apis.chart_needs(chart, {"metrics": {"serviceMonitor": {"enabled": True}}})
    problems = compat.check_apis(needs, _served({"v1": {"ConfigMap"}}))
    assert len(problems) == 1
    assert 'no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"' in problems[0].cause
    assert "rendered because .Values.metrics.serviceMonitor.enabled" in problems[0].cause
    assert problems[0].fix.startswith("install what serves monitoring.coreos.com/v1 ServiceMonitor first")
    # Off by the values: not rendered, not a problem.
    off = chart_apis.chart_needs(chart, {})
    assert compat.check_apis(off, _served({})) == []
    # Served: not a problem.
    assert compat.check_apis(needs, _served({"monitoring.coreos.com/v1": {"ServiceMonitor"}})) == []


def test_a_kind_the_charts_own_crds_define_counts_as_served(tmp_path: Path) -> None:
    crd = (
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n "
        " name: widgets.example.com\n"
        "spec:\n  group: example.com\n  names:\n    kind: Widget\n "
        " versions:\n  - name: v1\n    served: true\n"
    )
    chart = _chart(
        tmp_path, {"w.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"}, crds=crd
    )
    assert compat.check_apis(chart_apis.chart_needs(chart, {}), _served({})) == []


def test_a_condition_the_reader_cannot_evaluate_is_maybe_never_a_refusal(tmp_path: Path) -> None:
    template = (
        '{{- if semverCompare ">=1.30" .Capabilities.KubeVersion.Version }}\n'
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: x\n{{- end }}\n"
    )
    needs = chart_apis.chart_needs(_chart(tmp_path, {"x.yaml": template}), {})
    assert [(n.kind, n.certain) for n in needs.needed] == [("ServiceMonitor", False)]
    assert compat.check_apis(needs, _served({})) == []


@pytest.mark.skipif(shared_chart() is None, reason="no offline gpu-operator chart")
def test_the_gpu_operator_chart_v26_7_0_with_the_labs_values_needs_only_served_or_own_kinds() -> None:
    """The chart the lab installs renders (with the lab's minikube values) exactly the kinds
    `helm template` v3.22.0 printed for it (checked by hand: apps/v1 DaemonSet and Deployment,
    batch/v1 Job, nvidia.com/v1 ClusterPolicy, RBAC, ConfigMap, ServiceAccount), all core or
    its own CRDs'."""
    chart = Path(str(shared_chart()))
    values = {"driver": {"enabled": False}, "nfd": {"enabled": True}, "devicePlugin": {"enabled": True}}
    needs = chart_apis.chart_needs(chart, values)
    kinds = {f"{n.api_version} {n.kind}" for n in needs.needed if n.certain}
    assert kinds == {
        "apps/v1 DaemonSet",
        "apps/v1 Deployment",
        "batch/v1 Job",
        "nvidia.com/v1 ClusterPolicy",
        "rbac.authorization.k8s.io/v1 ClusterRole",
        "rbac.authorization.k8s.io/v1 ClusterRoleBinding",
        "rbac.authorization.k8s.io/v1 Role",
        "rbac.authorization.k8s.io/v1 RoleBinding",
        "v1 ConfigMap",
        "v1 ServiceAccount",
    }
    assert "nvidia.com/v1/ClusterPolicy" in needs.crd_kinds
    core = {
        "v1": {"ConfigMap", "ServiceAccount"},
        "apps/v1": {"DaemonSet", "Deployment"},
        "batch/v1": {"Job"},
        "rbac.authorization.k8s.io/v1": {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"},
    }
    assert compat.check_apis(needs, _served(core)) == []


# --- the ConfigMaps the values name ----------------------------------------------------------


def test_a_sharing_config_naming_a_missing_configmap_is_refused_with_the_create() -> None:
    """gpu-operator v26.7.0 mounts devicePlugin.config.name without optional
    (controllers/object_controls.go createConfigMapVolume), so the kubelet reports what
    grafana/helm-charts#2216 quotes: 'MountVolume.SetUp failed for volume "config" : configmap
    "loki-stack-promtail" not found'; the check says it before the release."""
    values = {"devicePlugin": {"config": {"name": "lab-sharing", "create": False, "default": "any"}}}
    problems = compat.check_references(values, "gpu-operator", lambda name: None)
    assert len(problems) == 1 and problems[0].check == "references"
    assert (
        "names ConfigMap gpu-operator/lab-sharing (devicePlugin.config.name), which does not exist"
        in problems[0].cause
    )
    assert 'configmap "lab-sharing" not found' in problems[0].cause
    assert problems[0].fix.startswith(
        "create it first (scripts/kubectl -n gpu-operator create "
        "configmap lab-sharing --from-file=any=<file>)"
    )


def test_a_configmap_in_another_namespace_is_named() -> None:
    """NVIDIA/gpu-operator#412: the time-slicing ConfigMap made in kube-system, the operator in
    its own namespace: it reads only its own."""
    values = {"devicePlugin": {"config": {"name": "time-slicing-config", "default": "any"}}}
    (p,) = compat.check_references(values, "gpu-operator", lambda n: None, lambda n: ["kube-system"])
    assert "a ConfigMap time-slicing-config exists in kube-system" in p.cause
    assert "copy it to gpu-operator" in p.cause


def test_a_configmap_without_the_default_key_is_refused_with_the_config_managers_words() -> None:
    """k8s-device-plugin v0.20.0 cmd/config-manager/main.go: "specified config %v does not exist"."""
    values = {"devicePlugin": {"config": {"name": "lab-sharing", "default": "any"}}}
    cm = {"data": {"default": "version: v1\n"}}
    problems = compat.check_references(values, "gpu-operator", lambda name: cm)
    assert len(problems) == 1
    assert (
        "has no key 'any'" in problems[0].cause and "specified config any does not exist" in problems[0].cause
    )


def test_a_configmap_the_chart_makes_or_that_exists_is_no_problem() -> None:
    made = {"devicePlugin": {"config": {"name": "time-slicing-config", "create": True, "data": {"any": "x"}}}}
    assert compat.check_references(made, "gpu-operator", lambda name: None) == []
    present = {"devicePlugin": {"config": {"name": "lab-sharing", "default": "any"}}}
    assert compat.check_references(present, "gpu-operator", lambda name: {"data": {"any": "x"}}) == []
    # create with empty data makes none (templates/plugin_config.yaml: `not (empty ...data)`).
    empty = {"devicePlugin": {"config": {"name": "lab-sharing", "create": True, "data": {}}}}
    assert len(compat.check_references(empty, "gpu-operator", lambda name: None)) == 1


def test_the_mig_managers_configmap_needs_config_yaml() -> None:
    """The chart's values.yaml: "Custom ConfigMaps must contain a key named "config.yaml"."."""
    values = {"migManager": {"config": {"name": "custom-mig", "create": False}}}
    problems = compat.check_references(values, "gpu-operator", lambda name: {"data": {"other": "x"}})
    assert len(problems) == 1 and "'config.yaml'" in problems[0].cause


def test_check_runs_all_three_and_reports_what_it_read(tmp_path: Path) -> None:
    chart = _chart(tmp_path, {"sm.yaml": SERVICE_MONITOR}, "metrics:\n  serviceMonitor:\n    enabled: true\n")
    (chart / "Chart.yaml").write_text(
        'apiVersion: v2\nname: c\nversion: 1.0.0\nkubeVersion: ">= 1.40.0-0"\n', encoding="utf-8"
    )
    values = {"devicePlugin": {"config": {"name": "gone", "default": "any"}}}
    report, problems = compat.check(chart, values, "gpu-operator", "v1.36.3", _served({}), lambda n: None)
    assert [p.check for p in problems] == ["kubeVersion", "apis", "references"]
    assert report["kubeVersion"] == ">= 1.40.0-0" and report["apis"] == [
        "monitoring.coreos.com/v1 ServiceMonitor"
    ]
    # A repository chart (not on disk): the references only.
    report, problems = compat.check(None, values, "gpu-operator", "v1.36.3", _served({}), lambda n: None)
    assert [p.check for p in problems] == ["references"] and "apis" not in report


def test_describe_prints_cause_then_fix() -> None:
    text = compat.describe([compat.Problem("apis", "cause", "fix")])
    assert text == "compat apis: cause\n  fix: fix"


def test_the_static_reader_matches_a_copy_with_an_extra_template(tmp_path: Path) -> None:
    chart = shared_chart()
    if chart is None:
        pytest.skip("no offline gpu-operator chart")
    copy = tmp_path / "gpu-operator"
    shutil.copytree(chart, copy)
    (copy / "templates" / "sm.yaml").write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: x\n", encoding="utf-8"
    )
    kinds = {(n.api_version, n.kind) for n in chart_apis.chart_needs(copy, {}).needed if n.certain}
    assert ("monitoring.coreos.com/v1", "ServiceMonitor") in kinds
