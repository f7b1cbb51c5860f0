"""kind lifecycle for the lab, with GPUs injected the way NVIDIA's nvkind does it.

Run by the KindCluster component as ``python3 -m variants.kind.ctl up|down|preflight``.
Every command names ``--name <cluster>``; kind writes its kubeconfig entry into the lab's
work directory (``--kubeconfig``), never into ``~/.kube/config``.

How the GPUs get into a kind node (NVIDIA/nvkind README, "Setup"; facts, not its code):

1. On the host, Docker's default runtime is ``nvidia`` (``nvidia-ctk runtime configure
   --runtime=docker --set-as-default``) and the toolkit accepts device requests made as
   volume mounts (``accept-nvidia-visible-devices-as-volume-mounts = true`` in
   ``/etc/nvidia-container-runtime/config.toml``, set with ``nvidia-ctk config --set
   accept-nvidia-visible-devices-as-volume-mounts=true --in-place``). Both are checked
   before anything is created (:func:`host_findings`); the lab does not change the host.
2. The kind config (:func:`render_kind_config`) mounts ``/dev/null`` at
   ``/var/run/nvidia-container-devices/all`` in each worker: the host's runtime reads that
   mount as "all GPUs" and injects the devices and driver libraries into the node.
3. Inside each GPU worker the NVIDIA container toolkit (:data:`NODE_TOOLKIT_VERSION`, the
   chart's) is installed and containerd gets an ``nvidia`` runtime handler (``nvidia-ctk
   runtime configure --runtime=containerd --config-source=file``, runc stays the default),
   so Pods with ``runtimeClassName: nvidia`` get the GPUs. The GPU Operator then runs with
   ``toolkit.enabled=false`` and ``cdi.enabled=false``, its device plugin with
   ``DEVICE_LIST_STRATEGY=envvar``: that runtime reads ``NVIDIA_VISIBLE_DEVICES``, not CDI
   annotations (variants/kind/__init__.py ``device_list_reason``).

``up`` checks, then acts: the host settings, then ``kind create cluster --name P --config F
--image I`` only when ``kind get clusters`` does not list P, then the in-node set-up only on
workers that lack it. It prints one JSON object: ``{"kubeconfig", "kubernetesVersion",
"name", "nodes": [...]}``. ``down`` runs ``kind delete cluster --name P`` and succeeds when
the cluster is already gone. Exit codes: 0 success, 1 failure (cause and first fix), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab import fixes, preflight
from gpulab import run as cmd
from gpulab.errors import GpuLabError
from gpulab.preflight import Finding, PreflightError, check_docker_info
from variants.base import Action, ctl_main

#: The mount the host's NVIDIA runtime reads as a request for every GPU (nvkind).
DEVICES_ALL: Final = "/var/run/nvidia-container-devices/all"
#: The NVIDIA container runtime's configuration on the host.
RUNTIME_CONFIG: Final = Path("/etc/nvidia-container-runtime/config.toml")
VOLUME_MOUNTS_KEY: Final = "accept-nvidia-visible-devices-as-volume-mounts"
CHECK_VOLUME_MOUNTS: Final = "nvidia-volume-mounts"
CHECK_DEFAULT_RUNTIME: Final = "docker-default-runtime"
CONFIG_FILE: Final = "kind-config.yaml"
KUBECONFIG_FILE: Final = "kubeconfig.yaml"
#: kind names nodes ``<cluster>-control-plane``, ``<cluster>-worker``, ``<cluster>-worker2``...
_NODE_RE: Final = re.compile(r"^[a-z0-9]([a-z0-9.-]{0,100}[a-z0-9])?$")


# In-node set-up (run with `docker exec <node> bash -euc`). The node image is Debian-based;
# NVIDIA's apt repository and key are those of the container toolkit's install guide (and of
# NVIDIA/nvkind pkg/nvkind/node.go InstallContainerToolkit).
NODE_HAS_NVIDIA_RUNTIME: Final = (
    "command -v nvidia-container-runtime >/dev/null && "
    "containerd config dump 2>/dev/null | grep -q nvidia-container-runtime"
)
#: The toolkit installed in the node: the chart's own toolkit version (values.yaml
#: ``toolkit.version: v1.20.0``), as a Debian package version (NVIDIA/nvidia-container-toolkit
#: v1.20.0 versions.mk ``PACKAGE_REVISION := 1``: ``1.20.0-1``), for all four packages the
#: toolkit is made of, so the node runs the ``nvidia-ctk`` whose flags the lab was checked
#: against and not whatever the repository's newest is.
NODE_TOOLKIT_VERSION: Final = "1.20.0-1"
NODE_TOOLKIT_PACKAGES: Final = (
    "nvidia-container-toolkit",
    "nvidia-container-toolkit-base",
    "libnvidia-container-tools",
    "libnvidia-container1",
)
NODE_INSTALL_TOOLKIT: Final = f"""
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q curl gpg ca-certificates
curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey \\
  | gpg --batch --yes --dearmor -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list \\
  | sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#' \\
  > /etc/apt/sources.list.d/nvidia-container-toolkit.list
