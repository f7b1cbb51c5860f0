"""gpulab.kube.fleet: each node's expectation, its gate, the rows, the summary; one fleet run
against a fake API with a node that fails (the others still checked and reported).

The label names are GPU Feature Discovery's, checked in NVIDIA/k8s-device-plugin v0.20.0:
``internal/lm/resource.go`` (``baseLabeler``: ``<resource>.product``, ``.count``,
``.replicas``, ``.sharing-strategy``, the key ``string(rl.resourceName) + "." + suffix`` with
``fullGPUResourceName = "nvidia.com/gpu"``), ``internal/lm/nvml.go``
(``nvidia.com/cuda.driver-version.full``), ``internal/lm/mig-strategy.go``
(``nvidia.com/mig.strategy``). The device plugin chart's Pod label is
``app.kubernetes.io/name: {{ include "nvidia-device-plugin.name" . }}``, the chart's name
``nvidia-device-plugin`` (deployments/helm/nvidia-device-plugin/templates/_helpers.tpl and
Chart.yaml at v0.20.0). The GPU Operator v26.7.0 labels a GPU node ``nvidia.com/gpu.present``
(controllers/state_manager.go ``commonGPULabelKey``) and its device plugin's Pods
``app: nvidia-device-plugin-daemonset`` (assets/state-device-plugin/0500_daemonset.yaml).
The kubelet counts unhealthy devices in capacity and only healthy ones
in allocatable (kubernetes pkg/kubelet/cm/devicemanager/manager.go ``GetCapacity``).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.kube import fleet
from gpulab.kube.client import GateError

SPEC = fleet.FleetSpec(namespace="gpu-lab", smoke_image="img:1", compute_image="c:1", settle=0)


def node(
    name: str, labels: dict[str, str], alloc: int | None, cap: int | None = None, ready: bool = True
) -> dict[str, Any]:
    res = {} if alloc is None else {"nvidia.com/gpu": str(alloc)}
    capacity = {} if cap is None and alloc is None else {"nvidia.com/gpu": str(alloc if cap is None else cap)}
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": res,
            "capacity": capacity,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_the_gfd_label_names_are_v0_20_0s() -> None:
    assert fleet.GFD_COUNT == "nvidia.com/gpu.count"
    assert fleet.GFD_PRODUCT == "nvidia.com/gpu.product"
    assert fleet.GFD_REPLICAS == "nvidia.com/gpu.replicas"
    assert fleet.GFD_SHARING == "nvidia.com/gpu.sharing-strategy"
    assert fleet.GFD_MIG_STRATEGY == "nvidia.com/mig.strategy"
    assert fleet.GFD_DRIVER == "nvidia.com/cuda.driver-version.full"
    assert "app.kubernetes.io/name=nvidia-device-plugin" in fleet.DEVICE_PLUGIN_SELECTORS


def test_expectation_from_gfd_then_pool_then_capacity() -> None:
    pooled = fleet.FleetSpec(namespace="n", smoke_image="i", pool_label="pool", pool_gpus={"a100": 8})
    gfd = node("a", {fleet.GFD_COUNT: "8", "pool": "a100"}, 8)
    assert fleet.expectation(gfd, pooled) == fleet.Expectation(8, "gfd:nvidia.com/gpu.count=8")
    in_pool = node("b", {"pool": "a100"}, 7)
    assert fleet.expectation(in_pool, pooled) == fleet.Expectation(8, "config:nodePoolGpus[a100]=8")
    bare = node("c", {}, 3, cap=4)
    assert fleet.expectation(bare, pooled) == fleet.Expectation(4, "capacity")
    assert fleet.expectation(node("d", {}, None), pooled) == fleet.Expectation(None, "none")


def test_time_slicing_multiplies_and_mixed_mig_falls_back() -> None:
    shared = node("a", {fleet.GFD_COUNT: "2", fleet.GFD_REPLICAS: "4", fleet.GFD_SHARING: "time-slicing"}, 8)
    assert fleet.expectation(shared, SPEC).count == 8
    assert "x nvidia.com/gpu.replicas=4" in fleet.expectation(shared, SPEC).source
    # replicas 1 (GFD's default without sharing) is one each.
    assert fleet.expectation(node("b", {fleet.GFD_COUNT: "2", fleet.GFD_REPLICAS: "1"}, 2), SPEC).count == 2
    mixed = node("c", {fleet.GFD_COUNT: "1", fleet.GFD_MIG_STRATEGY: "mixed"}, 0, cap=0)
    assert fleet.expectation(mixed, SPEC).source == "capacity"


def test_gpu_nodes_are_labelled_pooled_or_advertising() -> None:
    assert fleet.is_gpu_node(node("a", {fleet.GPU_PRESENT: "true"}, None), SPEC)
    assert fleet.is_gpu_node(node("b", {}, 1), SPEC)
    assert not fleet.is_gpu_node(node("cpu", {}, None), SPEC)


def test_gate_names_the_node_and_the_cause() -> None:
    exp = fleet.Expectation(4, "gfd:nvidia.com/gpu.count=4")
    plugin = {
        "metadata": {"name": "dp-1", "namespace": "gpu-operator"},
        "status": {"containerStatuses": [{"ready": True}]},
    }
    ok = fleet.gate_node(node("a", {}, 4), exp, "nvidia.com/gpu", plugin, True)
    assert ok.ok
    short = fleet.gate_node(node("c", {}, 3, cap=4), exp, "nvidia.com/gpu", plugin, True)
    assert not short.ok
    assert (
        short.cause
        == "node c advertises 3 nvidia.com/gpu allocatable of the 4 expected (gfd:nvidia.com/gpu.count=4)"
    )
    assert "1 GPU(s) unhealthy" in short.fix
    absent = fleet.gate_node(node("d", {}, None), exp, "nvidia.com/gpu", plugin, True)
    assert "advertises no nvidia.com/gpu" in absent.cause
    assert (
        "no device-plugin Pod runs on node e"
        in fleet.gate_node(node("e", {}, 4), exp, "nvidia.com/gpu", None, True).cause
    )
    # No device plugin found at all: only allocatable is read.
    assert fleet.gate_node(node("f", {}, 4), exp, "nvidia.com/gpu", None, False).ok
    notready = fleet.gate_node(node("g", {}, 4, ready=False), exp, "nvidia.com/gpu", plugin, True)
    assert notready.cause == "node g is not Ready"


def test_pods_are_pinned_and_hold_the_nodes_gpus() -> None:
    smoke = fleet.smoke_pod("gpu-a", SPEC, 8)
    assert smoke["metadata"]["name"] == "gpu-smoke-gpu-a" and smoke["metadata"]["namespace"] == "gpu-lab"
    assert smoke["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-a"}
    assert smoke["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    compute = fleet.compute_pod("gpu-a", SPEC, 3)
    assert [c["name"] for c in compute["spec"]["containers"]] == ["vectoradd-0", "vectoradd-1", "vectoradd-2"]
    long = "n" * 70
    assert len(fleet.pod_name(fleet.SMOKE_PREFIX, long)) <= 63
    assert fleet.pod_name(fleet.SMOKE_PREFIX, long) != fleet.pod_name(fleet.SMOKE_PREFIX, long + "x")


def test_summary_names_the_short_node() -> None:
    rows = [
        {"node": "gpu-a", "expected": 8, "allocatable": 8, "status": "pass"},
        {"node": "gpu-b", "expected": 8, "allocatable": 7, "status": "fail"},
        {"node": "gpu-c", "expected": 4, "allocatable": 4, "status": "pass"},
    ]
    assert fleet.summary(rows) == "3 nodes, 20 GPUs: 19 allocatable; node gpu-b has 7 of 8"
    assert fleet.summary([{**r, "allocatable": r["expected"], "status": "pass"} for r in rows]).endswith(
        "every node passed"
    )
    rows[1] = {**rows[1], "allocatable": 8}
    assert fleet.summary(rows).endswith("failed: gpu-b")


def test_a_uuid_on_two_nodes_is_named() -> None:
    rows = [{"node": "a", "smokeGpuUuids": ["GPU-1", "GPU-2"]}, {"node": "b", "smokeGpuUuids": ["GPU-2"]}]
    assert fleet.duplicate_uuids(rows) == {"GPU-2": ["a", "b"]}


class _Items:
    def __init__(self, items: list[Any]) -> None:
        self.items = items


class _Obj:
    """A client model object: the fake ApiClient's sanitize returns its dict."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc


class _Api:
    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj.doc if isinstance(obj, _Obj) else obj


def test_run_fleet_checks_every_node_and_a_failure_hides_none(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    nodes = [
        node("gpu-a", {fleet.GFD_COUNT: "8"}, 8),
        node("gpu-b", {fleet.GFD_COUNT: "8"}, 8),
        node("gpu-c", {fleet.GFD_COUNT: "4"}, 3, cap=4),
        node("cpu-1", {}, None),
        node("gpu-d", {fleet.GFD_COUNT: "2"}, 2),
    ]
    # Someone's training job holds one of gpu-d's GPUs; a finished Pod on gpu-a holds none.
    busy = [
        {"spec": {"nodeName": "gpu-d", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
        {
            "spec": {"nodeName": "gpu-a", "containers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Succeeded"},
        },
    ]

    class Core:
        def __init__(self, api: Any) -> None: ...
        def list_node(self) -> _Items:
            return _Items([_Obj(n) for n in nodes])

        def list_pod_for_all_namespaces(self, label_selector: str = "") -> _Items:
            return _Items([] if label_selector else [_Obj(p) for p in busy])

    class Version:
        def __init__(self, api: Any) -> None: ...
        def get_code(self) -> Any:
            return type("V", (), {"git_version": "v1.36.3"})()

    monkeypatch.setattr(client, "CoreV1Api", Core)
    monkeypatch.setattr(client, "VersionApi", Version)
    monkeypatch.setattr(fleet, "_cluster_policy_state", lambda api: None)
    checked: list[tuple[str, int]] = []

    def check(api: Any, name: str, gpus: int, spec: fleet.FleetSpec) -> dict[str, Any]:
        checked.append((name, gpus))
        uuids = [f"GPU-{name}-{i}" for i in range(gpus)]
        if name == "gpu-b":
            return {
                "smoke": "pass",
                "compute": "fail",
                "smokeGpuUuids": uuids,
                "firstFailure": "compute: x",
                "fix": "y",
            }
        return {"smoke": "pass", "compute": "pass", "smokeGpuUuids": uuids, "computeGpus": gpus}

    got = fleet.run_fleet(_Api(), SPEC, check=check, sleep=lambda s: None)
    rows = {r["node"]: r for r in got.nodes}
    assert sorted(rows) == ["gpu-a", "gpu-b", "gpu-c", "gpu-d"]  # the CPU node is no GPU node
    assert sorted(checked) == [("gpu-a", 8), ("gpu-b", 8)]  # gpu-c failed its gate: not smoke-tested
    assert rows["gpu-a"]["status"] == "pass"
    assert rows["gpu-b"]["status"] == "fail" and rows["gpu-b"]["firstFailure"] == "compute: x"
    assert rows["gpu-c"]["status"] == "fail" and rows["gpu-c"]["smoke"] == "not-tested"
    assert rows["gpu-c"]["firstFailure"].startswith("gate: node gpu-c advertises 3")
    # The busy node is not tested (its Pods would wait), never passed nor failed.
    assert rows["gpu-d"]["status"] == "not-tested" and rows["gpu-d"]["smoke"] == "not-tested"
    assert rows["gpu-d"]["notTested"].startswith("1 of its 2 nvidia.com/gpu are held by other Pods")
    assert got.allocatable_gpus == 21 and got.capacity_gpus == 22 and got.expected_gpus == 22
    assert got.nodes_passed == 1 and got.device_plugin_found == []
    assert got.nodes_summary == (
        "4 nodes, 22 GPUs: 21 allocatable; node gpu-c has 3 of 4; failed: gpu-b, gpu-c; "
        "not tested (GPUs in use): gpu-d"
    )


def test_no_node_passing_the_gate_fails_with_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    busy: list[dict[str, Any]] = []

    class Core:
        def __init__(self, api: Any) -> None: ...
        def list_node(self) -> _Items:
            return _Items([_Obj(node("gpu-z", {fleet.GFD_COUNT: "2"}, 1, cap=2))])

        def list_pod_for_all_namespaces(self, label_selector: str = "") -> _Items:
            return _Items([] if label_selector else [_Obj(p) for p in busy])

    monkeypatch.setattr(client, "CoreV1Api", Core)
    with pytest.raises(GateError, match="no GPU node passed the gate:\n  gpu-z: fail"):
        fleet.run_fleet(_Api(), SPEC, check=lambda *a: {}, sleep=lambda s: None)


def test_a_driver_other_than_gfds_label_fails_the_smoke() -> None:
    row = {"node": "gpu-a", "smoke": "pass", "labelDriverVersion": "580.159.04", "driverVersion": "575.57.08"}
    fleet._driver_matches(row)
    assert row["smoke"] == "fail" and "printed driver 575.57.08" in row["firstFailure"]
    same = {"node": "gpu-b", "smoke": "pass", "labelDriverVersion": "580.15", "driverVersion": "580.15"}
    fleet._driver_matches(same)
    assert same["smoke"] == "pass"


# --- NVIDIA's device plugin chart installed by the lab (gpuStack device-plugin) -----------------

PLUGIN_NS = "nvidia-device-plugin"


def _plugin_pod(name: str, node_name: str, ready: bool = True, waiting: str | None = None) -> dict[str, Any]:
    state = {"waiting": {"reason": waiting}} if waiting else {"running": {}}
    return {
        "metadata": {
            "name": name,
            "namespace": PLUGIN_NS,
            "ownerReferences": [{"kind": "DaemonSet", "name": "nvidia-device-plugin"}],
        },
        "spec": {"nodeName": node_name},
        "status": {
            "phase": "Running" if ready else "Pending",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"ready": ready, "state": state}],
        },
    }


def test_an_installed_chart_requires_its_plugin_pod_and_gfds_labels() -> None:
    exp = fleet.Expectation(4, "gfd:nvidia.com/gpu.count=1 x nvidia.com/gpu.replicas=4", 4)
    labelled = {fleet.GFD_COUNT: "1", fleet.GFD_REPLICAS: "4", fleet.GFD_SHARING: "time-slicing"}
    pod = _plugin_pod("dp-a", "a")
    assert fleet.gate_node(node("a", labelled, 4), exp, "nvidia.com/gpu", pod, True, PLUGIN_NS).ok
    # Evicted (a taint the chart's Pods do not tolerate): named, with the affinity and taints to check.
    gone = fleet.gate_node(node("a", labelled, 0), exp, "nvidia.com/gpu", None, True, PLUGIN_NS)
    assert gone.cause == "no Pod of the device plugin chart's DaemonSet runs on node a"
    assert "taint" in gone.fix and "pci-10de.present" in gone.fix
    # The plugin registered, GFD has not labelled the node: not judged on capacity alone.
    bare = fleet.gate_node(
        node("a", {}, 4), fleet.Expectation(4, "capacity"), "nvidia.com/gpu", pod, True, PLUGIN_NS
    )
    assert bare.cause == "node a has no nvidia.com/gpu.count label: GPU Feature Discovery has not labelled it"
    assert "NodeFeature" in bare.fix
    # A Pod stuck on its image says so.
    pulled = _plugin_pod("dp-a", "a", ready=False, waiting="ErrImagePull")
    stuck = fleet.gate_node(node("a", labelled, 4), exp, "nvidia.com/gpu", pulled, True, PLUGIN_NS)
    assert stuck.cause == f"the device-plugin Pod {PLUGIN_NS}/dp-a on node a is not Ready (ErrImagePull)"
    # A found stack is not held to GFD's labels.
    assert fleet.gate_node(node("a", {}, 4), fleet.Expectation(4, "capacity"), "nvidia.com/gpu", pod, True).ok


def test_time_slicing_pods_hold_one_replica_and_expect_one_gpu() -> None:
    labels = {fleet.GFD_COUNT: "2", fleet.GFD_REPLICAS: "4", fleet.GFD_SHARING: "time-slicing"}
    exp = fleet.expectation(node("a", labels, 8), SPEC)
    assert (exp.count, exp.replicas, exp.pod_gpus) == (8, 4, 1)
    assert fleet.expectation(node("b", {fleet.GFD_COUNT: "2"}, 2), SPEC).pod_gpus == 2


def _progress(wait: float = 600, settle: float = 10) -> fleet._Progress:
    spec = fleet.FleetSpec(
        namespace="gpu-lab", smoke_image="i:1", settle=settle, installed_in=PLUGIN_NS, wait=wait
    )
    return fleet._Progress(0.0, spec)


def test_the_gate_waits_while_the_charts_pods_come_up_and_stops_on_a_stuck_one() -> None:
    starting = [_plugin_pod("dp-a", "a", ready=False)]
    ready = [_plugin_pod("dp-a", "a")]
    p = _progress()
    # Pods still starting at t=100: past the 10 s grace, the gate keeps waiting.
    assert not p.over(100.0, starting, labelled=False)
    # All Ready from t=101 but no GFD label yet: one NFD pass (60 s) plus the grace more.
    assert not p.over(101.0 + fleet.NFD_PASS_SECONDS, ready, labelled=False)
    assert p.over(101.0 + fleet.NFD_PASS_SECONDS + 11, ready, labelled=False)
    # A Pod stuck on its image: over once it has been stuck for the grace.
    stuck = [_plugin_pod("dp-a", "a", ready=False, waiting="ImagePullBackOff")]
    q = _progress()
    assert not q.over(1.0, stuck, labelled=True)
    assert q.over(11.0, stuck, labelled=True)
    assert "dp-a on a: ImagePullBackOff" in q.describe(stuck)
    # Never past the wait, even while Pods keep starting.
    assert _progress(wait=30).over(30.0, starting, labelled=False)
    # No Pod at all (evicted, or the release gone): the grace only.
    r = _progress()
    assert not r.over(5.0, [], labelled=True) and r.over(10.0, [], labelled=True)
    assert "none (is the release installed?" in r.describe([])


def test_a_found_stack_waits_the_grace_only() -> None:
    p = fleet._Progress(0.0, fleet.FleetSpec(namespace="gpu-lab", smoke_image="i:1", settle=10))
    assert not p.over(9.9, [_plugin_pod("x", "a", ready=False)], labelled=False)
    assert p.over(10.0, [_plugin_pod("x", "a", ready=False)], labelled=False)


def test_the_charts_gfd_pods_share_the_plugins_labels_and_are_not_taken_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen on the simulated lab with NVIDIA's chart v0.19.0: its GFD DaemonSet's Pods carry
    app.kubernetes.io/name=nvidia-device-plugin too (templates/daemonset-gfd.yml)."""
    from kubernetes import client

    plugin = _plugin_pod("nvidia-device-plugin-x", "a")
    plugin["spec"]["containers"] = [{"name": "nvidia-device-plugin-ctr"}]
    gfd = _plugin_pod("nvidia-device-plugin-gpu-feature-discovery-y", "a")
    gfd["metadata"]["ownerReferences"] = [
        {"kind": "DaemonSet", "name": "nvidia-device-plugin-gpu-feature-discovery"}
    ]
    gfd["spec"]["containers"] = [{"name": "gpu-feature-discovery-ctr"}]

    class Core:
        def __init__(self, api: Any) -> None: ...
        def list_pod_for_all_namespaces(self, label_selector: str = "") -> _Items:
            return _Items([_Obj(gfd), _Obj(plugin)] if "app.kubernetes.io/name" in label_selector else [])

    monkeypatch.setattr(client, "CoreV1Api", Core)
    dss, pods = fleet._plugin_pods(_Api())
    assert dss == [f"{PLUGIN_NS}/nvidia-device-plugin"] and [p["metadata"]["name"] for p in pods] == [
        "nvidia-device-plugin-x"
    ]


def test_a_crash_loop_between_its_back_offs_is_no_progress() -> None:
    """Rehearsed on the real-node harness without a GPU: NVIDIA's plugin and GFD exit on NVML at
    once; between back-offs a container runs for a moment, which must not extend the wait (the
    gate took 287 s there before)."""
    running_again = _plugin_pod("dp-a", "a", ready=False)
    running_again["status"]["containerStatuses"][0]["restartCount"] = 1
    p = _progress()
    assert not p.over(1.0, [running_again], labelled=False)
    # No progress since the start: the grace (plus one NFD pass for the missing labels), not the wait.
    assert p.over(10.0 + fleet.NFD_PASS_SECONDS, [running_again], labelled=False)
    looped = _plugin_pod("dp-a", "a", ready=False)
    looped["status"]["containerStatuses"][0]["restartCount"] = 3
    q = _progress()
    assert not q.over(1.0, [looped], labelled=True) and q.over(11.0, [looped], labelled=True)
    assert "dp-a on a: restarted 3 times" in q.describe([looped])


def test_a_pod_the_scheduler_cannot_place_is_no_progress() -> None:
    """Seen on the H200 (2026-12-03, run lab-nvidia): a NoExecute taint evicted the chart's Pods;
    NFD's master and gc Deployments made new Pods that stayed Pending, Unschedulable, and the
    gate counted them as coming up until the run's budget was spent (verify ran 137 s)."""
    pending = {
        "metadata": {"name": "nfd-master-x", "namespace": PLUGIN_NS},
        "spec": {},
        "status": {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1 nodes are available: 1 node(s) had untolerated taint {a: x}.",
                }
            ],
        },
    }
    assert not fleet._starting(pending)
    assert fleet._waiting(pending).startswith("Unschedulable: 0/1 nodes are available")
    p = _progress()
    assert not p.over(1.0, [pending], labelled=True) and p.over(11.0, [pending], labelled=True)
    assert "nfd-master-x on (unscheduled): Unschedulable: 0/1 nodes" in p.describe([pending])
    # A Pod not yet looked at by the scheduler is still coming up.
    fresh = {"metadata": {"name": "y"}, "spec": {}, "status": {"phase": "Pending"}}
    assert fleet._starting(fresh) and fleet._waiting(fresh) is None
