"""gpulab.kube.gate: the readiness gate's waits against recorded cluster states, on a fake clock.

Each state is what the API server returns (``kubectl get -o json`` shapes); the clock moves
only when the gate sleeps, so "fails after the grace" is measured in the gate's own seconds.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from components.gpu_operator import helm_values
from gpulab.config.lab import OperatorConfig
from gpulab.config.mig import Expected
from gpulab.kube.client import GateError
from gpulab.kube.gate import GateSpec, context, run_gate, spec_from_args
from tests.unit.diagnose.builders import node
from tests.unit.kube.test_gate_rules import ds, mig_node, plugin_pod
from variants import registry

READY_POLICY = {"status": {"state": "ready"}}


def ds_ready(n: int = 1) -> dict[str, Any]:
    d = ds(n, n)
    d["spec"] = {"selector": {"matchLabels": {"app": "nvidia-device-plugin-daemonset"}}}
    return d


@dataclass
class Cluster:
    """A :class:`gpulab.kube.gate.Reader` whose answers may change with the gate's clock (``now``):
    ``ds_at``, ``nodes_at`` and ``pods_at`` give the state at a time."""

    now: list[float]
    policy: Mapping[str, Any] | None = field(default_factory=lambda: READY_POLICY)
    ds_at: Callable[[float], Mapping[str, Any] | None] = lambda t: ds_ready()
    nodes_at: Callable[[float], Sequence[Mapping[str, Any]]] = lambda t: [node()]
    pods_at: Callable[[float], Sequence[Mapping[str, Any]]] = lambda t: [plugin_pod()]
    config_maps: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def cluster_policy(self) -> Mapping[str, Any] | None:
        return self.policy

    def daemonset(self) -> Mapping[str, Any] | None:
        return self.ds_at(self.now[0])

    def pods(self, selector: str) -> list[Mapping[str, Any]]:
        return list(self.pods_at(self.now[0]))

    def nodes(self) -> list[Mapping[str, Any]]:
        return list(self.nodes_at(self.now[0]))

    def version(self) -> str:
        return "v1.36.3"

    def config_map(self, name: str) -> Mapping[str, Any] | None:
        return self.config_maps.get(name)


def gate(cluster: Cluster, **spec: Any) -> dict[str, Any]:
    now = cluster.now

    def sleep(s: float) -> None:
        now[0] += s

    return run_gate(
        cluster,
        GateSpec(**{"timeout": 600, "grace": 10, "expect": Expected("none", 1), **spec}),
        lambda: "DIAGNOSIS",
        clock=lambda: now[0],
        sleep=sleep,
    )


def test_a_gpu_node_passes_with_its_facts() -> None:
    facts = gate(Cluster([0.0]))
    assert facts.allocatable_gpus == 1 and facts.capacity_gpus == 1 and facts.mig_resources == {}
    assert facts.cluster_policy_state == "ready" and facts.kubernetes_version == "v1.36.3"
    assert facts.device_plugin_pods[0]["restarts"] == 0


def test_a_ready_node_without_the_gpu_key_fails_after_the_grace_not_the_timeout() -> None:
    """The smoke test is never handed a GPU-less cluster (NVIDIA/k8s-device-plugin#834)."""
    now = [0.0]
    with pytest.raises(GateError) as exc:
        gate(Cluster(now, nodes_at=lambda t: [node(allocatable=None, capacity=None)]))
    text = str(exc.value)
    assert text.startswith("readiness gate stopped after ")
    assert "no node has nvidia.com/gpu in status.allocatable" in text and "fix: check the node" in text
    assert "(allocatable-zero first)" in text and text.endswith("DIAGNOSIS")
    assert 10 <= now[0] < 15, now[0]


def test_allocatable_that_appears_within_the_grace_passes() -> None:
    nodes = lambda t: [node(allocatable=None, capacity=None) if t < 5 else node()]  # noqa: E731
    assert gate(Cluster([0.0], nodes_at=nodes)).allocatable_gpus == 1


def test_a_daemonset_on_no_node_fails_after_the_grace() -> None:
    now = [0.0]
    with pytest.raises(GateError) as exc:
        gate(Cluster(now, ds_at=lambda t: ds(0, 0)))
    assert "desiredNumberScheduled 0" in str(exc.value) and "(daemonset-no-nodes first)" in str(exc.value)
    assert 10 <= now[0] < 15


def test_no_daemonset_after_clusterpolicy_ready_with_no_gpu_nodes_fails() -> None:
    policy = {
        "status": {
            "state": "ready",
            "conditions": [{"type": "Ready", "reason": "NoGPUNodes", "message": "No GPU node found"}],
        }
    }
    now = [0.0]
    with pytest.raises(GateError) as exc:
        gate(Cluster(now, policy=policy, ds_at=lambda t: None))
    assert "does not exist" in str(exc.value) and "NoGPUNodes" in str(exc.value)


def test_a_plugin_that_restarted_three_times_stops_the_gate_at_once() -> None:
    now = [0.0]
    with pytest.raises(GateError) as exc:
        gate(Cluster(now, pods_at=lambda t: [plugin_pod(3, "CrashLoopBackOff")]))
    assert "crash-looping" in str(exc.value) and now[0] < 1


def test_a_plugin_in_crashloopbackoff_for_the_grace_stops_it() -> None:
    now = [0.0]
    with pytest.raises(GateError):
        # The plugin's pod is not Ready, so neither is its DaemonSet.
        gate(Cluster(now, ds_at=lambda t: ds(1, 0), pods_at=lambda t: [plugin_pod(1, "CrashLoopBackOff")]))
    assert 10 <= now[0] < 15


def test_another_count_fails_with_the_mismatch() -> None:
    with pytest.raises(GateError) as exc:
        gate(Cluster([0.0]), expect=Expected("none", 2))
    assert "is 1, expected 2" in str(exc.value) and "(allocatable-mismatch first)" in str(exc.value)


def test_time_slicing_not_applied_says_so_in_the_mismatch() -> None:
    # 1 GPU x 4 replicas expected, the node still shows 1: the ClusterPolicy names no config.
    with pytest.raises(GateError) as exc:
        gate(Cluster([0.0]), expect=Expected("none", 4))
    assert "is 1, expected 4; sharing config: not applied (ClusterPolicy spec.devicePlugin.config" in str(
        exc.value
    )


def test_time_slicing_applied_but_not_yet_advertised_shows_the_config_and_labels() -> None:
    values = helm_values(OperatorConfig(time_slicing_replicas=4), registry.get("sim").spec)["devicePlugin"][
        "config"
    ]
    policy = {
        **READY_POLICY,
        "spec": {"devicePlugin": {"config": {"name": values["name"], "default": "any"}}},
    }
    cluster = Cluster([0.0], policy=policy, config_maps={values["name"]: {"data": values["data"]}})
    with pytest.raises(GateError) as exc:
        gate(cluster, expect=Expected("none", 4))
    assert (
        "sharing config: ConfigMap gpu-operator/time-slicing-config key 'any': "
        "time-slicing nvidia.com/gpu x4; "
        "node gpu-lab: nvidia.com/gpu.replicas=(unset)"
    ) in str(exc.value)


def test_a_slow_operator_still_times_out_with_the_diagnosis() -> None:
    with pytest.raises(GateError) as exc:
        gate(Cluster([0.0], policy={"status": {"state": "notReady"}}), timeout=30)
    assert str(exc.value).startswith("timed out after") and "DIAGNOSIS" in str(exc.value)


def test_mixed_mig_passes_on_the_mig_resources_with_gpu_zero() -> None:
    nodes = lambda t: [mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7"})]  # noqa: E731
    facts = gate(Cluster([0.0], nodes_at=nodes), expect=Expected("mixed", 0, {"nvidia.com/mig-1g.18gb": 7}))
    assert facts.mig_resources == {"nvidia.com/mig-1g.18gb": 7} and facts.allocatable_gpus == 0


def _mig_state(n: dict[str, Any], state: str | None) -> dict[str, Any]:
    if state is not None:
        n["metadata"].setdefault("labels", {})["nvidia.com/mig.config.state"] = state
    return n


MIXED_7 = Expected("mixed", 0, {"nvidia.com/mig-1g.18gb": 7})


def test_a_mig_layout_being_applied_is_waited_for_past_the_grace() -> None:
    """NVIDIA/mig-parted v0.15.0 (k8s-mig-manager, the GPU Operator v26.7.0's migManager),
    pkg/mig/reconfigure/reconfigure.go ``Run``: the manager labels the node
    ``nvidia.com/mig.config.state=pending`` before it changes the layout (and pauses the device
    plugin, so the MIG resources read 0), ``rebooting`` before a reboot for a mode change, and
    ``success`` when done. The resources at 0 meanwhile are not a stuck plugin: the gate waits
    past the grace (10 s here) and passes once the state is success and the counts are right."""

    def nodes(t: float) -> list[dict[str, Any]]:
        if t < 40:  # pending, then rebooting: nothing advertised yet
            state = "pending" if t < 20 else "rebooting"
            return [_mig_state(mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "0"}), state)]
        return [_mig_state(mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7"}), "success")]

    cluster = Cluster([0.0], nodes_at=nodes)
    facts = gate(cluster, expect=MIXED_7)
    assert facts.mig_resources == {"nvidia.com/mig-1g.18gb": 7}
    assert cluster.now[0] >= 40  # it waited through pending and rebooting, three graces long


def test_counts_that_match_while_the_layout_is_still_pending_are_not_taken() -> None:
    def nodes(t: float) -> list[dict[str, Any]]:
        state = "pending" if t < 15 else "success"
        return [_mig_state(mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "7"}), state)]

    cluster = Cluster([0.0], nodes_at=nodes)
    gate(cluster, expect=MIXED_7)
    assert cluster.now[0] >= 15


