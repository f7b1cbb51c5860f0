"""Contract: NVIDIA's GPU Operator chart v26.7.0 and the operator and device plugin it runs.

What the lab relies on, each pinned against its source:

* the chart itself (read here from the unpacked chart, ``$GPULAB_CHART_PATH``; its
  ``values.yaml`` is byte-identical to NVIDIA/gpu-operator ``deployments/gpu-operator/values.yaml``
  at tag v26.7.0): its version, every value the lab sets, how ``templates/clusterpolicy.yaml``
  passes them on, and what the ClusterPolicy CRD accepts;
* the operator (NVIDIA/gpu-operator v26.7.0, read from source only): object names, labels and
  the device-plugin transform the lab's device-list choice depends on;
* the device plugin the chart pins (NVIDIA/k8s-device-plugin v0.20.0, source only).

A chart bump fails :func:`test_the_chart_is_the_version_the_lab_pins`: re-read this module's
sources at the new tag.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.gpu_operator import DEVICE_PLUGIN_IMAGE, helm_values
from gpulab.config.lab import OperatorConfig
from gpulab.config.operand_images import OPERANDS
from gpulab.core import names
from variants import registry
from variants.kind.ctl import NODE_TOOLKIT_VERSION
from variants.registry import parse_config

#: The chart version whose sources this module was checked against.
CHART_VERSION = "v26.7.0"


def _paths(values: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of ``values`` down to the leaves (lists and ``data`` maps are leaves)."""
    for key, value in values.items():
        path = (*prefix, key)
        if isinstance(value, Mapping) and key != "data":
            yield from _paths(value, path)
        else:
            yield path


