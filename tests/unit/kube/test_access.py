"""gpulab.kube.access: the guest's permissions, asked first, and deploy/rbac/gpu-lab-guest.yaml
granting exactly them (read-only outside the lab's namespace: one cluster-wide write, its own
namespace's create)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpulab.kube import access
from gpulab.kube.client import GateError

ROOT = Path(__file__).resolve().parents[3]
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}


def _rules() -> tuple[list[dict], list[dict]]:
    docs = list(yaml.safe_load_all((ROOT / access.RBAC_FILE).read_text()))
    cluster = [r for d in docs if d["kind"] == "ClusterRole" for r in d["rules"]]
    ns = [r for d in docs if d["kind"] == "Role" for r in d["rules"]]
    assert all(d["metadata"]["namespace"] == "gpu-lab" for d in docs if d["kind"] in ("Role", "RoleBinding"))
    return cluster, ns


def _granted(rules: list[dict], p: access.Permission) -> bool:
    return any(
        p.group in r["apiGroups"]
        and p.resource in r["resources"]
        and p.verb in r["verbs"]
        and (not r.get("resourceNames") or p.name in r["resourceNames"])
        for r in rules
    )


def test_the_rbac_file_grants_exactly_what_the_check_asks() -> None:
    cluster, ns = _rules()
    perms = access.required("gpu-lab")
    for p in perms:
        assert _granted(ns if p.namespace else cluster, p), p.describe()
    # Nothing more: every verb of every rule is asked for.
    asked = {(p.group, p.resource, p.verb, p.name, bool(p.namespace)) for p in perms}
    for rules, scoped in ((cluster, False), (ns, True)):
        for r in rules:
            for res in r["resources"]:
                for verb in r["verbs"]:
                    for name in r.get("resourceNames") or [""]:
                        assert (r["apiGroups"][0], res, verb, name, scoped) in asked, (res, verb, name)


def test_read_only_outside_its_namespace_but_its_own() -> None:
    cluster, _ = _rules()
    writes = [
        (r["resources"], v, r.get("resourceNames")) for r in cluster for v in r["verbs"] if v in WRITE_VERBS
    ]
    assert writes == [(["namespaces"], "create", None), (["namespaces"], "delete", ["gpu-lab"])]


def test_a_missing_permission_is_named_before_anything_is_created() -> None:
    def ask(p: access.Permission) -> bool:
        return not (p.verb == "create" and p.resource == "pods")

    with pytest.raises(GateError) as err:
        access.check(ask, "team-a")
    text = str(err.value)
    assert "lacks 1 of the" in text and "(nothing was created)" in text
    assert "create pods in namespace team-a: the per-node smoke and compute Pods" in text
    assert access.RBAC_FILE in text
    assert access.check(lambda p: True, "team-a").namespace == "team-a"