def test_a_failed_mig_layout_stops_the_gate_at_once_with_the_fix() -> None:
    """reconfigure.go: every error path sets ``failed`` (``setState(migStateFailed)``), and the
    manager applies a layout again only on a change of ``nvidia.com/mig.config``: waiting does
    not help, so the gate stops at its first poll, naming the node and the fix."""
    nodes = lambda t: [  # noqa: E731
        _mig_state(mig_node({"nvidia.com/gpu": "0", "nvidia.com/mig-1g.18gb": "0"}), "failed")
    ]
    cluster = Cluster([0.0], nodes_at=nodes)
    with pytest.raises(GateError) as exc:
        gate(cluster, expect=MIXED_7)
    text = str(exc.value)
    assert cluster.now[0] < 10  # before the grace
    assert "could not apply the MIG layout on gpu-lab (nvidia.com/mig.config.state=failed)" in text
    assert "-l app=nvidia-mig-manager" in text and "nvidia.com/mig.config=<profile> --overwrite" in text


def test_the_mig_manager_label_is_not_read_without_mig() -> None:
    # A leftover label on a lab that wants no MIG: the resources decide, as before.
    nodes = lambda t: [_mig_state(node(), "failed")]  # noqa: E731
    assert gate(Cluster([0.0], nodes_at=nodes)).allocatable_gpus == 1