def _has(doc: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = doc
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return False
        node = node[key]
    return True


def test_the_chart_is_the_version_the_lab_pins(chart: Path) -> None:
    """The chart the lab installs by default (gpulab.config.lab ``OperatorConfig.chart_version``)
    is the one read here (``Chart.yaml`` ``version``, as published at
    https://helm.ngc.nvidia.com/nvidia). NVIDIA/gpu-operator tag v26.7.0 keeps
    ``version: v1.0.0-devel`` in deployments/gpu-operator/Chart.yaml; the release stamps it."""
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert meta["version"] == CHART_VERSION == OperatorConfig().chart_version
    assert meta["name"] == names.OPERATOR_CHART


@pytest.mark.parametrize(
    "raw",
    [
        {"gpu-lab:cluster": "minikube"},
        {"gpu-lab:cluster": "kind"},
        {"gpu-lab:cluster": "k3s", "gpu-lab:toolkit": "true"},
        {"gpu-lab:cluster": "k3s", "gpu-lab:k3sNriPlugin": "true"},
        {"gpu-lab:cluster": "sim", "gpu-lab:timeSlicingReplicas": "4", "gpu-lab:simGpus": "2"},
        {
            "gpu-lab:cluster": "sim",
            "gpu-lab:devicePluginImage": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
            "gpu-lab:validatorImage": "nvcr.io/nvidia/gpu-operator:v26.7.0",
            "gpu-lab:migStrategy": "mixed",
        },
    ],
)
def test_every_value_the_lab_sets_is_a_value_of_the_chart(chart: Path, raw: dict[str, str]) -> None:
    """Each key path of components/gpu_operator.py ``helm_values`` (for each variant's needs)
    is a value of the chart: in its values.yaml (``devicePlugin.env``, ``toolkit.env``,
    ``cdi.nriPluginEnabled``, ``mig.strategy``, ``devicePlugin.config.*``, the operand
    ``repository/image/version``), or read by a template though values.yaml leaves it out
    (``validator.version``: ``default .Chart.AppVersion`` in templates/clusterpolicy.yaml). A
    value the chart does not read is silently ignored, so this is the test that catches it."""
    values = yaml.safe_load((chart / "values.yaml").read_text())
    templates = "".join(f.read_text() for f in (chart / "templates").glob("*.yaml"))
    cfg = parse_config(raw, env={})
    lab = helm_values(cfg.operator, registry.get(cfg.cluster).spec)
    missing = [
        ".".join(p) for p in _paths(lab) if not _has(values, p) and f".Values.{'.'.join(p)} " not in templates
    ]
    assert missing == []


def test_the_cluster_policy_template_passes_the_lab_s_values_on(chart: Path) -> None:
    """NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/templates/clusterpolicy.yaml: the
    ClusterPolicy is named ``cluster-policy`` (what the gate reads: gpulab/kube/gate.py) and renders
    ``devicePlugin.env``, ``toolkit.env``, ``cdi.enabled``/``nriPluginEnabled``,
    ``mig.strategy`` and ``driver.enabled`` into its spec."""
    text = (chart / "templates" / "clusterpolicy.yaml").read_text()
    assert "kind: ClusterPolicy" in text and "name: cluster-policy" in text
    for expr in (
        ".Values.devicePlugin.env",
        ".Values.toolkit.env",
        ".Values.cdi.enabled",
        ".Values.cdi.nriPluginEnabled",
        ".Values.mig.strategy",
        ".Values.driver.enabled",
    ):
        assert expr in text, expr


def test_the_cluster_policy_crd_accepts_them_and_reports_ready(cluster_policy_schema: dict[str, Any]) -> None:
    """crds/nvidia.com_clusterpolicies.yaml (v26.7.0): ``spec.devicePlugin.env`` and
    ``spec.toolkit.env`` exist, ``spec.cdi`` has ``enabled`` and ``nriPluginEnabled``,
    ``spec.mig.strategy`` takes ``none`` (the lab's default; the chart's is ``single``), and
    ``status.state`` has ``ready``, the value the gate waits for."""
    spec = cluster_policy_schema["properties"]["spec"]["properties"]
    assert "env" in spec["devicePlugin"]["properties"] and "env" in spec["toolkit"]["properties"]
    assert {"enabled", "nriPluginEnabled"} <= set(spec["cdi"]["properties"])
    assert spec["mig"]["properties"]["strategy"]["enum"] == ["none", "single", "mixed"]
    state = cluster_policy_schema["properties"]["status"]["properties"]["state"]
    assert "ready" in state["enum"]


def test_the_chart_s_operand_versions_are_the_ones_the_lab_names(chart: Path) -> None:
    """values.yaml v26.7.0: the device plugin v0.20.0 (the sim lab's stand-in image:
    components/gpu_operator.py ``DEVICE_PLUGIN_IMAGE``; k8s-device-plugin v0.20.0 is where the
    lab's DEVICE_LIST_STRATEGY facts were read) and the container toolkit v1.20.0 (the one
    the kind node installs: variants/kind/ctl.py ``NODE_TOOLKIT_VERSION``, and where
    ``nvidia-ctk``'s flags were read); every operand the lab can pin has the three keys."""
    values = yaml.safe_load((chart / "values.yaml").read_text())
    dp = values["devicePlugin"]
    assert f"{dp['repository']}/{dp['image']}:{dp['version']}" == DEVICE_PLUGIN_IMAGE
    assert values["toolkit"]["version"] == "v" + NODE_TOOLKIT_VERSION.removesuffix("-1")
    assert values["cdi"] == {"enabled": True, "nriPluginEnabled": False}  # the chart's default: CDI
    templates = (chart / "templates" / "clusterpolicy.yaml").read_text()
    for operand in OPERANDS.values():
        assert {"repository", "image"} <= set(values[operand]), operand
        # validator.version is commented out in values.yaml; the template reads it all the same.
        assert "version" in values[operand] or f".Values.{operand}.version " in templates, operand


def test_operator_facts_read_from_source() -> None:
    """NVIDIA/gpu-operator v26.7.0, source only (no operator runs here):

    * assets/state-device-plugin/0500_daemonset.yaml: DaemonSet ``nvidia-device-plugin-daemonset``,
      label ``app: nvidia-device-plugin-daemonset``, container ``nvidia-device-plugin``;
    * controllers/object_controls.go ``transformDevicePluginCtrForCDI``: with ``cdi.enabled``
      ``DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri`` and ``CDI_ANNOTATION_PREFIX=cdi.k8s.io/``;
      ``TransformDevicePlugin`` then applies ``devicePlugin.env`` (the lab's value wins);
    * ``setRuntimeClassName``: every operand gets ``runtimeClassName: nvidia``
      (``getRuntimeClassName``, default ``nvidia``) except on CRI-O without CDI or with the NRI
      plugin, which is why minikube needs cri-dockerd >= v0.4.0 (test_minikube.py);
    * controllers/state_manager.go: ``nvidia.com/gpu.present`` and the deploy labels
      (``nvidia.com/gpu.deploy.device-plugin``: the sim stand-in's node selector).
    """
    assert names.DEVICE_PLUGIN_DS == "nvidia-device-plugin-daemonset"
    assert names.DEVICE_LIST_STRATEGY_ENV == "DEVICE_LIST_STRATEGY"
    assert names.OPERATOR_NAMESPACE == names.OPERATOR_RELEASE == "gpu-operator"
    from variants.k3s.node import RUNTIME_CLASS

    assert RUNTIME_CLASS == "nvidia"


def test_device_plugin_device_list_strategies() -> None:
    """NVIDIA/k8s-device-plugin v0.20.0 (source only): api/config/v1/consts.go names the
    strategies ``envvar``, ``volume-mounts``, ``cdi-annotations``, ``cdi-cri``;
    cmd/nvidia-device-plugin/main.go reads ``DEVICE_LIST_STRATEGY`` (default ``envvar``);
    internal/plugin/server.go ``getAllocateResponse`` sets ``NVIDIA_VISIBLE_DEVICES`` only
    when a non-CDI strategy is on (``AllCDIEnabled`` returns first), so the chart's CDI-only
    list gives a runtime that reads no CDI nothing but the image's ``NVIDIA_VISIBLE_DEVICES=all``."""
    assert names.DEVICE_LIST_ENVVAR == "envvar"
    for cluster in ("minikube", "kind", "k3s"):
        values = helm_values(
            parse_config({"gpu-lab:cluster": cluster}, env={}).operator, registry.get(cluster).spec
        )
        assert values["devicePlugin"]["env"] == [{"name": "DEVICE_LIST_STRATEGY", "value": "envvar"}]
