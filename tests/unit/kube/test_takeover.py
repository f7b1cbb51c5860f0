"""gpulab.kube.takeover: which objects of a name the lab would create are someone else's.

The objects are JSON as the API server returns them (``kubectl get -o json``), with the
``managedFields`` a server-side apply by field manager ``other-team`` leaves; a Helm release is
its Secrets, encoded as Helm 3 stores them (helm v3.18.6 pkg/storage/driver/util.go
``encodeRelease``: gzip, base64; the Secret's ``data`` base64 again).
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

from gpulab.core import names
from gpulab.core.findings import Status
from gpulab.kube import takeover
from gpulab.kube.takeover import Planned

NS = Planned("Namespace", "gpu-operator", None, ("the name is fixed; gpuStack: found",))
RELEASE = Planned(takeover.RELEASE_KIND, "gpu-operator", "gpu-operator", ("helm uninstall",))
SMOKE = Planned("Pod", "gpu-smoke", "default", ("delete it",))


def other_team_namespace() -> dict[str, Any]:
    """Namespace gpu-operator as ``kubectl apply --server-side --field-manager=other-team`` made it."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "gpu-operator",
            "uid": "0b7c4f9e-1111-4c1e-9f00-000000000001",
            "labels": {"kubernetes.io/metadata.name": "gpu-operator", "team": "other-team"},
            "managedFields": [
                {
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}},
                    "manager": "other-team",
                    "operation": "Apply",
                }
            ],
        },
        "status": {"phase": "Active"},
    }


def labs_namespace() -> dict[str, Any]:
    ns = other_team_namespace()
    ns["metadata"]["labels"] = {"app.kubernetes.io/managed-by": names.PROJECT}
    ns["metadata"]["managedFields"][0]["manager"] = "pulumi-kubernetes-5f3a"
    return ns


def release_secret(description: str, version: int = 1, release: str = "gpu-operator") -> dict[str, Any]:
    record = {"name": release, "version": version, "info": {"status": "deployed", "description": description}}
    stored = base64.b64encode(gzip.compress(json.dumps(record).encode())).decode()
    return {
        "kind": "Secret",
        "metadata": {
            "name": f"sh.helm.release.v1.{release}.v{version}",
            "namespace": "gpu-operator",
            "labels": {"owner": "helm", "name": release, "status": "deployed", "version": str(version)},
            "managedFields": [{"manager": "helm", "operation": "Update"}],
        },
        "type": "helm.sh/release.v1",
        "data": {"release": base64.b64encode(stored.encode()).decode()},
    }


def lookup(cluster: dict[str, Any]) -> Any:
    return lambda p: cluster.get(p.ref)


def test_a_namespace_made_by_another_field_manager_is_refused_naming_it_its_marks_and_the_choices() -> None:
    (f,) = takeover.conflicts([NS], lookup({"Namespace/gpu-operator": other_team_namespace()}), ())
    assert f.id == takeover.CHECK and f.status is Status.FAIL and f.subject == "Namespace/gpu-operator"
    assert f.observed.startswith("Namespace gpu-operator exists and is not the lab's")
    assert "field managers other-team" in f.observed
    assert "destroy would delete it" in f.observed
    assert "gpuStack: found" in f.fix
    assert "scripts/pulumi config set --stack <stack> gpu-lab:adoptExisting Namespace/gpu-operator" in f.fix


def test_every_conflict_is_listed_at_once_and_the_labs_own_objects_pass() -> None:
    smoke = {"metadata": {"name": "gpu-smoke", "namespace": "default", "labels": {"app": "theirs"}}}
    cluster = {
        "Namespace/gpu-operator": other_team_namespace(),
        "HelmRelease/gpu-operator/gpu-operator": [release_secret("Install complete")],
        "Pod/default/gpu-smoke": smoke,
    }
    found = takeover.conflicts([NS, RELEASE, SMOKE], lookup(cluster), (), stack="existing")
    assert [f.subject for f in found] == [NS.ref, RELEASE.ref, SMOKE.ref]
    assert "HelmRelease gpu-operator in namespace gpu-operator exists" in found[1].observed
    assert "helm description 'Install complete'" in found[1].observed
    # Only a Namespace can be adopted: the others' choices do not offer it.
    assert "adoptExisting" not in found[1].fix and "adoptExisting" not in found[2].fix
    assert "--stack existing" in found[0].fix