def test_spec_from_the_command_line() -> None:
    args = argparse.Namespace(
        device_plugin_namespace="gpu-operator",
        device_plugin_daemonset="nvidia-device-plugin-daemonset",
        no_cluster_policy=False,
        timeout=600.0,
        grace=10.0,
        mig_strategy="mixed",
        expected_mig=["1g.18gb=7"],
        expected_gpus=0,
        profile="gpu-lab",
        gpu_resource="nvidia.com/gpu",
        node_command="docker exec gpu-lab-worker {cmd}",
    )
    spec = spec_from_args(args)
    assert spec.expect == Expected("mixed", 0, {"nvidia.com/mig-1g.18gb": 7}) and spec.grace == 10
    ctx = context(spec, "13.0")
    assert ctx.mig_strategy == "mixed" and ctx.expected_mig == {"nvidia.com/mig-1g.18gb": 7}
    assert ctx.gpu_resource == "nvidia.com/gpu"
    assert ctx.node_command == spec.node_command == "docker exec gpu-lab-worker {cmd}"
    renamed = spec_from_args(
        argparse.Namespace(
            **{
                **vars(args),
                "mig_strategy": "none",
                "expected_mig": [],
                "expected_gpus": 8,
                "gpu_resource": "nvidia.com/gpu.shared",
            }
        )
    )
    assert renamed.expect == Expected("none", 8, None, "nvidia.com/gpu.shared")
    assert context(renamed).gpu_resource == "nvidia.com/gpu.shared"
    with pytest.raises(GateError, match="--expected-mig"):
        spec_from_args(argparse.Namespace(**{**vars(args), "expected_mig": ["big"]}))


