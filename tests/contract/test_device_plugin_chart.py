"""Contract: NVIDIA's nvidia-device-plugin chart and GPU Feature Discovery (``gpuStack: device-plugin``).

Read here from the chart the offline lab installs: NVIDIA/k8s-device-plugin at
``DEVICE_PLUGIN_CHART_OFFLINE_VERSION`` (v0.19.0, toolchain/versions.env), fetched from the Go
module proxy by toolchain/device-plugin-chart.sh (``$GPULAB_DEVICE_PLUGIN_CHART_PATH``), whose
module root also holds the plugin's and GFD's sources. The connected default, v0.20.0 (the newest
release in https://nvidia.github.io/k8s-device-plugin), was read at its tag (NVIDIA/
k8s-device-plugin v0.20.0, deployments/helm/nvidia-device-plugin/values.yaml and templates/,
cmd/gpu-feature-discovery/main.go) on 2026-12-03: every value below exists there with the same
meaning, its NFD subchart is node-feature-discovery 0.19.0, and GFD's
``--use-node-feature-api`` defaults to true as well. A bump of either version fails
:func:`test_the_chart_is_the_offline_version` or the connected default's test in
tests/unit/config/test_device_plugin.py: re-read these sources at the new tag.
"""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.device_plugin import helm_values
from gpulab.config.device_plugin import CHART, NAMESPACE, RELEASE, DevicePluginChart, ImageRef
from gpulab.config.lab import OperatorConfig
from gpulab.kube import fleet
from tests.contract.conftest import go_module_chart, versions
from variants.existing.ctl import NFD_CRDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chart() -> Path:
    """The unpacked chart (``$GPULAB_DEVICE_PLUGIN_CHART_PATH``, else the Go module cache's)."""
    return go_module_chart("GPULAB_DEVICE_PLUGIN_CHART_PATH", "device-plugin-chart.sh", "device plugin chart")


def _module(chart: Path) -> Path:
    """The module root: the chart is deployments/helm/nvidia-device-plugin in it."""
    return chart.parents[2]


