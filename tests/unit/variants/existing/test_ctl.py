"""variants.existing.ctl's pure helpers: the kubeconfig of one context, the chart's CRDs, the
removal plan, the GPU nodes; and its CLI's usage and plan without a cluster."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.sandbox import shared_chart
from variants.existing import ctl as ec

ROOT = Path(__file__).resolve().parents[2]
# The offline chart as the engine tests find it ($GPULAB_CHART_PATH or the workplace copy).
_CHART = shared_chart()
SHARED_CHART = Path(_CHART) if _CHART else ROOT / "no-chart"


def _doc() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "b",
        "clusters": [
            {"name": "ca", "cluster": {"server": "https://a:6443", "certificate-authority": "certs/ca.crt"}},
            {"name": "cb", "cluster": {"server": "https://b:6443", "certificate-authority-data": "Qg=="}},
        ],
        "users": [
            {"name": "ua", "user": {"client-certificate": "/abs/c.crt", "client-key": "k.key"}},
            {"name": "ub", "user": {"exec": {"command": "aws", "args": ["eks", "get-token"]}}},
        ],
        "contexts": [
            {"name": "a", "context": {"cluster": "ca", "user": "ua", "namespace": "ml"}},
            {"name": "b", "context": {"cluster": "cb", "user": "ub"}},
            {"name": "broken", "context": {"cluster": "missing", "user": "ua"}},
        ],
    }


def test_select_context_defaults_to_current_and_lists_contexts_on_error() -> None:
    assert ec.select_context(_doc())[0] == "b"
    assert ec.select_context(_doc(), "a")[1]["namespace"] == "ml"
    with pytest.raises(ec.KubeconfigError, match="allowed: a, b, broken") as err:
        ec.select_context(_doc(), "nope")
    assert err.value.about == "context"
    with pytest.raises(ec.KubeconfigError, match="names cluster 'missing'"):
        ec.select_context(_doc(), "broken")
    doc = _doc()
    del doc["current-context"]
    with pytest.raises(ec.KubeconfigError, match="no current-context"):
        ec.select_context(doc)
    with pytest.raises(ec.KubeconfigError, match="not a kubeconfig"):
        ec.select_context({"kind": "Pod"})


def test_minify_keeps_one_context_and_inlines_certificate_files(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.crt").write_bytes(b"ca")
    (tmp_path / "k.key").write_bytes(b"key")
    abs_dir = tmp_path / "abs"
    abs_dir.mkdir()
    (abs_dir / "c.crt").write_bytes(b"cert")
    doc = _doc()
    doc["users"][0]["user"]["client-certificate"] = str(abs_dir / "c.crt")
    original = copy.deepcopy(doc)
    out = ec.minify(doc, "a", tmp_path)
    assert doc == original, "minify must not change its input"
    assert out["current-context"] == "a"
    assert [c["name"] for c in out["contexts"]] == ["a"]
    (cluster,) = out["clusters"]
    assert cluster == {
        "name": "ca",
        "cluster": {
            "server": "https://a:6443",
            "certificate-authority-data": base64.b64encode(b"ca").decode(),
        },
    }
    (user,) = out["users"]
    assert user["user"] == {
        "client-certificate-data": base64.b64encode(b"cert").decode(),
        "client-key-data": base64.b64encode(b"key").decode(),
    }


def test_minify_keeps_exec_plugins_and_inline_data() -> None:
    out = ec.minify(_doc(), "b", Path("/nowhere"))
    assert out["clusters"][0]["cluster"]["certificate-authority-data"] == "Qg=="
    assert out["users"][0]["user"]["exec"]["command"] == "aws"


def test_minify_names_a_missing_certificate_file(tmp_path: Path) -> None:
    with pytest.raises(ec.KubeconfigError, match="cannot read certificate-authority") as err:
        ec.minify(_doc(), "a", tmp_path)
    assert err.value.about == "file"


def test_load_kubeconfig_reads_and_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "config"
    doc = _doc()
    path.write_text(yaml.safe_dump(doc))
    text, name = ec.load_kubeconfig(str(path))
    assert name == "b" and yaml.safe_load(text)["current-context"] == "b"
    assert yaml.safe_load(path.read_text()) == doc
    with pytest.raises(ec.KubeconfigError, match="cannot read"):
        ec.load_kubeconfig(str(tmp_path / "missing"))
    (tmp_path / "bad").write_text(": : :\n  - [")
    with pytest.raises(ec.KubeconfigError, match="not YAML"):
        ec.load_kubeconfig(str(tmp_path / "bad"))


@pytest.mark.skipif(_CHART is None, reason="no offline gpu-operator chart (set GPULAB_CHART_PATH)")
def test_pinned_crd_list_is_what_the_v26_7_0_chart_installs() -> None:
    assert yaml.safe_load((SHARED_CHART / "Chart.yaml").read_text())["version"] == "v26.7.0"
    assert ec.chart_crds(SHARED_CHART, nfd=True) == sorted([*ec.OPERATOR_CRDS, *ec.NFD_CRDS])
    assert ec.chart_crds(SHARED_CHART, nfd=False) == sorted(ec.OPERATOR_CRDS)
    assert "clusterpolicies.nvidia.com" in ec.OPERATOR_CRDS and "nvidiadrivers.nvidia.com" in ec.OPERATOR_CRDS


def test_operator_crds_without_a_local_chart() -> None:
    assert ec.operator_crds(None, nfd=False) == sorted(ec.OPERATOR_CRDS)
    assert set(ec.NFD_CRDS) <= set(ec.operator_crds(None, nfd=True))


def test_removal_plan_keeps_what_existed_before() -> None:
    plan = ec.removal_plan(["b.x", "a.x", "c.x"], ["c.x", "z.x"])
    assert plan == {"remove": ["a.x", "b.x"], "keep": ["c.x"]}


def test_gpu_nodes_are_those_with_the_resource_or_the_label() -> None:
    nodes = [
        {"metadata": {"name": "cpu"}, "status": {"allocatable": {"cpu": "4"}}},
        {
            "metadata": {"name": "g1"},
            "status": {"allocatable": {"nvidia.com/gpu": "1"}, "capacity": {"nvidia.com/gpu": "1"}},
        },
        {"metadata": {"name": "g2", "labels": {"nvidia.com/gpu.present": "true"}}, "status": {}},
        {
            # Renamed by time-slicing; the old name lingers at 0 until the kubelet drops it.
            "metadata": {"name": "g3"},
            "status": {
                "allocatable": {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "8"},
                "capacity": {"nvidia.com/gpu": "0", "nvidia.com/gpu.shared": "8"},
            },
        },
    ]
    assert ec.gpu_nodes(nodes) == [
        {"name": "g1", "allocatable": 1, "capacity": 1},
        {"name": "g2", "allocatable": None, "capacity": None},
        {"name": "g3", "allocatable": 8, "capacity": 8},
    ]


def test_cli_crd_plan_needs_no_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert ec.main(["crd-plan", "--crd", "a.x", "--crd=b.x", "--keep=b.x"]) == 0
    assert json.loads(capsys.readouterr().out) == {"keep": ["b.x"], "remove": ["a.x"]}


def test_cli_census_names_an_unusable_context(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(_doc()))
    assert ec.main(["census", "--kubeconfig-path", str(path), "--context", "nope"]) == 1
    assert "cannot load context 'nope'" in capsys.readouterr().err


def test_cli_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as exc:
        ec.main(["census"])
    assert exc.value.code == 2


def test_remove_crds_treats_a_cluster_that_does_not_answer_as_gone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "gone",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "gone", "context": {"cluster": "c", "user": "u"}}],
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    result = ec.remove_crds(str(path), "gone", ["a.x", "b.x"], ["b.x"], timeout=5)
    assert result == {"removed": [], "kept": ["b.x"], "unreachable": True}
    assert "these CRDs remain: a.x" in capsys.readouterr().err