apt-get update -q
apt-get install -y -q {" ".join(f"{p}={NODE_TOOLKIT_VERSION}" for p in NODE_TOOLKIT_PACKAGES)}
"""
# A runtime handler named nvidia; runc stays the default (Pods opt in by runtime class). The
# config is read from the file (--config-source=file), as NVIDIA's nvkind does since commit
# 9f70016: `containerd config dump` misreports the top-level config's version, and the drop-in
# made from it is invalid against the kind node's version-2 /etc/containerd/config.toml.
NODE_CONFIGURE_CONTAINERD: Final = """
nvidia-ctk runtime configure --runtime=containerd --config-source=file
systemctl restart containerd
"""


# --------------------------------------------------------------------------- pure helpers


def render_kind_config(name: str, workers: int = 1) -> str:
    """The ``kind create cluster --config`` file: one control plane, ``workers`` GPU workers.

    Each worker mounts ``/dev/null`` at :data:`DEVICES_ALL`, so the host's NVIDIA runtime
    injects every GPU into it; the control plane gets none (operator pods still schedule
    there, GPU Pods cannot). The node image is given on the command line (``--image``).

    Raises:
        ValueError: ``workers`` < 1.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    gpu_mount = {"hostPath": "/dev/null", "containerPath": DEVICES_ALL}
    doc = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": name,
        "nodes": [
            {"role": "control-plane"},
            *({"role": "worker", "extraMounts": [dict(gpu_mount)]} for _ in range(workers)),
        ],
    }
    header = (
        "# Generated by variants.kind.ctl. The /dev/null mount asks the host's NVIDIA runtime for\n"
        "# all GPUs (needs accept-nvidia-visible-devices-as-volume-mounts = true and Docker's\n"
        "# default runtime nvidia).\n"
    )
    return header + yaml.safe_dump(doc, sort_keys=False)


def create_argv(name: str, config_file: str, image: str, kubeconfig: str, wait_seconds: int) -> list[str]:
    """``kind create cluster`` for the lab (no shell; values were validated by config)."""
    return [
        "kind",
        "create",
        "cluster",
        "--name",
        name,
        "--config",
        config_file,
        "--image",
        image,
        "--kubeconfig",
        kubeconfig,
        "--wait",
        f"{wait_seconds}s",
    ]


def delete_argv(name: str, kubeconfig: str) -> list[str]:
    """``kind delete cluster`` of cluster ``name`` (its kubeconfig entry in the work dir)."""
    return ["kind", "delete", "cluster", "--name", name, "--kubeconfig", kubeconfig]


def get_clusters_argv() -> list[str]:
    """``kind get clusters``: one cluster name a line."""
    return ["kind", "get", "clusters"]


def get_nodes_argv(name: str) -> list[str]:
    """``kind get nodes`` of cluster ``name``: one node container a line."""
    return ["kind", "get", "nodes", "--name", name]


def get_kubeconfig_argv(name: str) -> list[str]:
    """The cluster's kubeconfig (certificates inline), printed, not written anywhere."""
    return ["kind", "get", "kubeconfig", "--name", name]


def cluster_listed(clusters_output: str, name: str) -> bool:
    """True when ``kind get clusters`` printed ``name`` on a line of its own."""
    return name in {line.strip() for line in clusters_output.splitlines()}


def gpu_workers(nodes_output: str, name: str) -> list[str]:
    """The worker nodes of cluster ``name`` in ``kind get nodes`` output (sorted).

    Raises:
        ValueError: a line is not a node name kind would make (it is used in an argv).
    """
    workers = []
    for line in nodes_output.split():
        if not _NODE_RE.match(line):
            raise ValueError(f"unexpected node name {line!r} from kind get nodes")
        if re.fullmatch(re.escape(name) + r"-worker\d*", line):
            workers.append(line)
    return sorted(workers)


