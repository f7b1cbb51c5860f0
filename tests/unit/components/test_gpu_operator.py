"""components.gpu_operator's pure parts: the gate's argv built in one place, the CRD check's
argv and the operatorComponents output (the component under mocks: tests/unit/program/)."""

from __future__ import annotations

from components.gpu_operator import GpuOperatorArgs, crd_check_args, gate_args, operator_components
from gpulab.config.lab import OperatorConfig
from gpulab.config.mig import Expected
from variants import registry


def test_the_gate_waits_for_the_operator_s_device_plugin_and_the_expected_count() -> None:
    args = GpuOperatorArgs(
        OperatorConfig(), registry.get("sim").spec, "kc", expect=Expected(gpus=2), profile="p"
    )
    assert gate_args(args) == [
        "gate",
        "--device-plugin-namespace",
        "gpu-operator",
        "--device-plugin-daemonset",
        "nvidia-device-plugin-daemonset",
        "--timeout",
        "600",
        "--expected-gpus",
        "2",
        "--grace",
        "60",
        "--profile",
        "p",
        # The sim's GPU node is a kwok node: no shell reaches it, the fix says so.
        "--node-command",
        "{cmd} on the GPU node",
    ]


def test_the_gate_of_minikube_s_addon_without_the_operator_s_plugin() -> None:
    args = GpuOperatorArgs(
        OperatorConfig(device_plugin=False),
        registry.get("minikube").spec,
        "kc",
        device_plugin_owner="minikube-addon",
    )
    argv = gate_args(args)
    assert argv[argv.index("--device-plugin-namespace") + 1] == "kube-system"
    assert "--no-cluster-policy" in argv and "--expected-gpus" not in argv


def test_the_gate_of_a_renamed_resource_and_mig() -> None:
    expect = Expected(gpus=None, resource="nvidia.com/gpu.shared")
    argv = gate_args(GpuOperatorArgs(OperatorConfig(), registry.get("sim").spec, "kc", expect=expect))
    assert argv[argv.index("--gpu-resource") + 1] == "nvidia.com/gpu.shared"


def test_the_crd_check_applies_only_on_a_cluster_the_lab_owns() -> None:
    op = OperatorConfig(chart_path="/c", nfd=False)
    assert crd_check_args(op, True)[-5:] == ["--chart", "/c", "--apply", "--values", "{}"]
    assert crd_check_args(op, False)[-4:] == ["--chart", "/c", "--values", "{}"]
    # A repository chart is not on disk before the release: only its values are checked.
    repo = crd_check_args(OperatorConfig(chart_path=None), True, '{"a": 1}')
    assert "--chart" not in repo and "--apply" not in repo and repo[-2:] == ["--values", '{"a": 1}']


def test_operator_components_record_the_settings() -> None:
    comps = operator_components(OperatorConfig(time_slicing_replicas=4), registry.get("kind").spec)
    assert comps["driver"] is False and comps["timeSlicingReplicas"] == 4
    assert comps["deviceListStrategy"] == "envvar"


def test_the_gate_s_fixes_reach_the_gpu_node_the_variant_s_way() -> None:
    def node_command(variant: str) -> str:
        argv = gate_args(GpuOperatorArgs(OperatorConfig(), registry.get(variant).spec, "kc", profile="lab"))
        return argv[argv.index("--node-command") + 1]

    assert node_command("minikube") == "minikube -p lab ssh -- {cmd}"
    assert node_command("kind") == "docker exec lab-worker {cmd}"  # kind's GPU worker container
    assert node_command("k3s") == node_command("microk8s") == "{cmd}"  # this host is the node
    assert node_command("existing") == "{cmd} on the GPU node"