def test_the_command_line_reports_a_gate_error_without_a_traceback() -> None:
    """Run as ``python -m gpulab.kube`` that module is ``__main__``: the GateError gpulab.kube.gate
    raises is gpulab.kube's, another class; main must still print only the message."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    kubeconfig = (
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: x, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: x, context: {cluster: x, user: x}}]\nusers: [{name: x, user: {}}]\n"
    )
    p = subprocess.run(
        [sys.executable, "-m", "gpulab.kube", "gate", "--mig-strategy", "mixed", "--expected-mig", "big"],
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, "GPULAB_KUBECONFIG": kubeconfig},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1 and "--expected-mig" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_an_unhealthy_gpu_of_the_clusters_own_plugin_names_that_plugin_and_xids() -> None:
    """Found on a real kubelet (tests/data/device-h200-node): the plugin reports its GPU
    Unhealthy, the kubelet keeps capacity 1 and drops allocatable to 0. The gate waited for
    the cluster's own plugin (kube-system/gpulab-device-plugin): the fix names that plugin's
    pods, and the XID records, not minikube or the operator's DaemonSet."""
    own = ds(1, 1)
    own["metadata"].update({"name": "gpulab-device-plugin", "namespace": "kube-system"})
    own["spec"] = {"selector": {"matchLabels": {"app.kubernetes.io/name": "gpulab-device-plugin"}}}
    now = [0.0]
    with pytest.raises(GateError) as exc:
        gate(
            Cluster(now, ds_at=lambda t: own, nodes_at=lambda t: [node(allocatable="0", capacity="1")]),
            device_plugin_namespace="kube-system",
            device_plugin_ds="gpulab-device-plugin",
            require_cluster_policy=False,
            grace=20,
        )
    fix = str(exc.value).splitlines()[1]
    assert "allocatable nvidia.com/gpu is 0 (capacity 1): devices unhealthy" in str(exc.value)
    assert "sudo dmesg | grep -i xid" in fix
    assert "-n kube-system logs -l app.kubernetes.io/name=gpulab-device-plugin" in fix
    assert "minikube" not in fix and "nvidia-device-plugin-daemonset" not in fix
    assert 20 <= now[0] < 25, now[0]


def test_the_context_carries_the_plugin_the_gate_waits_for() -> None:
    spec = GateSpec(device_plugin_namespace="kube-system", device_plugin_ds="gpulab-device-plugin")
    assert context(spec).device_plugin == ("kube-system", "gpulab-device-plugin")


@dataclass
class ClusterWithEvents(Cluster):
    """A :class:`Cluster` that also serves the operator namespace's events (KubeReader.events)."""

    events_at: Callable[[float], Sequence[Mapping[str, Any]]] = lambda t: []

    def events(self) -> list[Mapping[str, Any]]:
        return list(self.events_at(self.now[0]))