def node_exec_argv(node: str, script: str) -> list[str]:
    """Run ``script`` in the kind node container ``node``."""
    return ["docker", "exec", node, "bash", "-euc", script]


def node_setup_argvs(node: str) -> list[list[str]]:
    """The in-node steps, in order: install the toolkit, give containerd the nvidia handler."""
    return [node_exec_argv(node, NODE_INSTALL_TOOLKIT), node_exec_argv(node, NODE_CONFIGURE_CONTAINERD)]


def check_volume_mounts_setting(config_text: str | None) -> Finding:
    """Check ``/etc/nvidia-container-runtime/config.toml`` accepts device requests as mounts.

    ``config_text`` is the file's text, ``None`` when the file is absent (the toolkit is not
    installed). Without ``accept-nvidia-visible-devices-as-volume-mounts = true`` the
    ``/dev/null`` mount of the kind config is ignored and the node gets no GPU.
    """
    check = CHECK_VOLUME_MOUNTS
    if config_text is None:
        return Finding(
            check,
            False,
            f"{RUNTIME_CONFIG} is missing: the NVIDIA container toolkit is not installed on the host",
            "install nvidia-container-toolkit, then " + fixes.docker_volume_mounts(),
        )
    try:
        doc = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError as exc:
        return Finding(
            check, False, f"{RUNTIME_CONFIG} is not valid TOML ({exc})", fixes.docker_volume_mounts()
        )
    value = doc.get(VOLUME_MOUNTS_KEY)
    if value is True:
        return Finding(check, True, f"{VOLUME_MOUNTS_KEY} = true in {RUNTIME_CONFIG}")
    shown = "absent (default false)" if value is None else f"set to {value!r}"
    return Finding(
        check,
        False,
        f"{VOLUME_MOUNTS_KEY} is {shown} in {RUNTIME_CONFIG}: the kind worker's /dev/null mount at "
        f"{DEVICES_ALL} would be ignored and the node would get no GPU",
        fixes.docker_volume_mounts(),
    )


def check_docker_default_runtime(returncode: int | None, info_json: str) -> Finding:
    """Check Docker's default runtime is ``nvidia`` (``docker info --format '{{json .}}'``).

    kind starts its node containers without ``--gpus``; only a default ``nvidia`` runtime
    sees the ``/dev/null`` mount and injects the GPUs. An unreadable answer fails here too
    (:func:`gpulab.preflight.check_docker_info` names the daemon problem).
    """
    check = CHECK_DEFAULT_RUNTIME
    try:
        info = json.loads(info_json) if returncode == 0 and info_json.strip() else None
    except json.JSONDecodeError:
        info = None
    if not isinstance(info, dict):
        return Finding(
            check, False, "docker info gave no answer to read the default runtime from", "start Docker"
        )
    default = info.get("DefaultRuntime")
    if default == "nvidia":
        return Finding(check, True, "Docker's default runtime is nvidia")
    return Finding(
        check,
        False,
        f"Docker's default runtime is {default!r}, not nvidia: kind's node containers would start "
        "without the NVIDIA runtime and get no GPU",
        fixes.docker_default_runtime(),
    )


def host_findings(
    run: cmd.Probe = cmd.probe,
    runtime_config: Path = RUNTIME_CONFIG,
    daemon_json: Path = Path("/etc/docker/daemon.json"),
) -> list[Finding]:
    """Every host check the kind lab needs (passing ones included), in order: the nvidia
    runtime loaded by the Docker daemon, it is the default, the volume-mounts setting."""
    rc, out, err = run(["docker", "info", "--format", "{{json .}}"])
    daemon = daemon_json.read_text(encoding="utf-8") if daemon_json.is_file() else None
    findings = [check_docker_info(rc, out, daemon, stderr=err)]
    if findings[0].ok:
        findings.append(check_docker_default_runtime(rc, out))
    text = runtime_config.read_text(encoding="utf-8") if runtime_config.is_file() else None
    findings.append(check_volume_mounts_setting(text))
    return findings


# --------------------------------------------------------------------------- commands


class KindError(GpuLabError, RuntimeError):
    """A step failed; the message names what and the first fix. (A failed command raises
    :class:`gpulab.run.CommandError`, naming the command, its exit code and stderr.)"""


