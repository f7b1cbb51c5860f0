"""ops.stackstate: reading what an interrupted run left, in Pulumi's own formats."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from ops import stackstate
from ops.stackstate import Proc

SECRET = "4dabf18193072939515e22adb298388d"
KC = "apiVersion: v1\nkind: Config\nclusters: []\n"
OPERATOR = "urn:pulumi:sim::gpu-lab::gpulab:gpu_operator:GpuOperator"
RELEASE = f"{OPERATOR}$kubernetes:helm.sh/v3:Release::gpu-operator-release"


def test_backend_dir_of_file_urls_only() -> None:
    assert stackstate.backend_dir("file:///tmp/x/.state/pulumi") == Path("/tmp/x/.state/pulumi")
    assert stackstate.backend_dir("https://api.pulumi.com") is None
    assert stackstate.backend_dir("s3://bucket") is None


def _lock(root: Path, stack: str, pid: int, host: str) -> Path:
    # pulumi v3.274.1 backend/diy/lock.go: .pulumi/locks/<org>/<project>/<stack>/<uuid>.json
    d = root / ".pulumi" / "locks" / "organization" / "gpu-lab" / stack
    d.mkdir(parents=True, exist_ok=True)
    f = d / "5f0c9a9e-1c1b-4b0e-9b7e-0d5f3c2a1e77.json"
    f.write_text(
        json.dumps({"pid": pid, "username": "root", "hostname": host, "timestamp": "2026-12-01T10:00:00Z"})
    )
    return f


def test_a_lock_of_a_gone_process_on_this_host_is_stale(tmp_path: Path) -> None:
    _lock(tmp_path, "sim", 4242, socket.gethostname())
    (lock,) = stackstate.locks(tmp_path, "gpu-lab", "sim")
    assert lock.pid == 4242 and "pid 4242 (root@" in lock.describe()
    assert stackstate.stale(lock, engine=lambda pid: False)
    assert not stackstate.stale(lock, engine=lambda pid: True)  # a running engine holds it
    # Another host's lock is never ours to judge.
    assert not stackstate.stale(lock, host="elsewhere", engine=lambda pid: False)
    assert stackstate.locks(tmp_path, "gpu-lab", "other") == []


def test_is_engine_reads_the_command_line() -> None:
    assert stackstate.is_engine(
        7, cmd=lambda p: "/root/.cache/gpu-lab/bin/pulumi up --yes", alive=lambda p: True
    )
    assert not stackstate.is_engine(7, cmd=lambda p: "python -m gpulab.kube gate", alive=lambda p: True)
    assert not stackstate.is_engine(7, cmd=lambda p: "pulumi up", alive=lambda p: False)


def deployment() -> dict:
    return {
        "resources": [
            {
                "urn": "urn:pulumi:sim::gpu-lab::pulumi:providers:kubernetes::k8s",
                "type": "pulumi:providers:kubernetes",
                "inputs": {
                    "kubeconfig": {SECRET: "1b47061264138c4ac30d75fd1eb44270", "plaintext": json.dumps(KC)}
                },
            },
            {
                "urn": "urn:pulumi:sim::gpu-lab::command:local:Command::cluster-identity",
                "type": "command:local:Command",
                "outputs": {"stdout": '{"server": "https://s", "kubeSystemUid": "u"}'},
            },
        ],
        "pending_operations": [
            {
                "resource": {
                    "urn": RELEASE,
                    "type": "kubernetes:helm.sh/v3:Release",
                    "inputs": {"name": "gpu-operator", "namespace": "gpu-operator"},
                },
                "type": "creating",
            }
        ],
    }


def test_pending_operations_and_the_pending_release() -> None:
    d = deployment()
    assert stackstate.pending_operations(d) == [("creating", d["pending_operations"][0]["resource"]["urn"])]
    assert stackstate.pending_release(d) == ("gpu-operator", "gpu-operator")
    assert stackstate.release_in_state(d) is None


def test_kubeconfig_and_identity_from_the_state() -> None:
    assert stackstate.kubeconfig_of(deployment()) == KC
    assert stackstate.identity_of(deployment()) == {"server": "https://s", "kubeSystemUid": "u"}
    # A first run interrupted after the cluster answered: no provider yet, the cluster's stdout.
    only_cluster = {
        "resources": [
            {
                "urn": "urn:pulumi:sim::gpu-lab::gpulab:sim:SimCluster$command:local:Command::sim-cluster",
                "type": "command:local:Command",
                "outputs": {"stdout": {SECRET: "x", "plaintext": json.dumps(json.dumps({"kubeconfig": KC}))}},
            }
        ]
    }
    assert stackstate.kubeconfig_of(only_cluster) == KC
    assert stackstate.kubeconfig_of({"resources": []}) is None


def test_orphaned_plugins_are_those_without_an_engine_and_their_children(tmp_path: Path) -> None:
    here = str(tmp_path.resolve())
    procs = [
        Proc(10, 1, here, "/root/.cache/gpu-lab/bin/pulumi up"),  # a live engine
        Proc(
            11,
            10,
            here,
            "/root/.pulumi/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes 127.0.0.1:1",
        ),
        Proc(
            20,
            1,
            here,
            "/root/.pulumi/plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes 127.0.0.1:2",
        ),
        Proc(21, 1, here, "python3 hack/offline/command/pulumi_resource_command.py 127.0.0.1:2"),
        Proc(22, 21, here, '.venv/bin/python -m gpulab.core.argv ["python", "-m", "variants.sim.ctl", "up"]'),
        Proc(
            30, 1, here, "python -m variants.sim.ctl supervise --name x"
        ),  # the sim supervisor: not a plugin
        Proc(40, 1, "/elsewhere", "pulumi-resource-kubernetes"),  # another project's
    ]
    found = stackstate.orphaned_plugins(tmp_path, procs)
    assert [p.pid for p in found] == [20, 21, 22]
