"""Before the Helm release: will this chart install on this cluster with the lab's values?

Run by the pre-release check (:mod:`gpulab.kube.crd_check`, ``--values``), which then refuses
with the cause and the fix instead of a failure found later in the release or the gate
(issue 23, point 4). Three checks, each a :class:`Problem` when it fails:

1. ``kubeVersion``: the chart's ``Chart.yaml`` constraint against the server's
   ``GitVersion``, as Helm decides it (:mod:`gpulab.kube.kube_version`); Helm would stop the
   release with "chart requires kubeVersion: %s which is incompatible with Kubernetes %s"
   (helm v3 ``pkg/action/install.go``, ``chartutil.IsCompatibleRange``).
2. ``apis``: every kind the chart renders with the lab's values
   (:func:`gpulab.kube.chart_apis.chart_needs`) is served by the API server (discovery of its
   group/version) or defined by the chart's own CRDs; Helm would stop with "unable to build
   kubernetes objects from release manifest: resource mapping not found for name ... no
   matches for kind "X" in version "g/v" ensure CRDs are installed first" (NVIDIA/gpu-operator#453;
   Helm's older wording "unable to recognize "": no matches for kind": NVIDIA/gpu-monitoring-tools#132).
3. ``references``: the ConfigMap the ClusterPolicy will name for the device plugin's sharing
   config (``devicePlugin.config.name``) and the MIG manager's (``migManager.config.name``)
   exists in the operator's namespace, with the ``default`` key, unless the chart makes it
   (``config.create`` with non-empty ``data``: gpu-operator v26.7.0
   ``templates/plugin_config.yaml``, ``templates/mig_config.yaml``; an empty ``data`` makes
   none). The operator mounts the ConfigMap without ``optional`` (gpu-operator v26.7.0
   ``controllers/object_controls.go``: ``handleDevicePluginConfig``, ``createConfigMapVolume``), so a
   missing one keeps the plugin's Pod in ContainerCreating with ``FailedMount`` ("configmap
   "X" not found": grafana/helm-charts#2216 shows the kubelet's text), and the plugin's
   config-manager stops with "specified config X does not exist" (k8s-device-plugin v0.20.0
   ``cmd/config-manager/main.go``) when the key is missing.

The checks are pure over what :func:`read_facts` reads (server version, the group/versions
served, ConfigMaps); :func:`check` joins them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import fixes, yamlio
from gpulab.core.rawapi import raw_get
from gpulab.kube import chart_apis, kube_version

Json = Mapping[str, Any]

#: The chart values that name a ConfigMap the operator mounts, and the key it must hold by
#: default when ``default`` is empty (mig-manager: "Custom ConfigMaps must contain a key named
#: "config.yaml"", the chart's values.yaml).
REFERENCES: Final = (
    ("devicePlugin", "the device plugin's sharing config", ""),
    ("migManager", "the MIG manager's config", "config.yaml"),
)


#: Chart values the lab's own config keys set (components/gpu_operator.py ``helm_values``):
#: a kind rendered under one of them can be turned off by that key.
CONFIG_KEYS: Final = {
    "dcgmExporter.enabled": "dcgmExporter",
    "nfd.enabled": "nfd",
    "devicePlugin.enabled": "devicePlugin",
    "toolkit.enabled": "toolkit",
    "cdi.enabled": "cdi",
}


@dataclass(frozen=True)
class Problem:
    """Why the release would fail: ``check`` (``kubeVersion``, ``apis``, ``references``),
    ``cause`` (one sentence), ``fix`` (runnable as printed)."""

    check: str
    cause: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "cause": self.cause, "fix": self.fix}


def check_kube_version(constraint: str, server: str) -> Problem | None:
    """The chart's ``kubeVersion`` (``""``: none) against the server's ``GitVersion``."""
    if not constraint:
        return None
    try:
        ok = kube_version.satisfies(constraint, server)
    except ValueError as exc:  # ConstraintError too: Helm refuses an improper constraint
        return Problem(
            "kubeVersion",
            f"Helm cannot parse the chart's kubeVersion {constraint!r} ({exc}): it refuses the chart",
            f"use another chart version: {fixes.config_set(('chartVersion', '<version>'))}",
        )
    if ok:
        return None
    return Problem(
        "kubeVersion",
        f"chart requires kubeVersion: {constraint} which is incompatible with Kubernetes {server}",
        "use a chart version whose kubeVersion accepts this server "
        f"({fixes.config_set(('chartVersion', '<version>'))}), or a cluster inside the range "
        f"({fixes.config_set(('kubernetesVersion', '<v1.x.y>'))})",
    )


def check_apis(needs: chart_apis.ChartApis, served: Callable[[str], frozenset[str] | None]) -> list[Problem]:
    """Every certain kind of ``needs`` that neither the server serves (``served(gv)``: the kinds
    of group/version ``gv``, None when the server does not serve ``gv``) nor the chart's CRDs
    define."""
    problems = []
    seen: set[tuple[str, str]] = set()
    for n in needs.needed:
        key = (n.api_version, n.kind)
        if not n.certain or key in seen:
            continue
        seen.add(key)
        group, version = n.group_version
        if f"{group}/{version}/{n.kind}" in needs.crd_kinds:
            continue
        kinds = served(n.api_version)
        if kinds is not None and n.kind in kinds:
            continue
        where = f"{n.source}" + (f" (rendered because {n.condition})" if n.condition else "")
        value = n.condition.split()[0].removeprefix(".Values.") if n.condition.startswith(".Values.") else ""
        config_key = CONFIG_KEYS.get(value)
        off = (
            f", or turn off what renders it ({fixes.config_set((config_key, 'false'))})"
            if config_key
            else f", or use a chart version that does not render it ({_chart_version_fix()})"
        )
        problems.append(
            Problem(
                "apis",
                f"the chart creates a {n.kind} ({n.api_version}) from {where}, and the API server "
                f"does not serve {'that kind in ' if kinds is not None else ''}{n.api_version}: Helm "
                f'would stop with "no matches for kind "{n.kind}" in version "{n.api_version}""',
                f"install what serves {n.api_version} {n.kind} first (its CRD: "
                f"{fixes.KUBECTL} get crd | grep {group or n.kind.lower()}){off}",
            )
        )
    return problems


def _chart_version_fix() -> str:
    return fixes.config_set(("chartVersion", "<version>"))


def _get(values: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(values, Mapping):
            return None
        values = values.get(p)
    return values


def check_references(
    values: Json,
    namespace: str,
    config_map: Callable[[str], Json | None],
    elsewhere: Callable[[str], list[str]] = lambda name: [],
) -> list[Problem]:
    """The ConfigMaps :data:`REFERENCES` name in ``values`` (the merged chart values) exist in
    ``namespace`` with their default key (``config_map(name)``: the ConfigMap's JSON, None
    when absent), unless the chart makes them. A missing one that exists in other namespaces
    (``elsewhere(name)``: their names) says so: the operator reads only its own namespace's."""
    problems = []
    for component, what, required_key in REFERENCES:
        cfg = _get(values, component, "config") or {}
        name = str(cfg.get("name") or "")
        if not name or (cfg.get("create") and cfg.get("data")):
            continue
        key = str(cfg.get("default") or "") if component == "devicePlugin" else required_key
        cm = config_map(name)
        if cm is None:
            others = elsewhere(name)
            where = (
                f" (a ConfigMap {name} exists in {', '.join(others)}, but the operator reads only its own "
                f"namespace's: copy it to {namespace})"
                if others
                else ""
            )
            problems.append(
                Problem(
                    "references",
                    f"{what} names ConfigMap {namespace}/{name} ({component}.config.name), which does "
                    f"not exist{where}: the operator mounts it, so the Pod would wait in ContainerCreating "
                    f'(FailedMount: configmap "{name}" not found)',
                    f"create it first ({fixes.KUBECTL} -n {namespace} create configmap {name} "
                    f"--from-file={key or '<key>'}=<file>), or name one that exists "
                    f"({fixes.KUBECTL} -n {namespace} get configmaps)",
                )
            )
            continue
        data = {**(cm.get("data") or {}), **(cm.get("binaryData") or {})}
        if key and key not in data:
            problems.append(
                Problem(
                    "references",
                    f"ConfigMap {namespace}/{name} has no key {key!r} ({what}; its keys: "
                    f"{', '.join(sorted(data)) or 'none'}): the config-manager would stop with "
                    f'"specified config {key} does not exist"',
                    f"add the key ({fixes.KUBECTL} -n {namespace} edit configmap {name}), or name one of "
                    "its keys",
                )
            )
    return problems


