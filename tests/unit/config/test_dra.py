"""gpulab.config.dra: NVIDIA's DRA driver chart as config gives it (gpuStack dra), and where the
mode is offered: sim and existing; minikube, kind and k3s refuse it before anything is created,
each with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.config import dra
from gpulab.config.lab import SCHEMA, ConfigError
from variants.registry import parse_config


def _get(values: dict[str, object]):  # type: ignore[no-untyped-def]
    return lambda k: values.get(k, SCHEMA[k][1])


def test_defaults_are_the_pinned_chart_from_upstreams_registry() -> None:
    problems: list[str] = []
    got = dra.parse(_get({}), problems, {}, installs=True)
    assert not problems and got == dra.DraChart()
    assert (got.version, got.repo, got.driver_root) == (
        "0.5.0",
        "oci://registry.k8s.io/dra-driver-nvidia/charts",
        "/",
    )


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("draChartVersion", "v0.5.0", "without a leading v"),
        ("draChartRepo", "http://x", "must be an https:// or oci:// URL"),
        ("draDriverRoot", "run/nvidia; rm -rf /", "must be an absolute path"),
        ("draChartPath", "/nonexistent/chart", "has no Chart.yaml"),
    ],
)
def test_bad_values_are_named(key: str, value: str, said: str) -> None:
    problems: list[str] = []
    dra.parse(_get({key: value}), problems, {}, installs=True)
    assert any(said in p and key in p for p in problems), problems


def test_a_local_chart_from_the_environment_exports_its_own_version(tmp_path: Path) -> None:
    (tmp_path / "Chart.yaml").write_text('apiVersion: v2\nname: dra-driver-nvidia-gpu\nversion: "0.5.0"\n')
    problems: list[str] = []
    got = dra.parse(_get({}), problems, {dra.CHART_PATH_ENV: str(tmp_path)}, installs=True)
    assert not problems and got.source == f"local:{tmp_path}" and got.local_version() == "0.5.0"
    # Not read for a lab in another mode.
    assert dra.parse(_get({}), problems, {dra.CHART_PATH_ENV: "/nonexistent"}, installs=False).path is None


def test_dra_is_offered_on_sim_and_existing(tmp_path: Path) -> None:
    cfg = parse_config({"cluster": "sim", "gpuStack": "dra", "computeCheck": False}, {})
    assert cfg.fleet.dra and cfg.fleet.stack == "dra" and not cfg.fleet.per_node
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    values = {
        "cluster": "existing",
        "gpuStack": "dra",
        "computeCheck": False,
        "kubeconfigPath": str(kubeconfig),
    }
    try:
        cfg = parse_config({**values, "expectedGpus": 1}, {})
    except ConfigError as e:  # the kubeconfig's own checks may object; never the mode
        assert "gpuStack" not in str(e), str(e)
    else:
        assert cfg.fleet.dra


@pytest.mark.parametrize(
    ("cluster", "reason"),
    [
        # minikube: cri-dockerd hands Docker no CDI device (Mirantis/cri-dockerd v0.4.3).
        ("minikube", "cri-dockerd, which hands Docker no CDI device"),
        ("kind", "demo/clusters/kind/scripts/kind-cluster-config.yaml"),
        ("k3s", "NVIDIA's runtime and toolkit come from the GPU Operator"),
    ],
)
def test_dra_is_refused_with_the_variants_reason(cluster: str, reason: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_config({"cluster": cluster, "gpuStack": "dra", "computeCheck": False}, {})
    said = str(e.value)
    assert f"gpuStack=dra is not offered on cluster={cluster}" in said and reason in said, said


def test_the_benchmark_is_refused_in_dra_mode_and_the_compute_check_is_not() -> None:
    assert parse_config({"cluster": "sim", "gpuStack": "dra"}, {}).compute_check
    with pytest.raises(ConfigError) as e:
        parse_config({"cluster": "existing", "gpuStack": "dra", "benchmarkPod": True}, {})
    assert "set benchmarkPod=false" in str(e.value)