def _refused_plugin_pod() -> dict[str, Any]:
    """NVIDIA/gpu-operator#1020's refusal, on the device plugin's Pod."""
    p = plugin_pod()
    p["metadata"]["uid"] = "plugin-uid"
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    p["status"]["containerStatuses"] = [
        {
            "name": "nvidia-device-plugin",
            "image": image,
            "restartCount": 0,
            "state": {
                "waiting": {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
            },
        }
    ]
    return p


def test_an_operand_image_the_registry_refuses_stops_the_gate_at_once_naming_its_key() -> None:
    """NVIDIA/gpu-operator#1020: 'unexpected status from HEAD request ...: 403 Forbidden' in the
    kubelet's Failed event; the gate stops on the first poll, not after the grace."""
    image = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    failed = {
        "reason": "Failed",
        "involvedObject": {"uid": "plugin-uid", "kind": "Pod"},
        "message": f'Failed to pull image "{image}": failed to resolve reference "{image}": '
        "unexpected status from HEAD request to "
        "https://nvcr.io/v2/nvidia/k8s-device-plugin/manifests/v0.20.0: 403 Forbidden",
    }
    now = [0.0]
    cluster = ClusterWithEvents(
        now, ds_at=lambda t: ds(1, 0), pods_at=lambda t: [_refused_plugin_pod()], events_at=lambda t: [failed]
    )
    with pytest.raises(GateError) as exc:
        gate(cluster)
    text = str(exc.value)
    assert text.startswith("readiness gate stopped after 0s: image nvcr.io/nvidia/k8s-device-plugin:v0.20.0")
    assert "gpu-lab:devicePluginImage" in text and "[pull-refused]" in text and text.endswith("DIAGNOSIS")
    assert now[0] < 1


def test_a_node_under_disk_pressure_stops_the_gate_when_an_operand_pod_cannot_be_placed() -> None:
    """rootless-containers/usernetes#155's scheduler message for the operator's Deployment Pod,
    and the node's DiskPressure condition (kubernetes/kubernetes#93711)."""
    pending = {
        "metadata": {"name": "gpu-operator-6996bfc8df-82c66", "namespace": "gpu-operator", "uid": "op"},
        "spec": {"containers": [{"name": "gpu-operator", "image": "nvcr.io/nvidia/gpu-operator:v26.7.0"}]},
        "status": {"phase": "Pending"},
    }
    pressured = node()
    pressured["status"]["conditions"] = [
        {"type": "Ready", "status": "True"},
        {
            "type": "DiskPressure",
            "status": "True",
            "reason": "KubeletHasDiskPressure",
            "message": "kubelet has disk pressure",
        },
    ]
    cluster = ClusterWithEvents(
        [0.0], policy=None, pods_at=lambda t: [pending], nodes_at=lambda t: [pressured]
    )
    with pytest.raises(GateError) as exc:
        gate(cluster)
    assert "reports DiskPressure (KubeletHasDiskPressure: kubelet has disk pressure)" in str(exc.value)
    assert "[node-pressure]" in str(exc.value)


def test_a_sandbox_failing_while_the_toolkit_rolls_out_is_left_to_the_gates_own_rules() -> None:
    """NVIDIA/gpu-operator#730's FailedCreatePodSandBox on an operand while the toolkit is not
    done: normal progress for the gate (not in GATE_RULES); the Pod's own wait would grace it."""
    p = plugin_pod()
    p["metadata"]["uid"] = "plugin-uid"
    sandbox = {
        "reason": "FailedCreatePodSandBox",
        "involvedObject": {"uid": "plugin-uid"},
        "message": 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured',  # noqa: E501 (quoted)
    }
    facts = gate(ClusterWithEvents([0.0], pods_at=lambda t: [p], events_at=lambda t: [sandbox]))
    assert facts.allocatable_gpus == 1
