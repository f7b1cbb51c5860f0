"""variants.kind.ctl: the kind config, the argv it runs, the host checks over recorded output,
and up/down's check-then-act with kind and docker faked on PATH."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from variants.kind import ctl as kind_ctl
from variants.kind.settings import DEFAULT_NODE_IMAGE

DOCKER_OK = {"Runtimes": {"nvidia": {}, "runc": {}}, "DefaultRuntime": "nvidia"}
#: Written `docker container inspect --format '{{json .Mounts}}'` outputs (README there).
DATA = Path(__file__).resolve().parents[3] / "data" / "docker-inspect"


# --------------------------------------------------------------------------- kind config


def test_config_mounts_dev_null_as_all_gpus_on_the_worker_only() -> None:
    text = kind_ctl.render_kind_config("lab")
    doc = yaml.safe_load(text)
    assert doc["kind"] == "Cluster" and doc["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert doc["name"] == "lab"
    cp, worker = doc["nodes"]
    assert cp == {"role": "control-plane"}
    assert worker["role"] == "worker"
    assert worker["extraMounts"] == [
        {"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/all"}
    ]
    assert "accept-nvidia-visible-devices-as-volume-mounts" in text  # the header says why


def test_config_with_several_workers_gives_each_the_mount() -> None:
    doc = yaml.safe_load(kind_ctl.render_kind_config("lab", workers=3))
    workers = [n for n in doc["nodes"] if n["role"] == "worker"]
    assert len(workers) == 3 and all(w["extraMounts"][0]["hostPath"] == "/dev/null" for w in workers)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        kind_ctl.render_kind_config("lab", workers=0)


# --------------------------------------------------------------------------- argv


def test_create_and_delete_name_the_cluster_and_keep_the_users_kubeconfig() -> None:
    assert kind_ctl.create_argv("lab", "/w/kind-config.yaml", DEFAULT_NODE_IMAGE, "/w/kc", 600) == [
        "kind",
        "create",
        "cluster",
        "--name",
        "lab",
        "--config",
        "/w/kind-config.yaml",
        "--image",
        DEFAULT_NODE_IMAGE,
        "--kubeconfig",
        "/w/kc",
        "--wait",
        "600s",
    ]
    assert kind_ctl.delete_argv("lab", "/w/kc") == [
        "kind",
        "delete",
        "cluster",
        "--name",
        "lab",
        "--kubeconfig",
        "/w/kc",
    ]
    assert kind_ctl.get_kubeconfig_argv("lab") == ["kind", "get", "kubeconfig", "--name", "lab"]


def test_cluster_listed_matches_whole_lines_only() -> None:
    assert kind_ctl.cluster_listed("kind\nlab\n", "lab")
    assert not kind_ctl.cluster_listed("lab2\nmy-lab\n", "lab")
    assert not kind_ctl.cluster_listed("No kind clusters found.\n", "lab")


def test_gpu_workers_are_the_clusters_workers() -> None:
    out = "lab-control-plane\nlab-worker2\nlab-worker\nother-worker\n"
    assert kind_ctl.gpu_workers(out, "lab") == ["lab-worker", "lab-worker2"]
    with pytest.raises(ValueError, match="unexpected node name"):
        kind_ctl.gpu_workers("lab-worker;rm\n", "lab")


def test_node_setup_installs_the_toolkit_then_gives_containerd_the_nvidia_handler() -> None:
    install, configure = kind_ctl.node_setup_argvs("lab-worker")
    assert install[:5] == ["docker", "exec", "lab-worker", "bash", "-euc"]
    assert "apt-get install -y -q nvidia-container-toolkit" in install[5]
    assert "nvidia-ctk runtime configure --runtime=containerd" in configure[5]
    assert "--set-as-default" not in configure[5]  # runc stays the default: Pods opt in by class
    assert "systemctl restart containerd" in configure[5]


# --------------------------------------------------------------------------- host checks


def test_volume_mounts_setting_true_passes() -> None:
    text = (
        "accept-nvidia-visible-devices-as-volume-mounts = true\n"
        '[nvidia-container-cli]\nldconfig = "@/sbin/ldconfig"\n'
    )
    assert kind_ctl.check_volume_mounts_setting(text).ok


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (None, "is missing"),
        ("accept-nvidia-visible-devices-as-volume-mounts = false\n", "is set to False"),
        ("#accept-nvidia-visible-devices-as-volume-mounts = true\n", "absent (default false)"),
        ("[nvidia-container-cli]\naccept-nvidia-visible-devices-as-volume-mounts = true\n", "absent"),
        ("this is = = not toml", "not valid TOML"),
    ],
)
def test_volume_mounts_setting_failures_name_the_cause_and_the_fix(text: str | None, needle: str) -> None:
    f = kind_ctl.check_volume_mounts_setting(text)
    assert not f.ok and needle in f.message, f.message
    assert "nvidia-ctk config --set accept-nvidia-visible-devices-as-volume-mounts=true --in-place" in f.fix


def test_docker_default_runtime_must_be_nvidia() -> None:
    assert kind_ctl.check_docker_default_runtime(0, json.dumps(DOCKER_OK)).ok
    f = kind_ctl.check_docker_default_runtime(0, json.dumps({**DOCKER_OK, "DefaultRuntime": "runc"}))
    assert not f.ok and "'runc', not nvidia" in f.message and "--set-as-default" in f.fix
    assert not kind_ctl.check_docker_default_runtime(1, "").ok
    assert not kind_ctl.check_docker_default_runtime(0, "not json").ok


def _runner(rc: int | None, out: str, err: str = "") -> Any:
    return lambda argv: (rc, out, err)


def test_host_findings_in_order(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("accept-nvidia-visible-devices-as-volume-mounts = true\n")
    findings = kind_ctl.host_findings(_runner(0, json.dumps(DOCKER_OK)), cfg, tmp_path / "daemon.json")
    assert [f.check for f in findings] == [
        "docker-nvidia-runtime",
        "docker-default-runtime",
        "nvidia-volume-mounts",
    ]
    assert all(f.ok for f in findings)


def test_host_findings_without_docker_skip_the_default_runtime(tmp_path: Path) -> None:
    findings = kind_ctl.host_findings(_runner(None, ""), tmp_path / "none.toml", tmp_path / "daemon.json")
    assert [(f.check, f.ok) for f in findings] == [
        ("docker-nvidia-runtime", False),
        ("nvidia-volume-mounts", False),
    ]


# --------------------------------------------------------------------------- up/down with fakes

FAKE_KIND = """#!/usr/bin/env python3
import json, os, sys
state = os.environ["FAKE_KIND_STATE"]
log = os.environ["FAKE_KIND_LOG"]
open(log, "a").write(" ".join(sys.argv[1:]) + "\\n")
clusters = set(open(state).read().split()) if os.path.exists(state) else set()
a = sys.argv[1:]
def name():
    return a[a.index("--name") + 1]