def merged_values(chart_dir: Path | None, lab_values: Json) -> Json:
    """The chart's ``values.yaml`` under the lab's values (Helm's coalescing); the lab's alone
    without a chart on disk."""
    if chart_dir is None:
        return lab_values
    path = chart_dir / "values.yaml"
    base = yamlio.load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    merged: Json = chart_apis.merge(base or {}, dict(lab_values))
    return merged


def chart_kube_version(chart_dir: Path) -> str:
    """``kubeVersion`` of the chart's Chart.yaml (``""`` when none or unreadable)."""
    try:
        doc = yamlio.load((chart_dir / "Chart.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ""
    return str(doc.get("kubeVersion") or "") if isinstance(doc, Mapping) else ""


def served_reader(api: Any) -> Callable[[str], frozenset[str] | None]:
    """``served(api_version)``: the kinds the API server serves in ``api_version`` (``v1``,
    ``monitoring.coreos.com/v1``), None when it does not serve that group/version (discovery:
    ``GET /api/v1`` or ``/apis/<group>/<version>``; 404 is "not served"). Cached per call."""
    import json

    cache: dict[str, frozenset[str] | None] = {}

    def served(api_version: str) -> frozenset[str] | None:
        if api_version in cache:
            return cache[api_version]
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        status, body = raw_get(api, path, timeout=(5, 15))
        if status == 404:
            cache[api_version] = None
        elif 200 <= status < 300:
            doc = json.loads(body)
            cache[api_version] = frozenset(str(r.get("kind")) for r in doc.get("resources") or [])
        else:
            raise RuntimeError(f"discovery of {api_version} answered HTTP {status}")
        return cache[api_version]

    return served


def check(
    chart_dir: Path | None,
    lab_values: Json,
    namespace: str,
    server_version: str,
    served: Callable[[str], frozenset[str] | None],
    config_map: Callable[[str], Json | None],
    elsewhere: Callable[[str], list[str]] = lambda name: [],
) -> tuple[dict[str, Any], list[Problem]]:
    """All three checks (module docstring); ``chart_dir`` None (a repository chart, not on
    disk before Helm pulls it): the references only. Returns ``(report, problems)``; the
    report has ``kubernetesVersion``, ``kubeVersion``, ``apis`` (``api_version kind`` the
    chart renders), ``maybe`` (kinds under conditions this reader cannot evaluate: never a
    reason to refuse) and ``problems``."""
    problems: list[Problem] = []
    report: dict[str, Any] = {"kubernetesVersion": server_version}
    if chart_dir is not None:
        constraint = chart_kube_version(chart_dir)
        report["kubeVersion"] = constraint
        kv = check_kube_version(constraint, server_version)
        problems += [kv] if kv else []
        needs = chart_apis.chart_needs(chart_dir, lab_values)
        report["apis"] = sorted({f"{n.api_version} {n.kind}" for n in needs.needed if n.certain})
        report["maybe"] = sorted(
            {f"{n.api_version} {n.kind} ({n.source})" for n in needs.needed if not n.certain}
        )
        problems += check_apis(needs, served)
    problems += check_references(merged_values(chart_dir, lab_values), namespace, config_map, elsewhere)
    report["problems"] = [p.to_json() for p in problems]
    return report, problems


def describe(problems: Iterable[Problem]) -> str:
    """The problems as stderr lines: ``compat <check>: <cause>`` then ``  fix: <fix>``."""
    return "\n".join(f"compat {p.check}: {p.cause}\n  fix: {p.fix}" for p in problems)