def _log(msg: str) -> None:
    print(f"[kind_ctl] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class UpSpec:
    """What ``up`` is asked for: cluster ``name``, node ``image``, ``workdir`` for the config
    and kind's kubeconfig, GPU ``workers``, ``timeout`` in seconds."""

    name: str
    image: str
    workdir: Path
    workers: int = 1
    timeout: int = 600


def _server_version(kubeconfig: str) -> str:
    from kubernetes import client

    from gpulab.kube import load_clients

    return str(client.VersionApi(load_clients(kubeconfig)).get_code().git_version)


def up(spec: UpSpec) -> dict[str, Any]:
    """Check the host, create the cluster if needed, set up its GPU workers (module doc)."""
    failed = [f for f in host_findings() if not f.ok]
    if failed:
        raise PreflightError(failed)
    spec.workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig_file = spec.workdir / KUBECONFIG_FILE
    reused = cluster_listed(cmd.check(get_clusters_argv()).stdout, spec.name)
    if reused:
        _log(f"kind cluster {spec.name} exists; not creating it")
    else:
        config_file = spec.workdir / CONFIG_FILE
        config_file.write_text(render_kind_config(spec.name, spec.workers), encoding="utf-8")
        argv = create_argv(spec.name, str(config_file), spec.image, str(kubeconfig_file), spec.timeout)
        _log("$ " + " ".join(argv))
        cmd.check(argv, timeout=spec.timeout + 120)
    workers = gpu_workers(cmd.check(get_nodes_argv(spec.name)).stdout, spec.name)
    if not workers:
        raise KindError(f"kind cluster {spec.name} has no worker node; delete it and run again")
    if reused:  # made by the lab's config? (variants/kind/reuse.py)
        from variants.kind.reuse import mounts_argv, worker_findings

        checks: list[Finding] = []
        for node in workers:
            inspected = cmd.run(mounts_argv(node))
            checks.append(
                worker_findings(spec.name, node, inspected.stdout if inspected.ok else None, DEVICES_ALL)
            )
        failed = [f for f in checks if not f.ok]
        if failed:
            raise PreflightError(failed)
    for node in workers:
        if cmd.run(node_exec_argv(node, NODE_HAS_NVIDIA_RUNTIME)).ok:
            _log(f"{node}: containerd already has the nvidia runtime")
            continue
        _log(f"{node}: installing the NVIDIA container toolkit and the containerd nvidia handler")
        for argv in node_setup_argvs(node):
            cmd.check(argv, timeout=spec.timeout)
    kubeconfig = cmd.check(get_kubeconfig_argv(spec.name)).stdout
    return {
        "kubeconfig": kubeconfig,
        "kubernetesVersion": _server_version(kubeconfig),
        "name": spec.name,
        "nodes": workers,
    }


def down(name: str, workdir: Path) -> dict[str, Any]:
    """Delete the cluster; one that is already gone is success. Removes the work files."""
    kubeconfig_file = workdir / KUBECONFIG_FILE
    if cluster_listed(cmd.check(get_clusters_argv()).stdout, name):
        cmd.check(delete_argv(name, str(kubeconfig_file)))
        existed = True
    else:
        _log(f"kind cluster {name} is already gone")
        existed = False
    for f in (kubeconfig_file, workdir / CONFIG_FILE):
        f.unlink(missing_ok=True)
    if workdir.is_dir() and not any(workdir.iterdir()):
        workdir.rmdir()
    return {"name": name, "deleted": existed}


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; prints one JSON object; exit 0 ok, 1 failure, 2 usage."""
    ap = argparse.ArgumentParser(prog="python3 -m variants.kind.ctl")
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("--name", required=True)
    u.add_argument("--image", required=True)
    u.add_argument("--workdir", required=True, type=Path)
    u.add_argument("--workers", type=int, default=1)
    u.add_argument("--timeout", type=int, default=600)
    d = sub.add_parser("down")
    d.add_argument("--name", required=True)
    d.add_argument("--workdir", required=True, type=Path)
    sub.add_parser("preflight", help="the host checks, as JSON; exit 1 when one fails")
    args = ap.parse_args(argv)
    actions: dict[str, Action] = {
        "up": lambda: (up(UpSpec(args.name, args.image, args.workdir, args.workers, args.timeout)), 0),
        "down": lambda: (down(args.name, args.workdir), 0),
        "preflight": lambda: preflight.report(host_findings()),
    }
    return ctl_main("kind_ctl", actions[args.cmd], (GpuLabError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
