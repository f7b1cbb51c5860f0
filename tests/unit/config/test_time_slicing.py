"""gpulab.config.time_slicing and its path through the lab: config, the device plugin's config, the
gate's resource, the sim node, the diagnosis and the policy, for ``timeSlicingRename`` (the
GPUs become ``nvidia.com/gpu.shared``) and ``timeSlicingFailRequestsGreaterThanOne``.

The option semantics are the NVIDIA/k8s-device-plugin README's ("With CUDA Time-Slicing"):
``renameByDefault: true`` advertises ``<resource-name>.shared``; with
``failRequestsGreaterThanOne`` a request of 2 fails admission with "maximum request size for
shared resources is 1".
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.gpu_operator import helm_values
from gpulab import diagnose
from gpulab.config import mig
from gpulab.config.lab import ConfigError, OperatorConfig
from gpulab.config.mig import Expected
from gpulab.config.time_slicing import TimeSlicing
from gpulab.diagnose import sharing
from gpulab.kube import gate_rules as rules
from tests.unit.diagnose.builders import event, healthy_operator, node, pod
from variants import registry
from variants.registry import parse_config
from variants.sim.ctl.gpus import NodeGpus

SHARED = "nvidia.com/gpu.shared"


def shared_node(count: str = "8") -> dict[str, Any]:
    n = node(allocatable=None, capacity=None)
    n["status"]["allocatable"][SHARED] = count
    n["status"]["capacity"][SHARED] = count
    return n


def test_the_resource_is_renamed_only_when_shared_and_asked() -> None:
    assert TimeSlicing(4, rename=True).resource == SHARED
    assert TimeSlicing(4).resource == "nvidia.com/gpu"
    assert TimeSlicing(1, rename=True).resource == "nvidia.com/gpu"


def test_the_device_plugin_config_says_what_was_asked_and_no_more() -> None:
    plain = yaml.safe_load(TimeSlicing(4).device_plugin_config())
    assert plain == {
        "version": "v1",
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}},
    }
    both = TimeSlicing(4, rename=True, fail_requests_greater_than_one=True).device_plugin_config()
    ts = yaml.safe_load(both)["sharing"]["timeSlicing"]
    assert ts["renameByDefault"] is True and ts["failRequestsGreaterThanOne"] is True
    assert sharing.time_slicing(both) == {"nvidia.com/gpu": 4} and sharing.renamed(both)
    assert not sharing.renamed(TimeSlicing(4).device_plugin_config())


def test_config_keys_reach_the_operator_and_its_chart_values() -> None:
    cfg = parse_config(
        {
            "gpu-lab:timeSlicingReplicas": "4",
            "gpu-lab:timeSlicingRename": "true",
            "gpu-lab:timeSlicingFailRequestsGreaterThanOne": "true",
        },
        env={},
    )
    assert cfg.operator.gpu_resource == SHARED
    data = helm_values(cfg.operator, registry.get(cfg.cluster).spec)["devicePlugin"]["config"]
    assert data["name"] == "time-slicing-config" and data["default"] == "any"
    assert sharing.renamed(data["data"]["any"])


def test_a_sharing_option_without_sharing_is_refused_before_anything_is_made() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(
            {"gpu-lab:timeSlicingRename": "true", "gpu-lab:timeSlicingFailRequestsGreaterThanOne": "true"},
            env={},
        )
    text = "\n".join(exc.value.problems)
    assert "timeSlicingRename=true with timeSlicingReplicas=1" in text
    assert "timeSlicingFailRequestsGreaterThanOne=true with timeSlicingReplicas=1" in text


def test_a_smoke_pod_asking_two_shared_gpus_is_refused_when_the_plugin_would_fail_it() -> None:
    base = {"gpu-lab:timeSlicingReplicas": "2", "gpu-lab:timeSlicingFailRequestsGreaterThanOne": "true"}
    with pytest.raises(ConfigError, match="maximum request size for shared resources is 1"):
        parse_config({**base, "gpu-lab:smokeGpus": "2"}, env={})
    assert parse_config({**base, "gpu-lab:smokeGpus": "all"}, env={}).smoke_gpus == 0


def test_sharing_with_minikubes_addon_as_device_plugin_is_refused() -> None:
    """The addon's plugin never reads the ClusterPolicy's devicePlugin.config."""
    with pytest.raises(ConfigError, match="does not read the operator's sharing config"):
        parse_config(
            {
                "gpu-lab:timeSlicingReplicas": "2",
                "gpu-lab:devicePluginOwner": "minikube-addon",
                "gpu-lab:devicePlugin": "false",
            },
            env={},
        )


def test_the_plan_asks_for_the_renamed_resource_and_refuses_the_old_name() -> None:
    plan = mig.plan("none", 2, 4, gpu_resource=SHARED)
    assert plan.smoke_resource == SHARED and plan.expected == Expected("none", 8, None, SHARED)
    assert plan.expected.describe() == f"{SHARED}=8" and not plan.problems
    [(cause, fix)] = mig.plan("none", 2, 4, smoke_resource="nvidia.com/gpu", gpu_resource=SHARED).problems
    assert "not advertised" in cause and "timeSlicingRename" in cause and fix.endswith(SHARED)


def test_the_gate_counts_the_renamed_resource() -> None:
    want = Expected("none", 8, None, SHARED)
    assert rules.resources_verdict([shared_node("8")], want) is None
    key, cause = rules.resources_verdict([shared_node("4")], want) or ("", "")
    assert key == "mismatch" and f"allocatable {SHARED} is 4, expected 8" in cause


def test_the_gate_says_when_the_rename_was_not_applied_or_not_expected() -> None:
    key, cause = rules.resources_verdict([node(allocatable="8")], Expected("none", 8, None, SHARED)) or (
        "",
        "",
    )
    assert key == "mismatch" and "nvidia.com/gpu is 8" in cause and "was expected" in cause
    key, cause = rules.resources_verdict([shared_node("8")], Expected("none", 8)) or ("", "")
    assert key == "mismatch" and f"{SHARED} is 8" in cause and "was not expected" in cause


def test_the_diagnosis_names_a_rename_not_applied() -> None:
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=pods, events=[], daemonsets=dsets, nodes=[node(allocatable="8")], gpu_resource=SHARED
    )
    d = next(d for d in diags if d.row == "allocatable-mismatch")
    assert d.variant == "not-renamed" and "expected and not applied" in d.reason
    assert "renameByDefault: true" in d.fix


def test_a_pod_asking_for_the_old_name_on_a_renamed_node_is_told_the_new_one() -> None:
    pods, dsets = healthy_operator()
    user = pod("trainer", "default", phase="Pending", node_name=None, gpus=1)
    pending = event(
        "trainer", "FailedScheduling", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.", ns="default"
    )
    diags = diagnose.diagnose_cluster(
        pods=[*pods, user], events=[pending], daemonsets=dsets, nodes=[shared_node("8")], gpu_resource=SHARED
    )
    d = next(d for d in diags if d.row == "gpu-insufficient")
    assert d.variant == "other-resource-name" and f"ask for {SHARED}" in d.fix


def test_a_pod_refused_more_than_one_shared_gpu_is_explained() -> None:
    pods, dsets = healthy_operator()
    message = (
        "Allocate failed due to rpc error: code = Unknown desc = request for 'nvidia.com/gpu.shared: 2' "
        "too large: maximum request size for shared resources is 1, which is unexpected"
    )
    failed = pod("trainer", "default", phase="Failed", reason="UnexpectedAdmissionError", message=message)
    diags = diagnose.diagnose_cluster(
        pods=[*pods, failed], events=[], daemonsets=dsets, nodes=[shared_node("8")], gpu_resource=SHARED
    )
    d = next(d for d in diags if d.row == "pod-failed")
    assert "timeSlicingFailRequestsGreaterThanOne" in d.fix and "ask for 1 per container" in d.fix


def test_the_sim_node_advertises_the_renamed_resource_with_gfds_labels() -> None:
    renamed = NodeGpus(2, replicas=4, rename=True)
    assert renamed.resources() == {SHARED: "8"} and renamed.stale() == {"nvidia.com/gpu": None}
    labels = renamed.labels("NVIDIA-H200")
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200" and labels["nvidia.com/gpu.replicas"] == "4"
    assert renamed.advertised_by({SHARED: "8", "cpu": "16"})
    assert not renamed.advertised_by({SHARED: "8", "nvidia.com/gpu": "2"})
    # Without sharing nothing is renamed (the config refuses the combination anyway).
    assert NodeGpus(2, rename=True).resources() == {"nvidia.com/gpu": "2"}


def test_the_operator_components_record_the_sharing_options() -> None:
    op = OperatorConfig(time_slicing_replicas=4, time_slicing_rename=True)
    assert op.time_slicing == TimeSlicing(4, True, False) and op.gpu_resource == SHARED


@pytest.mark.usefixtures("no_host_tools")
def test_the_program_asks_every_gpu_pod_and_the_gate_for_the_renamed_resource(chart: str) -> None:
    """Under mocks: the gate counts nvidia.com/gpu.shared, the smoke and compute Pods ask for one
    each, and the stack exports the name."""
    from tests.unit.program_harness import run_program, sim

    run = run_program(sim(chart, simGpus=2, timeSlicingReplicas=4, timeSlicingRename="true"))
    assert run.error is None, run.error
    gate = run.by_name("gpu-operator-gate").argv()
    assert gate[gate.index("--gpu-resource") + 1] == SHARED
    assert gate[gate.index("--expected-gpus") + 1] == "8"
    for name in ("smoke-pod", "compute-pod"):
        for c in run.by_name(name).inputs["spec"]["containers"]:
            assert c["resources"]["limits"] == {SHARED: "1"}, (name, c)
    smoke = run.by_name("smoke-check").argv()
    assert smoke[smoke.index("--gpu-resource") + 1] == SHARED
    assert run.outputs["gpuResource"] == SHARED and run.outputs["smokeResource"] == SHARED
    comps = run.outputs["operatorComponents"]
    assert comps["timeSlicingRename"] is True and comps["timeSlicingReplicas"] == 4


def test_the_benchmark_pod_asks_for_the_smoke_pods_resource() -> None:
    from components.benchmark import pod_spec

    (c,) = pod_spec("nvcr.io/nvidia/pytorch:25.01-py3", 8192, "cm", SHARED)["containers"]  # type: ignore[misc]
    assert c["resources"]["limits"] == {SHARED: "1"}


def test_the_other_whole_gpu_name_and_no_other_for_a_mig_resource() -> None:
    from gpulab.config.time_slicing import other_resource

    assert other_resource("nvidia.com/gpu") == SHARED and other_resource(SHARED) == "nvidia.com/gpu"
    with pytest.raises(ValueError, match="not one of"):
        other_resource("nvidia.com/mig-1g.18gb")
