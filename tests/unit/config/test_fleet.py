"""gpulab.config.fleet and its keys in parse_config: gpuStack, labNamespace, fleetParallelism,
nodePoolLabel, nodePoolGpus, simNodes; each bad value named before anything is created."""

from __future__ import annotations

import pytest

from gpulab.config import fleet
from gpulab.config.lab import ConfigError
from variants.registry import parse_config


def _get(values: dict[str, object]):  # type: ignore[no-untyped-def]
    return lambda k: values.get(k, fleet.SCHEMA[k][1])


def test_defaults_install_the_stack() -> None:
    got = fleet.parse(_get({}), [])
    assert got == fleet.FleetSettings() and not got.found and got.namespace == "gpu-lab"


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("gpuStack", "borrow", "gpu-lab:gpuStack='borrow' is unknown"),
        ("labNamespace", "Gpu_Lab", "gpu-lab:labNamespace='Gpu_Lab' must be a DNS label"),
        ("labNamespace", "kube-system", "not one of Kubernetes' own kube-* namespaces"),
        ("fleetParallelism", 0, "gpu-lab:fleetParallelism=0 must be >= 1"),
        ("nodePoolLabel", "bad key!", "gpu-lab:nodePoolLabel='bad key!' is not a label key"),
        ("nodePoolGpus", "a=8", "nodePoolGpus is set without gpu-lab:nodePoolLabel"),
    ],
)
def test_bad_values_are_named(key: str, value: object, said: str) -> None:
    problems: list[str] = []
    fleet.parse(_get({key: value}), problems)
    assert any(said in p for p in problems), problems


def test_pools_parse_and_bad_items_are_named() -> None:
    problems: list[str] = []
    got = fleet.parse(
        _get({"nodePoolLabel": "cloud.google.com/gke-nodepool", "nodePoolGpus": "a100=8, l4=1"}), problems
    )
    assert not problems and got.pool_gpus == (("a100", 8), ("l4", 1))
    assert got.pool_args() == [
        "--pool-label",
        "cloud.google.com/gke-nodepool",
        "--pool-gpus",
        "a100=8",
        "--pool-gpus",
        "l4=1",
    ]
    fleet.parse(_get({"nodePoolLabel": "p", "nodePoolGpus": "a=0,a=65,a=2,a=2"}), problems)
    assert sum("is not POOL=GPUS" in p for p in problems) == 2 and any("twice" in p for p in problems)


@pytest.mark.parametrize("cluster", ["minikube", "kind", "k3s"])
@pytest.mark.parametrize("stack", ["found", "device-plugin"])
def test_a_stack_the_variant_does_not_offer_is_refused_with_why(cluster: str, stack: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": cluster, "gpuStack": stack}, {})
    said = str(err.value)
    assert f"gpu-lab:gpuStack={stack} is not offered on cluster={cluster} (it offers install)" in said
    # The reason is the variant's own, naming what serves the device plugin there.
    assert {"minikube": "nvidia-device-plugin addon", "kind": "RuntimeClass", "k3s": "RuntimeClass"}[
        cluster
    ] in said


@pytest.mark.parametrize("cluster", ["sim", "existing"])
def test_the_device_plugin_stack_is_offered_on_existing_and_sim(cluster: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    raw = {"cluster": cluster, "gpuStack": "device-plugin"}
    if cluster == "existing":
        kubeconfig = tmp_path / "config"
        kubeconfig.write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: k, cluster: "
            "{server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}]\n"
            "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        )
        raw |= {"kubeconfigPath": str(kubeconfig), "expectedGpus": "1"}
    cfg = parse_config(raw, {})
    assert cfg.fleet.device_plugin and cfg.fleet.per_node and not cfg.fleet.found
    assert cfg.fleet.stack == "device-plugin"


def test_sim_nodes_need_found_and_a_well_formed_spec() -> None:
    cfg = parse_config({"cluster": "sim", "gpuStack": "found", "simNodes": "gpu-a=8,gpu-c=4/3"}, {})
    assert cfg.fleet.found and cfg.fleet.sim_nodes == ("gpu-a=8", "gpu-c=4/3")
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "sim", "simNodes": "gpu-a=8"}, {})
    assert "simNodes needs gpu-lab:gpuStack=found or device-plugin" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "sim", "gpuStack": "found", "simNodes": "gpu-a=9,gpu-b=2/3"}, {})
    assert "GPUS must be 1..8" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "kind", "simNodes": "gpu-a=8"}, {})
    assert "gpu-lab:simNodes applies to cluster=sim only" in str(err.value)