def test_the_labs_own_namespace_and_release_from_an_earlier_run_are_not_conflicts() -> None:
    cluster = {
        "Namespace/gpu-operator": labs_namespace(),
        # Revision 2 is the lab's (an upgrade); revision 1's description does not count.
        "HelmRelease/gpu-operator/gpu-operator": [
            release_secret("Install complete", 1),
            release_secret(names.RELEASE_DESCRIPTION, 2),
        ],
    }
    assert takeover.conflicts([NS, RELEASE], lookup(cluster), ()) == []


def test_nothing_there_is_no_conflict() -> None:
    assert (
        takeover.conflicts([NS, RELEASE, SMOKE], lookup({"HelmRelease/gpu-operator/gpu-operator": []}), ())
        == []
    )


def test_an_adopted_namespace_is_used_as_it_is() -> None:
    cluster = {"Namespace/gpu-operator": other_team_namespace()}
    assert takeover.conflicts([NS, RELEASE], lookup(cluster), ("Namespace/gpu-operator",)) == []


def test_adopting_what_is_absent_the_labs_own_or_not_planned_is_refused() -> None:
    absent = takeover.conflicts([NS], lookup({}), ("Namespace/gpu-operator",))
    assert [f.observed for f in absent] == [
        "gpu-lab:adoptExisting names Namespace/gpu-operator, which does not exist: there is nothing of "
        "someone else's to adopt"
    ]
    own = takeover.conflicts(
        [NS], lookup({"Namespace/gpu-operator": labs_namespace()}), ("Namespace/gpu-operator",)
    )
    assert "is the lab's own" in own[0].observed and "remove Namespace/gpu-operator" in own[0].fix
    (other,) = takeover.conflicts([NS], lookup({}), ("Namespace/team-a",))
    assert other.observed == (
        "gpu-lab:adoptExisting names Namespace/team-a, which this lab would not create (it creates "
        "Namespace/gpu-operator)"
    )


def test_owner_marks_name_helms_annotations_and_the_field_managers() -> None:
    obj = {
        "metadata": {
            "labels": {"app.kubernetes.io/managed-by": "Helm"},
            "annotations": {
                "meta.helm.sh/release-name": "gpu-operator",
                "meta.helm.sh/release-namespace": "x",
            },
            "managedFields": [
                {"manager": "helm"},
                {"manager": "kube-controller-manager"},
                {"manager": "helm"},
            ],
        }
    }
    assert takeover.owner_marks(obj) == [
        "label app.kubernetes.io/managed-by=Helm",
        "annotation meta.helm.sh/release-name=gpu-operator",
        "annotation meta.helm.sh/release-namespace=x",
        "field managers helm, kube-controller-manager",
    ]
    assert takeover.owner_marks({"metadata": {}}) == ["no owner's marks"]


def test_a_release_record_that_does_not_decode_is_not_the_labs() -> None:
    broken = release_secret(names.RELEASE_DESCRIPTION)
    broken["data"]["release"] = "not base64!"
    assert takeover.release_info(broken) == {}
    assert not takeover.release_is_labs([broken])
    assert not takeover.release_is_labs([])


def test_a_release_without_the_description_in_the_labs_own_namespace_is_the_labs() -> None:
    # Installed by the lab before it wrote its description: its namespace carries the marker.
    cluster = {
        "Namespace/gpu-operator": labs_namespace(),
        "HelmRelease/gpu-operator/gpu-operator": [release_secret("Install complete")],
    }
    assert takeover.conflicts([NS, RELEASE], lookup(cluster), ()) == []
    # In an adopted namespace (someone else's), the same release is not.
    cluster["Namespace/gpu-operator"] = other_team_namespace()
    (f,) = takeover.conflicts([NS, RELEASE], lookup(cluster), ("Namespace/gpu-operator",))
    assert f.subject == RELEASE.ref