def _paths(values: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key, value in values.items():
        path = (*prefix, key)
        # config.map's keys are the config names the lab chooses; image/nfd.image are maps the
        # chart (or its subchart) reads key by key.
        if isinstance(value, dict) and path not in (("config", "map"),):
            out += _paths(value, path)
        else:
            out.append(path)
    return out


def test_the_chart_is_the_offline_version(chart: Path) -> None:
    doc = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert doc["name"] == CHART
    assert doc["version"] == versions()["DEVICE_PLUGIN_CHART_OFFLINE_VERSION"]
    (dep,) = doc["dependencies"]
    # The NFD subchart, on when GFD is (its condition), deployed with the chart.
    assert (dep["name"], dep["alias"], dep["condition"]) == (
        "node-feature-discovery",
        "nfd",
        "nfd.enabled,gfd.enabled",
    )


def test_every_value_the_lab_sets_is_the_charts(chart: Path) -> None:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    lab = helm_values(
        DevicePluginChart(image=ImageRef("r/p", "v1"), nfd_image=ImageRef("r/n", "v2")),
        OperatorConfig(time_slicing_replicas=4),
        "nvidia",
        "envvar",
    )
    sub = _subchart_values(chart)
    condition = yaml.safe_load((chart / "Chart.yaml").read_text())["dependencies"][0]["condition"]
    for path in _paths(lab):
        if path == ("nfd", "enabled"):
            # Not in values.yaml: Chart.yaml's dependency condition reads it (first of the list).
            assert condition.split(",")[0] == "nfd.enabled"
            continue
        if path == ("nfd", "image", "tag"):
            # Commented out in the subchart's values.yaml; its templates read it, default appVersion.
            assert ".Values.image.tag | default .Chart.AppVersion" in _subchart_file(
                chart, "templates/master.yaml"
            )
            continue
        node: Any = values
        for key in path:
            if path[0] == "nfd" and key == "image":
                # The subchart's own values: the chart passes nfd.* to it (its alias).
                node = sub
            assert isinstance(node, dict) and key in node, (
                f"{'.'.join(path)} is not a key of the chart's values"
            )
            node = node[key]
    # gfd off by default: the lab turns it on; the default namespace refused unless allowed.
    assert values["gfd"]["enabled"] is False and values["allowDefaultNamespace"] is False


def _subchart_file(chart: Path, name: str) -> str:
    (tgz,) = (chart / "charts").glob("node-feature-discovery-chart-*.tgz")
    with tarfile.open(tgz) as t:
        member = t.extractfile(f"node-feature-discovery/{name}")
        assert member is not None
        return member.read().decode()


def _subchart_values(chart: Path) -> dict[str, Any]:
    (tgz,) = (chart / "charts").glob("node-feature-discovery-chart-*.tgz")
    with tarfile.open(tgz) as t:
        member = t.extractfile("node-feature-discovery/values.yaml")
        assert member is not None
        doc: dict[str, Any] = yaml.safe_load(io.TextIOWrapper(member))
    return doc


def test_the_names_the_lab_reads(chart: Path) -> None:
    """templates/_helpers.tpl: the fullname is the release name when it contains the chart's name
    (the lab names the release nvidia-device-plugin), the DaemonSet is named by it, its Pods carry
    app.kubernetes.io/name = the chart's name (the fleet check's selector), and the ConfigMap
    made from config.map is <fullname>-configs."""
    helpers = (chart / "templates" / "_helpers.tpl").read_text()
    assert "{{- if contains $name .Release.Name -}}\n{{- .Release.Name | trunc 63" in helpers
    assert 'app.kubernetes.io/name: {{ include "nvidia-device-plugin.name" . }}' in helpers
    assert '$result = printf "%s-%s" (include "nvidia-device-plugin.fullname" .) "configs"' in helpers
    assert RELEASE == CHART and f"app.kubernetes.io/name={CHART}" in fleet.DEVICE_PLUGIN_SELECTORS
    ds = (chart / "templates" / "daemonset-device-plugin.yml").read_text()
    assert (
        'include "nvidia-device-plugin.fullname" .' in ds
        and "runtimeClassName: {{ .Values.runtimeClassName }}" in ds
    )
    # With a config map the chart runs config-manager (init and sidecar) beside the plugin.
    assert ds.count('command: ["config-manager"]') == 2 and 'command: ["nvidia-device-plugin"]' in ds
    assert NAMESPACE != "default"


def test_the_node_affinity_the_simulated_nodes_and_the_fix_name(chart: Path) -> None:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    keys = [e["key"] for t in terms for e in t["matchExpressions"]]
    assert "feature.node.kubernetes.io/pci-10de.present" in keys and fleet.GPU_PRESENT in keys


def test_the_nfd_subchart_brings_the_crds_helm_leaves(chart: Path) -> None:
    (tgz,) = (chart / "charts").glob("node-feature-discovery-chart-*.tgz")
    with tarfile.open(tgz) as t:
        names = [
            d["metadata"]["name"]
            for m in t.getmembers()
            if m.name.startswith("node-feature-discovery/crds/") and m.isfile()
            for d in yaml.safe_load_all(io.TextIOWrapper(t.extractfile(m)))  # type: ignore[arg-type]
            if d and d.get("kind") == "CustomResourceDefinition"
        ]
    assert sorted(names) == sorted(NFD_CRDS)


def test_gfd_publishes_node_features_and_the_labels_the_lab_reads(chart: Path) -> None:
    """cmd/gpu-feature-discovery/main.go: --use-node-feature-api defaults to true (NFD's master
    makes the labels: fleet.NFD_PASS_SECONDS); internal/lm/resource.go and nvml.go: the labels."""
    root = _module(chart)
    main = (root / "cmd" / "gpu-feature-discovery" / "main.go").read_text()
    flag = re.search(r'Name:\s+"use-node-feature-api",\s+Value:\s+(\w+),', main)
    assert flag is not None and flag.group(1) == "true"
    resource = (root / "internal" / "lm" / "resource.go").read_text()
    for suffix in ("product", "count", "replicas", "sharing-strategy"):
        assert f'"{suffix}":' in resource
    assert f'"{fleet.GFD_DRIVER}"' in (root / "internal" / "lm" / "nvml.go").read_text()
    assert fleet.GFD_COUNT == "nvidia.com/gpu.count" and fleet.GFD_REPLICAS == "nvidia.com/gpu.replicas"