if a[:2] == ["get", "clusters"]:
    if clusters:
        print("\\n".join(sorted(clusters)))
    else:
        print("No kind clusters found.", file=sys.stderr)
elif a[:2] == ["create", "cluster"]:
    clusters.add(name())
elif a[:2] == ["delete", "cluster"]:
    clusters.discard(name())
elif a[:2] == ["get", "nodes"]:
    print(name() + "-control-plane\\n" + name() + "-worker")
elif a[:2] == ["get", "kubeconfig"]:
    print("apiVersion: v1\\nkind: Config\\n")
open(state, "w").write("\\n".join(sorted(clusters)))
"""
FAKE_DOCKER = """#!/usr/bin/env python3
import json, os, sys
open(os.environ["FAKE_KIND_LOG"], "a").write("docker " + " ".join(sys.argv[1:4]) + "\\n")
if sys.argv[1] == "info":
    print(json.dumps({"Runtimes": {"nvidia": {}}, "DefaultRuntime": "nvidia"}))
elif sys.argv[1] == "exec" and "containerd config dump" in sys.argv[-1]:
    sys.exit(0 if os.environ.get("FAKE_NODE_READY") else 1)
elif sys.argv[1:3] == ["container", "inspect"]:  # a reused cluster's worker: its mounts
    print(open(os.environ["FAKE_WORKER_MOUNTS"]).read())
