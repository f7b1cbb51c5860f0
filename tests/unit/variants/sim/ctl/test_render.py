"""Unit tests of variants.sim.ctl.render: the kwokctl config, the Stages, the nodes, the captures
and the CRI log. No binaries, no processes, no network."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from variants.sim import ctl as sc

NOW = dt.datetime(2026, 11, 29, 12, 0, 0, tzinfo=dt.UTC)
CRI_LINE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z) (?P<stream>stdout|stderr) "
    r"(?P<tag>[FP]) (?P<text>.*)$"
)


def _config_docs(**kwargs: Any) -> list[dict[str, Any]]:
    text = sc.render_kwokctl_config(
        kube_version="v1.36.3",
        bin_dir=Path("/opt/sim/bin"),
        log_file=Path("/work/sim/logs/nvidia-smi.log"),
        **kwargs,
    )
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _stage(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for d in docs:
        if d["kind"] == "Stage" and d["metadata"]["name"] == name:
            return d
    raise AssertionError(f"no Stage {name!r} in {[d['metadata'].get('name') for d in docs]}")


def _expr(stage: dict[str, Any], key: str) -> dict[str, Any]:
    for e in stage["spec"]["selector"]["matchExpressions"]:
        if e["key"] == key:
            return dict(e)
    raise AssertionError(f"Stage {stage['metadata']['name']} has no selector on {key}")


# ------------------------------------------------------------------ kwokctl config


def test_config_options_bind_loopback_and_use_local_binaries() -> None:
    docs = _config_docs()
    conf = docs[0]
    assert conf["kind"] == "KwokctlConfiguration"
    opts = conf["options"]
    assert opts["bindAddress"] == "127.0.0.1"
    assert opts["runtime"] == "binary"
    assert opts["kubeVersion"] == "v1.36.3"
    assert opts["kubeBinaryPrefix"] == "/opt/sim/bin"
    assert opts["etcdBinary"] == "/opt/sim/bin/etcd"
    assert opts["kwokControllerBinary"] == "/opt/sim/bin/kwok"
    assert opts["kubectlBinary"] == "/opt/sim/bin/kubectl"
    # No binary may be a URL: kwokctl would download it.
    assert not any(str(v).startswith("http") for v in opts.values())
    # Single instances: no leader election (no Lease renewed every 2 s); the Go programs'
    # collector at GOGC=400 under a 1 GiB GOMEMLIMIT; no other patch.
    gc = [{"name": "GOGC", "value": "400"}, {"name": "GOMEMLIMIT", "value": "1GiB"}]
    elect = [{"key": "leader-elect", "value": "false"}]
    assert sorted(conf["componentsPatches"], key=lambda p: p["name"]) == [
        {"name": "etcd", "extraEnvs": gc},
        {"name": "kube-apiserver", "extraArgs": [ROUTING], "extraEnvs": gc},
        {"name": "kube-controller-manager", "extraArgs": elect, "extraEnvs": gc},
        {"name": "kube-scheduler", "extraArgs": elect, "extraEnvs": gc},
        {"name": "kwok-controller", "extraEnvs": gc},
    ]


def test_config_lists_the_complete_stage_set() -> None:
    names = {d["metadata"]["name"] for d in _config_docs() if d["kind"] == "Stage"}
    assert names == {
        "gpulab-node-initialize",
        "gpulab-node-heartbeat-with-lease",
        "gpulab-pod-ready",
        "gpulab-pod-pull-refused",
        "gpulab-pod-complete-job",
        "gpulab-pod-complete-bare",
        "gpulab-pod-delete",
    }


def test_bare_run_once_pod_stage_reaches_succeeded_with_exit_code_0() -> None:
    stage = _stage(_config_docs(), "gpulab-pod-complete-bare")
    assert stage["spec"]["resourceRef"] == {"apiGroup": "v1", "kind": "Pod"}
    assert _expr(stage, ".status.phase") == {
        "key": ".status.phase",
        "operator": "In",
        "values": ["Running"],
    }
    assert "Never" in _expr(stage, ".spec.restartPolicy")["values"]
    assert _expr(stage, ".metadata.ownerReferences")["operator"] == "DoesNotExist"
    assert _expr(stage, ".metadata.deletionTimestamp")["operator"] == "DoesNotExist"
    assert 500 <= stage["spec"]["delay"]["durationMilliseconds"] <= 2000
    template = stage["spec"]["next"]["statusTemplate"]
    assert "phase: Succeeded" in template
    assert "exitCode: 0" in template
    assert stage["spec"]["next"]["event"]["reason"] == "SimulatedExit"


def test_every_container_of_a_multi_container_pod_runs_then_exits_0() -> None:
    # The compute Pod has one vectorAdd container per GPU: each one must get a status, first
    # running, then terminated with exit code 0 (the Pod is Succeeded only when all are).
    docs = _config_docs()
    ready = _stage(docs, "gpulab-pod-ready")["spec"]["next"]["statusTemplate"]
    done = _stage(docs, "gpulab-pod-complete-bare")["spec"]["next"]["statusTemplate"]
    for template, state in ((ready, "running:"), (done, "terminated:")):
        statuses = template.split("containerStatuses:", 1)[1]
        loop = statuses.split("{{ range .spec.containers }}", 1)[1].split("{{ end }}", 1)[0]
        assert "- name: {{ .name | Quote }}" in loop and state in loop
    assert "exitCode: 0" in done.split("{{ range .spec.containers }}", 1)[1].split("{{ end }}", 1)[0]


def test_job_pod_stage_only_matches_job_pods() -> None:
    stage = _stage(_config_docs(), "gpulab-pod-complete-job")
    assert _expr(stage, ".metadata.ownerReferences.[].kind")["values"] == ["Job"]
    assert "phase: Succeeded" in stage["spec"]["next"]["statusTemplate"]


@pytest.mark.parametrize(
    "name",
    [
        "gpulab-node-initialize",
        "gpulab-node-heartbeat-with-lease",
        "gpulab-pod-ready",
        "gpulab-pod-complete-job",
        "gpulab-pod-complete-bare",
        "gpulab-pod-delete",
    ],
)
def test_every_stage_announces_that_it_simulates(name: str) -> None:
    event = _stage(_config_docs(), name)["spec"]["next"]["event"]
    assert event["reason"].startswith("Simulated")
    assert "simulated" in event["message"]


def test_node_initialize_keeps_existing_capacity() -> None:
    template = _stage(_config_docs(), "gpulab-node-initialize")["spec"]["next"]["statusTemplate"]
    assert "{{ with .status.capacity }}" in template
    assert "{{ with .status.allocatable }}" in template


def test_cluster_logs_select_the_smoke_pod_and_every_container() -> None:
    docs = _config_docs(log_namespaces=("default", "lab"), log_pods=("gpu-smoke", "smoke-2"))
    (logs,) = [d for d in docs if d["kind"] == "ClusterLogs"]
    assert logs["spec"]["selector"] == {
        "matchNamespaces": ["default", "lab"],
        "matchNames": ["gpu-smoke", "smoke-2"],
    }
    (entry,) = logs["spec"]["logs"]
    assert entry["logsFile"] == "/work/sim/logs/nvidia-smi.log"
    assert "containers" not in entry  # the default entry serves any container name


def test_config_adds_advertise_address_only_when_asked() -> None:
    def args(conf: dict[str, Any]) -> dict[str, Any]:
        return {p["name"]: p.get("extraArgs") for p in conf["componentsPatches"]}

    assert args(_config_docs(apiserver_advertise_address="10.0.0.5")[0])["kube-apiserver"] == [
        ROUTING,
        {"key": "advertise-address", "value": "10.0.0.5"},
    ]
    assert args(_config_docs()[0])["kube-apiserver"] == [ROUTING]


#: Services resolve to their EndpointSlices' endpoints (no kube-proxy in the sim): Kueue's
#: webhooks and aggregated API (variants/sim/ctl/queues.py).
ROUTING = {"key": "enable-aggregator-routing", "value": "true"}


def test_config_rejects_relative_paths() -> None:
    with pytest.raises(ValueError, match="absolute"):
        sc.render_kwokctl_config(kube_version="v1.36.3", bin_dir=Path("bin"), log_file=Path("/l/x.log"))


# ------------------------------------------------------------------ node manifest


@pytest.mark.parametrize("gpus", [1, 2])
def test_node_manifest_has_gpu_capacity_and_operator_labels(gpus: int) -> None:
    info = sc.parse_capture(sc.load_capture(gpus))
    node = sc.render_node_manifest("gpu-sim-node", gpus, info)
    assert node["kind"] == "Node"
    assert node["metadata"]["name"] == "gpu-sim-node"
    for field in ("capacity", "allocatable"):
        res = node["status"][field]
        assert res["nvidia.com/gpu"] == str(gpus)
        assert res["cpu"] == "16"
        assert res["memory"] == "64Gi"
        assert res["pods"] == "110"
    labels = node["metadata"]["labels"]
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/gpu.count"] == str(gpus)
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert labels["nvidia.com/cuda.driver-version.full"] == "580.159.04"
    assert labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
    for operand in (
        "device-plugin",
        "container-toolkit",
        "dcgm-exporter",
        "gpu-feature-discovery",
    ):
        assert labels[f"nvidia.com/gpu.deploy.{operand}"] == "true"
    annotations = node["metadata"]["annotations"]
    assert annotations["gpulab.dev/simulated"] == "true"
    assert annotations["kwok.x-k8s.io/node"] == "fake"
    # kwok's fake kubelet is reached through the Hostname kwok writes; none of our own.
    assert "addresses" not in node["status"]
    assert "taints" not in node["spec"]


def test_node_manifest_rejects_zero_gpus() -> None:
    info = sc.parse_capture(sc.load_capture(1))
    with pytest.raises(ValueError):
        sc.render_node_manifest("gpu-sim-node", 0, info)


# ------------------------------------------------------------------ captures and CRI log


@pytest.mark.parametrize(("gpus", "name"), [(1, "h200-1gpu"), (2, "h200-2gpu")])
def test_capture_is_chosen_by_gpu_count(gpus: int, name: str) -> None:
    assert sc.capture_name(gpus) == name
    info = sc.parse_capture(sc.load_capture(gpus))
    assert info.driver_version == "580.159.04"
    assert info.cuda_version == "13.0"
    assert info.gpu_names == ("NVIDIA H200",) * gpus
    assert info.memory_mib == 143771


def test_unknown_gpu_count_names_the_allowed_values() -> None:
    with pytest.raises(ValueError, match="one of 1, 2"):
        sc.capture_name(3)


def test_parse_capture_rejects_other_text() -> None:
    with pytest.raises(ValueError, match="Driver Version"):
        sc.parse_capture("hello")


@pytest.mark.parametrize("gpus", [1, 2])
def test_cri_log_lines_are_well_formed(gpus: int) -> None:
    capture = sc.load_capture(gpus)
    text = sc.render_cri_log(capture, NOW)
    assert text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == len(capture.splitlines()) + 1
    stamps = []
    for line in lines:
        m = CRI_LINE.match(line)
        assert m, f"not a CRI log line: {line!r}"
        assert m["stream"] == "stdout" and m["tag"] == "F"
        stamps.append(dt.datetime.fromisoformat(m["ts"]))
    assert stamps == sorted(stamps)
    assert stamps[0] == NOW
    texts = [CRI_LINE.match(line)["text"] for line in lines]  # type: ignore[index]
    assert texts[0] == sc.LOG_BANNER
    assert "simulated" in texts[0]
    assert texts[1:] == capture.splitlines()
    header = next(t for t in texts if "Driver Version:" in t)
    assert "Driver Version: 580.159.04" in header and "CUDA Version: 13.0" in header


def test_cri_log_keeps_the_separator_of_empty_lines() -> None:
    text = sc.render_cri_log("a\n\nb", NOW)
    assert text.splitlines()[2].endswith(" stdout F ")


def test_cri_log_needs_an_aware_time() -> None:
    with pytest.raises(ValueError):
        sc.render_cri_log("x", dt.datetime(2026, 1, 1))


# ------------------------------------------------------------------ node names (--nodes)


def test_node_names_follow_the_first_node() -> None:
    assert sc.node_names("gpu-sim-node", 1) == ["gpu-sim-node"]
    assert sc.node_names("gpu-sim-node", 3) == ["gpu-sim-node", "gpu-sim-node-2", "gpu-sim-node-3"]


@pytest.mark.parametrize("count", [0, -1, sc.MAX_NODES + 1])
def test_node_count_is_bounded(count: int) -> None:
    with pytest.raises(ValueError, match=f"nodes must be 1..{sc.MAX_NODES}"):
        sc.node_names("n", count)


def test_node_names_stay_dns_labels() -> None:
    with pytest.raises(ValueError, match="not a DNS label"):
        sc.node_names("n" * 62, 2)  # "nnn...-2" is 64 characters


def test_stale_nodes_are_only_the_extra_numbered_ones() -> None:
    existing = [
        "gpu-sim-node",
        "gpu-sim-node-2",
        "gpu-sim-node-3",
        "gpu-sim-node-x",
        "other",
        "gpu-sim-node2",
    ]
    assert sc.stale_nodes(existing, "gpu-sim-node", ["gpu-sim-node"]) == ["gpu-sim-node-2", "gpu-sim-node-3"]
    assert sc.stale_nodes(existing, "gpu-sim-node", sc.node_names("gpu-sim-node", 3)) == []


def test_every_node_gets_the_same_gpus_and_its_own_hostname_label() -> None:
    info = sc.parse_capture(sc.load_capture(1))
    manifests = [sc.render_node_manifest(n, 1, info) for n in sc.node_names("gpu-sim-node", 2)]
    assert [m["metadata"]["labels"]["kubernetes.io/hostname"] for m in manifests] == [
        "gpu-sim-node",
        "gpu-sim-node-2",
    ]
    assert all(m["status"]["allocatable"]["nvidia.com/gpu"] == "1" for m in manifests)
    assert all(m["metadata"]["annotations"]["gpulab.dev/simulated"] == "true" for m in manifests)


def test_the_compute_pod_gets_the_vectoradd_log_in_the_same_namespaces() -> None:
    from variants.sim.ctl import render

    text = sc.render_kwokctl_config(
        kube_version="v1.36.3",
        bin_dir=Path("/work/bin"),
        log_file=Path("/work/sim/logs/nvidia-smi.log"),
        log_namespaces=("default", "lab"),
        compute_log_file=Path("/work/sim/logs/vectoradd.log"),
    )
    logs = {d["metadata"]["name"]: d for d in yaml.safe_load_all(text) if d["kind"] == "ClusterLogs"}
    assert set(logs) == {"gpulab-nvidia-smi", "gpulab-vectoradd"}
    compute = logs["gpulab-vectoradd"]["spec"]
    assert compute["selector"] == {"matchNamespaces": ["default", "lab"], "matchNames": ["gpu-compute"]}
    # vectoradd-<i> reads a log of its own (the one GPU it lists), any other container the
    # default entry (no "containers"): kwok's findLogInLogs picks the entry naming it first.
    own = compute["logs"][: render.COMPUTE_CONTAINER_LOGS]
    assert [e["containers"] for e in own] == [
        [f"vectoradd-{i}"] for i in range(render.COMPUTE_CONTAINER_LOGS)
    ]
    assert [e["logsFile"] for e in own] == [
        f"/work/sim/logs/vectoradd-{i}.log" for i in range(render.COMPUTE_CONTAINER_LOGS)
    ]
    (default,) = compute["logs"][render.COMPUTE_CONTAINER_LOGS :]
    assert default["logsFile"] == "/work/sim/logs/vectoradd.log" and "containers" not in default
    # The served log: the simulated banner first, then NVIDIA's documented vectorAdd output.
    served = sc.render_cri_log(render.load_vectoradd(), dt.datetime(2026, 12, 1, tzinfo=dt.UTC))
    lines = [line.split(" stdout F ", 1)[1] for line in served.splitlines()]
    assert "gpu-lab simulated" in lines[0]
    assert "Test PASSED" in lines and lines[-1] == "Done"


def test_the_2gpu_smoke_log_lists_the_captures_gpus_after_the_table() -> None:
    from gpulab.kube.smoke_gpus import gpu_uuids
    from variants.sim.ctl.render import load_capture, smoke_log

    table = load_capture(2)
    log = smoke_log(table, "h200-2gpu")
    assert log.startswith(table.rstrip("\n"))
    assert gpu_uuids(log) == [
        "GPU-00000000-0000-4000-8000-000000000000",
        "GPU-00000001-0000-4000-8000-000000000001",
    ]
    # The 1-GPU capture lists its one GPU too, so the default sim stack compares UUIDs as well.
    one = smoke_log(load_capture(1), "h200-1gpu")
    assert one.startswith(load_capture(1).rstrip("\n"))
    assert gpu_uuids(one) == ["GPU-00000000-0000-4000-8000-000000000000"]
    # A MIG capture's MIG rows are left out (a Pod given one MIG device does not list all seven).
    assert "MIG 1g.18gb" not in smoke_log(load_capture(1, "h200-1gpu-mig"), "h200-1gpu-mig")
    with pytest.raises(ValueError, match="not a capture name"):
        smoke_log(table, "../etc")


def test_each_compute_container_s_simulated_log_lists_one_gpu_of_the_capture() -> None:
    from gpulab.kube import smoke_gpus
    from variants.sim.ctl import render

    two = render.compute_logs("h200-2gpu")
    assert [smoke_gpus.gpu_uuids(t) for t in two] == [
        ["GPU-00000000-0000-4000-8000-000000000000"],
        ["GPU-00000001-0000-4000-8000-000000000001"],
    ]
    assert all("Test PASSED" in t.splitlines() for t in two)
    # Under MIG: MIG device i under its parent GPU.
    mig = render.compute_logs("h200-1gpu-mig")
    assert len(mig) == 7
    assert smoke_gpus.mig_uuids(mig[0]) == ["MIG-00000000-0000-4000-8000-000000000001"]
    assert smoke_gpus.gpu_uuids(mig[0]) == ["GPU-00000000-0000-4000-8000-000000000000"]
    assert render.compute_container_log_file(Path("/w/logs/vectoradd.log"), 3) == Path(
        "/w/logs/vectoradd-3.log"
    )


def test_the_smoke_log_lists_only_the_gpus_the_smoke_pod_is_given() -> None:
    from gpulab.kube import smoke_gpus
    from variants.sim.ctl import render

    table = render.load_capture(2)
    assert len(smoke_gpus.gpu_uuids(render.smoke_log(table, "h200-2gpu")) or []) == 2
    # One time-slicing replica: a real runtime lists one GPU, so the simulated log does too.
    assert smoke_gpus.gpu_uuids(render.smoke_log(table, "h200-2gpu", 1)) == [
        "GPU-00000000-0000-4000-8000-000000000000"
    ]
