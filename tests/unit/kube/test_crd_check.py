"""gpulab.kube.crd_check: the cluster's operator CRDs against the chart's, before the release.

The cases are the ones the trackers report: a release installed over the CRDs of an older
chart (NVIDIA/gpu-operator#431, #139: the new ClusterPolicy fields are "unknown"), objects
stored in a version the chart dropped, and CRDs another release owns. The API server side
(read, replace) was checked against the simulated control plane: the chart's CRDs read back
after ``kubectl apply --server-side`` compare ``same``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.kube import crd_check as cc
from tests.support.sandbox import shared_chart

_CHART = shared_chart()


def _crd(
    name: str = "clusterpolicies.nvidia.com", versions: tuple[str, ...] = ("v1",), prop: str = "cdi"
) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name, "annotations": {"controller-gen.kubebuilder.io/version": "v0.21.0"}},
        "spec": {
            "group": name.split(".", 1)[1],
            "scope": "Cluster",
            "names": {"kind": "ClusterPolicy", "plural": name.split(".")[0]},
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": i == 0,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {prop: {"type": "object"}}}
                    },
                    "subresources": {"status": {}},
                }
                for i, v in enumerate(versions)
            ],
        },
    }


def _live(doc: dict[str, Any], stored: tuple[str, ...] = ("v1",), **meta: Any) -> dict[str, Any]:
    live = copy.deepcopy(doc)
    live["metadata"].update({"resourceVersion": "4711", "uid": "u-1", **meta})
    live["status"] = {"storedVersions": list(stored), "acceptedNames": live["spec"]["names"]}
    live["spec"]["conversion"] = {"strategy": "None"}  # the API server's default
    return live


CHART = cc.ChartCrd("clusterpolicies.nvidia.com", "crds/nvidia.com_clusterpolicies.yaml", _crd())


def test_absent_and_same_let_the_release_go_ahead() -> None:
    assert cc.compare(CHART, None, "v26.7.0").state == "absent"
    same = cc.compare(CHART, _live(_crd()), "v26.7.0")
    assert (same.state, same.reasons, same.fix) == ("same", (), "")


def test_an_older_charts_crd_differs_and_the_fix_applies_the_charts_file() -> None:
    old = _live(_crd(prop="driver"), labels={"helm.sh/chart": "gpu-operator-v25.3.0"})
    old["metadata"]["annotations"]["controller-gen.kubebuilder.io/version"] = "v0.16.1"
    v = cc.compare(CHART, old, "v26.7.0", chart_dir="/charts/gpu-operator")
    assert v.state == "differs"
    assert "it names chart version v25.3.0, the chart is v26.7.0" in v.reasons
    assert "version v1 has another schema" in v.reasons
    assert "controller-gen v0.16.1 instead of v0.21.0" in v.reasons
    assert v.fix.startswith(
        "scripts/kubectl apply --server-side --force-conflicts -f "
        "/charts/gpu-operator/crds/nvidia.com_clusterpolicies.yaml"
    )


def test_a_version_the_chart_adds_is_a_difference_too() -> None:
    chart = cc.ChartCrd(CHART.name, CHART.file, _crd(versions=("v1", "v2")))
    v = cc.compare(chart, _live(_crd()), "v26.7.0")
    assert v.state == "differs" and "version v2 missing" in v.reasons


def test_a_newer_charts_crd_is_never_downgraded() -> None:
    newer = _live(_crd(prop="gpuDirect"), labels={"app.kubernetes.io/version": "v27.1.0"})
    v = cc.compare(CHART, newer, "v26.7.0")
    assert v.state == "newer" and "scripts/pulumi config set gpu-lab:chartVersion v27.1.0" in v.fix


def test_objects_stored_in_a_version_the_chart_dropped_stop_the_install() -> None:
    v = cc.compare(CHART, _live(_crd(versions=("v1alpha1",)), stored=("v1alpha1",)), "v26.7.0")
    assert v.state == "incompatible"
    assert "v1alpha1" in v.reasons[0] and "kubectl get clusterpolicies -A" in v.fix


def test_a_crd_another_helm_release_owns_is_left_alone() -> None:
    owned = _live(_crd())
    owned["metadata"]["annotations"].update(
        {"meta.helm.sh/release-name": "gpu-stack", "meta.helm.sh/release-namespace": "platform"}
    )
    v = cc.compare(CHART, owned, "v26.7.0")
    assert v.state == "foreign" and "helm -n platform status gpu-stack" in v.fix
    ours = _live(_crd())
    ours["metadata"]["annotations"].update(
        {"meta.helm.sh/release-name": "gpu-operator", "meta.helm.sh/release-namespace": "gpu-operator"}
    )
    assert cc.compare(CHART, ours, "v26.7.0").state == "same"


def test_the_upgrade_is_an_update_that_drops_the_old_version_label() -> None:
    old = _live(_crd(prop="driver"), labels={"helm.sh/chart": "gpu-operator-v25.3.0", "team": "ml"})
    body = cc._upgraded(CHART, old)
    assert body["metadata"]["resourceVersion"] == "4711"
    assert body["metadata"]["labels"] == {"team": "ml"}
    assert body["spec"] == CHART.doc["spec"]
    assert cc.compare(CHART, _live(body), "v26.7.0").state == "same"


def test_chart_crds_reads_crds_and_the_nfd_subchart(tmp_path: Path) -> None:
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "cp.yaml").write_text(yaml.safe_dump(_crd()))
    nfd = tmp_path / "charts" / "node-feature-discovery" / "crds"
    nfd.mkdir(parents=True)
    (nfd / "nfd.yaml").write_text(
        yaml.safe_dump_all([_crd("nodefeatures.nfd.k8s-sigs.io"), {"kind": "Other"}])
    )
    (tmp_path / "Chart.yaml").write_text("name: gpu-operator\nversion: v26.7.0\n")
    assert [c.name for c in cc.chart_crds(tmp_path, nfd=False)] == ["clusterpolicies.nvidia.com"]
    both = cc.chart_crds(tmp_path, nfd=True)
    assert [c.file for c in both] == ["crds/cp.yaml", "charts/node-feature-discovery/crds/nfd.yaml"]
    assert cc.chart_version(tmp_path) == "v26.7.0"


@pytest.mark.skipif(_CHART is None, reason="no offline gpu-operator chart (set GPULAB_CHART_PATH)")
def test_every_crd_of_the_shared_chart_compares_same_with_itself() -> None:
    chart = Path(str(_CHART))
    crds = cc.chart_crds(chart, nfd=True)
    assert len(crds) == 8
    for crd in crds:
        stored = tuple(v["name"] for v in crd.doc["spec"]["versions"] if v.get("storage"))
        assert (
            cc.compare(crd, _live(dict(crd.doc), stored=stored), cc.chart_version(chart)).state == "same"
        ), crd.name


def test_a_directory_without_crds_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cc.main(["--chart", str(tmp_path)]) == 2
    assert "no crds/ directory" in capsys.readouterr().err


class _Raw:
    """What the client returns with ``_preload_content=False``: the bytes sent."""

    def __init__(self, doc: dict[str, Any]) -> None:
        import json

        self.data = json.dumps(doc).encode()


class _Ext:
    """An ``ApiextensionsV1Api`` over a dict of CRDs; a created CRD is Established after
    ``reads_until_established`` reads (``None``: never; ``"conflict"``: its names refused)."""

    def __init__(self, reads_until_established: int | str | None = 1) -> None:
        self.created: list[dict[str, Any]] = []
        self.reads: dict[str, int] = {}
        self.after = reads_until_established

    def create_custom_resource_definition(self, body: dict[str, Any]) -> None:
        self.created.append(body)

    def read_custom_resource_definition(self, name: str, **params: Any) -> _Raw:
        assert params.get("_preload_content") is False
        n = self.reads[name] = self.reads.get(name, 0) + 1
        doc = copy.deepcopy(next(b for b in self.created if b["metadata"]["name"] == name))
        if self.after == "conflict":
            cond = [
                {"type": "NamesAccepted", "status": "False", "message": '"clusterpolicies" is already in use'}
            ]
        elif self.after is not None and n >= int(self.after):
            cond = [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]
        else:
            cond = [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "False"}]
        doc["status"] = {"conditions": cond}
        return _Raw(doc)


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def ext(monkeypatch: pytest.MonkeyPatch) -> _Ext:
    from kubernetes import client

    fake = _Ext(reads_until_established=3)
    monkeypatch.setattr(client, "ApiextensionsV1Api", lambda api: fake)
    return fake


def test_absent_crds_are_created_as_the_charts_files_and_waited_for_until_established(ext: _Ext) -> None:
    # Helm v3.18.6 (action/install.go installCRDs) creates a crds/ file as it is and skips one
    # already present, with its wait (kube/wait.go: every 2 s); the lab's create matches it.
    other = cc.ChartCrd(
        "nodefeatures.nfd.k8s-sigs.io", "charts/nfd/crds/nfd.yaml", _crd("nodefeatures.nfd.k8s-sigs.io")
    )
    clock = _Clock()
    assert cc.create_absent(None, [CHART, other], clock=clock, sleep=clock.sleep) == [CHART.name, other.name]
    assert ext.created == [CHART.doc, other.doc]  # as the chart has them: no labels added
    assert ext.reads == {CHART.name: 3, other.name: 3}  # read until Established, no longer
    assert clock.now == pytest.approx(0.1)  # two pauses of 50 ms, not Helm's 2 s


def test_a_crd_never_established_or_whose_names_are_refused_stops_the_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubernetes import client

    for after, said in ((None, "not Established within 60s"), ("conflict", "is already in use")):
        fake = _Ext(reads_until_established=after)
        monkeypatch.setattr(client, "ApiextensionsV1Api", lambda api, fake=fake: fake)
        clock = _Clock()
        with pytest.raises(cc.CrdCheckError, match=said):
            cc.create_absent(None, [CHART], clock=clock, sleep=clock.sleep)
        assert clock.now <= cc.ESTABLISHED_TIMEOUT + 0.1


def test_a_refused_read_names_the_crd_it_was_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    other = cc.ChartCrd(
        "nodefeatures.nfd.k8s-sigs.io", "charts/nfd/crds/nfd.yaml", _crd("nodefeatures.nfd.k8s-sigs.io")
    )

    class _Refusing(_Ext):
        def read_custom_resource_definition(self, name: str, **params: Any) -> _Raw:
            if name == other.name:  # 403 is not transient: the wait stops at once
                raise ApiException(status=403, reason="Forbidden")
            return super().read_custom_resource_definition(name, **params)

    fake = _Refusing(reads_until_established=None)  # the first CRD is still waiting
    monkeypatch.setattr(client, "ApiextensionsV1Api", lambda api: fake)
    clock = _Clock()
    with pytest.raises(cc.CrdCheckError, match=f"^reading CRD {other.name} failed: 403 Forbidden$"):
        cc.create_absent(None, [CHART, other], clock=clock, sleep=clock.sleep)


@pytest.mark.parametrize(
    ("argv", "problems", "created"),
    [
        (["--apply"], [], [CHART.name]),
        ([], [], []),  # not the lab's cluster: Helm creates them
        (["--apply"], ["a ConfigMap is missing"], []),  # the release will not go ahead: nothing made
    ],
)
def test_main_creates_absent_crds_only_with_apply_and_once_nothing_stops_the_release(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    argv: list[str],
    problems: list[str],
    created: list[str],
) -> None:
    import json

    made: list[str] = []
    monkeypatch.setattr(cc, "load_clients", lambda: None)
    monkeypatch.setattr(
        cc, "run", lambda api, chart, nfd, apply, release, ns: ({"crds": [], "created": []}, 0, [CHART])
    )
    monkeypatch.setattr(cc, "_compat", lambda api, chart, values, ns: ({}, problems))
    monkeypatch.setattr(cc.compat, "describe", lambda p: "; ".join(p))
    monkeypatch.setattr(cc, "create_absent", lambda api, crds: made.extend(c.name for c in crds) or made)
    (tmp_path / "crds").mkdir()
    code = cc.main(["--chart", str(tmp_path), "--values", "{}", *argv])
    assert made == created
    assert code == (1 if problems else 0)
    if not problems:
        assert json.loads(capsys.readouterr().out)["created"] == created