"""


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("kind", FAKE_KIND), ("docker", FAKE_DOCKER)):
        p = bin_dir / name
        p.write_text(text)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "calls.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KIND_STATE", str(tmp_path / "clusters"))
    monkeypatch.setenv("FAKE_KIND_LOG", str(log))
    monkeypatch.setenv("FAKE_WORKER_MOUNTS", str(DATA / "kind-worker-gpus.mounts.json"))
    conf = tmp_path / "config.toml"
    conf.write_text("accept-nvidia-visible-devices-as-volume-mounts = true\n")
    monkeypatch.setattr(kind_ctl, "RUNTIME_CONFIG", conf)
    real = kind_ctl.host_findings
    monkeypatch.setattr(kind_ctl, "host_findings", lambda: real(runtime_config=conf))
    monkeypatch.setattr(kind_ctl, "_server_version", lambda kubeconfig: "v1.34.0")
    return log


def test_up_creates_once_sets_up_the_worker_and_down_deletes(fakes: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    spec = kind_ctl.UpSpec("lab", DEFAULT_NODE_IMAGE, work)
    result = kind_ctl.up(spec)
    assert result["name"] == "lab" and result["nodes"] == ["lab-worker"]
    assert result["kubernetesVersion"] == "v1.34.0" and "kind: Config" in result["kubeconfig"]
    calls = fakes.read_text().splitlines()
    creates = [c for c in calls if c.startswith("create cluster")]
    assert creates == [
        f"create cluster --name lab --config {work}/kind-config.yaml --image {DEFAULT_NODE_IMAGE} "
        f"--kubeconfig {work}/kubeconfig.yaml --wait 600s"
    ]
    assert yaml.safe_load((work / "kind-config.yaml").read_text())["nodes"][1]["extraMounts"]
    assert sum(c.startswith("docker exec lab-worker bash") for c in calls) == 3  # check, install, configure

    fakes.write_text("")
    os.environ["FAKE_NODE_READY"] = "1"
    try:
        kind_ctl.up(spec)  # a re-run: the cluster and the node set-up exist, nothing is created
    finally:
        del os.environ["FAKE_NODE_READY"]
    calls = fakes.read_text().splitlines()
    assert not any(c.startswith("create") for c in calls)
    assert sum(c.startswith("docker exec") for c in calls) == 1

    assert kind_ctl.down("lab", work) == {"name": "lab", "deleted": True}
    assert f"delete cluster --name lab --kubeconfig {work}/kubeconfig.yaml" in fakes.read_text()
    assert not work.exists()
    fakes.write_text("")
    assert kind_ctl.down("lab", work) == {"name": "lab", "deleted": False}  # already gone
    assert not any(c.startswith("delete") for c in fakes.read_text().splitlines())


def test_up_stops_before_creating_when_the_host_is_not_prepared(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("accept-nvidia-visible-devices-as-volume-mounts = false\n")
    monkeypatch.setattr(
        kind_ctl,
        "host_findings",
        lambda: [kind_ctl.check_volume_mounts_setting(bad.read_text())],
    )
    code = kind_ctl.main(
        ["up", "--name", "lab", "--image", DEFAULT_NODE_IMAGE, "--workdir", str(tmp_path / "w")]
    )
    assert code == 1
    assert not any(c.startswith("create") for c in fakes.read_text().splitlines())


def test_up_refuses_a_reused_cluster_whose_worker_lacks_the_gpu_mount(
    fakes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind cluster of that name made by hand (no lab config): no /dev/null mount at
    /var/run/nvidia-container-devices/all, so the host's runtime hands its worker no GPU."""
    (tmp_path / "clusters").write_text("lab")  # it exists already
    monkeypatch.setenv("FAKE_WORKER_MOUNTS", str(DATA / "kind-worker-no-gpus.mounts.json"))
    with pytest.raises(kind_ctl.PreflightError) as exc:
        kind_ctl.up(kind_ctl.UpSpec("lab", DEFAULT_NODE_IMAGE, tmp_path / "w"))
    assert "reused-worker-gpus" in str(exc.value) and "/var/run/nvidia-container-devices/all" in str(
        exc.value
    )
    assert "kind delete cluster --name lab && make lab" in str(exc.value)
    assert not any(c.startswith("docker exec") for c in fakes.read_text().splitlines())


def test_containerd_is_configured_from_the_file_as_nvkind_settled_on() -> None:
    """NVIDIA/nvkind commit 9f70016 (pkg/nvkind/node.go ConfigureContainerRuntime) moved from
    ``--config-source=command`` to ``file``: ``containerd config dump`` misreports the top-level
    config version and the drop-in made from it is invalid against a version-2 config."""
    from variants.kind import ctl

    assert (
        "nvidia-ctk runtime configure --runtime=containerd --config-source=file"
        in ctl.NODE_CONFIGURE_CONTAINERD
    )
    assert "--config-source=command" not in ctl.NODE_CONFIGURE_CONTAINERD
    assert "systemctl restart containerd" in ctl.NODE_CONFIGURE_CONTAINERD
    argv = ctl.node_setup_argvs("gpu-lab-worker")[1]
    assert argv[:5] == ["docker", "exec", "gpu-lab-worker", "bash", "-euc"]


def test_the_node_toolkit_is_the_chart_s_version_for_all_its_packages() -> None:
    from variants.kind import ctl

    for pkg in (
        "nvidia-container-toolkit",
        "nvidia-container-toolkit-base",
        "libnvidia-container-tools",
        "libnvidia-container1",
    ):
        assert f"{pkg}=1.20.0-1" in ctl.NODE_INSTALL_TOOLKIT
