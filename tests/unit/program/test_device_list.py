"""Per variant, the device plugin's device list is one the node's runtime reads, and CDI is off
where that runtime reads none (issue 20, points 2 and 4).

Upstream facts the expectations rest on (tests/contract/ pins each against its source):

* GPU Operator v26.7.0 ``controllers/object_controls.go``: with ``cdi.enabled`` the device
  plugin gets ``DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri`` (``transformDevicePluginCtrForCDI``)
  and ``devicePlugin.env`` is applied after it, so the lab's value wins;
* k8s-device-plugin v0.20.0 ``internal/plugin/server.go``: with only CDI strategies no
  ``NVIDIA_VISIBLE_DEVICES`` is set (``AllCDIEnabled``); ``envvar`` sets it to the allocated
  devices;
* cri-dockerd v0.4.3 ``core/container_create.go`` reads no ``CDIDevices`` (minikube), and
  ``nvidia-ctk runtime configure`` (toolkit v1.20.0) writes no ``container_annotations`` (kind).
"""

from __future__ import annotations

import pytest

from components.gpu_operator import helm_values
from gpulab.config.lab import ConfigError, OperatorConfig
from variants import registry
from variants.registry import parse_config

ENVVAR = [{"name": "DEVICE_LIST_STRATEGY", "value": "envvar"}]


@pytest.mark.parametrize("cluster", ["minikube", "kind", "k3s"])
def test_gpu_variants_pass_the_allocation_as_envvar_with_cdi_off(cluster: str) -> None:
    cfg = parse_config({"gpu-lab:cluster": cluster}, env={})
    values = helm_values(cfg.operator, registry.get(cfg.cluster).spec)
    assert cfg.operator.cdi is False and values["cdi"]["enabled"] is False
    assert values["devicePlugin"]["env"] == ENVVAR
    assert registry.get(cluster).spec.device_list_reason  # the variant says why


def test_k3s_with_the_nri_plugin_keeps_cdi_and_the_chart_s_device_list() -> None:
    cfg = parse_config({"gpu-lab:cluster": "k3s", "gpu-lab:k3sNriPlugin": "true"}, env={})
    values = helm_values(cfg.operator, registry.get(cfg.cluster).spec)
    assert cfg.operator.cdi is True and values["cdi"] == {"enabled": True, "nriPluginEnabled": True}
    assert "env" not in values["devicePlugin"]


@pytest.mark.parametrize("cluster", ["sim", "existing"])
def test_variants_that_do_not_know_the_node_runtime_leave_the_chart_s_choice(cluster: str) -> None:
    values = helm_values(OperatorConfig(cdi=True), registry.get(cluster).spec)
    assert values["cdi"]["enabled"] is True and "env" not in values["devicePlugin"]
    assert registry.get(cluster).spec.device_list_strategy(nri_plugin=False) is None


@pytest.mark.parametrize(
    ("cluster", "said"),
    [
        ("minikube", "cri-dockerd, which hands Docker no CDI device"),
        ("kind", "without container_annotations"),
        ("k3s", "set k3sNriPlugin=true to inject GPUs by CDI through NRI"),
    ],
)
def test_cdi_true_where_the_runtime_reads_no_cdi_is_refused_with_why(cluster: str, said: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"gpu-lab:cluster": cluster, "gpu-lab:cdi": "true"}, env={})
    assert f"gpu-lab:cdi=true with cluster={cluster}" in str(err.value) and said in str(err.value)


def test_cdi_false_is_accepted_and_the_sim_lab_keeps_the_chart_default() -> None:
    assert parse_config({"gpu-lab:cluster": "kind", "gpu-lab:cdi": "false"}, env={}).operator.cdi is False
    assert parse_config({"gpu-lab:cluster": "sim"}, env={}).operator.cdi is True


def test_the_engine_s_default_auto_is_unset() -> None:
    """The engine hands the program every default of Pulumi.yaml's config block as if set
    (``cdi: auto``), so ``auto`` must read as unset, as ``toolkit`` does."""
    cfg = parse_config(
        {"gpu-lab:cluster": "minikube", "gpu-lab:cdi": "auto", "gpu-lab:toolkit": "auto"}, env={}
    )
    assert cfg.operator.cdi is False
    nri = {"gpu-lab:cluster": "k3s", "gpu-lab:k3sNriPlugin": "true", "gpu-lab:cdi": "auto"}
    assert parse_config(nri, env={}).operator.cdi is True
    assert parse_config({"gpu-lab:cluster": "sim", "gpu-lab:cdi": "auto"}, env={}).operator.cdi is True
    with pytest.raises(ConfigError, match="gpu-lab:cdi='maybe' is not one of auto, true, false"):
        parse_config({"gpu-lab:cluster": "sim", "gpu-lab:cdi": "maybe"}, env={})
