"""Simulated GPU cluster: a real Kubernetes control plane and kwok nodes with ``nvidia.com/gpu``.

``kwokctl --runtime binary`` runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as local processes, all listening on 127.0.0.1
only. The API server, admission, the scheduler's extended-resource accounting and the
controllers are real; the GPU node, container execution and the logs are simulated:

* the node ``gpu-sim-node`` (with ``--nodes M``, also ``gpu-sim-node-2`` ... ``-M``) is
  created with ``status.capacity/allocatable`` holding ``nvidia.com/gpu: N`` each and the
  labels the GPU Operator, NFD and GFD would set; it carries the annotation
  ``gpulab.dev/simulated: "true"``;
* kwok Stages (``gpulab/sim/stages/*.yaml``) make Pods Running, complete Job Pods and
  bare run-once Pods (exit code 0), and emit an Event whose message says it is simulated;
* ``kubectl logs`` of the smoke Pod serves a real ``nvidia-smi`` capture
  (``gpulab/captures/``) through kwok ``ClusterLogs``, first line marked simulated.

CLI (``python -m gpulab.simcluster``; every diagnostic goes to stderr):

* ``up --name N --workdir DIR [--gpus 1] [--nodes 1] [--bin-dir B] [--node-name gpu-sim-node]
  [--log-namespace default]... [--log-pod gpu-smoke]... [--timeout 300]
  [--apiserver-advertise-address IP]`` prints one JSON object: ``{"kubeconfig",
  "kubernetesVersion", "apiServer", "node" (the first), "nodes", "gpus" (per node),
  "totalGpus", "workdir"}``. Idempotent: a healthy cluster of that name and configuration
  is reused (a new --gpus or --nodes is applied to the nodes and the log in place, extra
  nodes of an earlier up are deleted; other changes recreate it). Creates are serialised
  per user by a lock file, because kwokctl probes ports from 32767 downwards.
* ``down --name N --workdir DIR [--bin-dir B]`` stops every process of the cluster, checks
  that none remains and none of its ports listens, removes DIR; succeeds when already gone.
* ``status --name N --workdir DIR [--bin-dir B]`` prints ``{"name", "workdir", "running",
  ...}``; ``running`` is true when the API server answers ``/readyz``.

Exit codes: 0 success, 1 failure (the message names the cause and the first fix), 2 usage.

The pure helpers (:func:`render_kwokctl_config`, :func:`render_node_manifest`,
:func:`render_cri_log`, :func:`parse_capture`, ...) have no side effects on import or call
beyond reading package data, and are unit-tested without binaries.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

#: Extended resource the NVIDIA device plugin advertises.
GPU_RESOURCE: Final = "nvidia.com/gpu"
#: Annotation on every object this module fakes.
SIMULATED_ANNOTATION: Final = "gpulab.dev/simulated"
DEFAULT_NODE_NAME: Final = "gpu-sim-node"
#: Most simulated GPU nodes one cluster gets (``--nodes``).
MAX_NODES: Final = 8
DEFAULT_LOG_NAMESPACES: Final = ("default",)
DEFAULT_LOG_PODS: Final = ("gpu-smoke",)
#: First line of every simulated log, so no reader mistakes it for a container's output.
LOG_BANNER: Final = "# gpu-lab simulated: kwok serves this capture; no container ran"
#: nvidia-smi capture (package data under ``gpulab/captures/``) per simulated GPU count.
CAPTURES: Final[Mapping[int, str]] = {1: "h200-1gpu", 2: "h200-2gpu"}
#: kwok Stages (package data under ``gpulab/sim/stages/``), in the order they are listed.
#: A custom Stage list replaces all of kwokctl's defaults, so this is the complete set.
STAGE_FILES: Final = (
    "10-node-initialize.yaml",
    "20-node-heartbeat-with-lease.yaml",
    "30-pod-ready.yaml",
    "40-pod-complete-job.yaml",
    "50-pod-complete-bare.yaml",
    "60-pod-delete.yaml",
)
#: Binaries kwokctl runs; all must sit in the bin dir.
REQUIRED_BINARIES: Final = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
    "kwok",
    "kwokctl",
)
#: Node allocatable besides the GPUs (a mid-size GPU server).
NODE_CPU: Final = "16"
NODE_MEMORY: Final = "64Gi"
NODE_PODS: Final = "110"
BIND_ADDRESS: Final = "127.0.0.1"
BUILD_FIX: Final = "run `make toolchain` (or toolchain/sim/build.sh)"
#: Marker file: a work dir holding it was made by this module, so ``down`` may remove it.
MARKER: Final = ".gpulab-simcluster"

_NAME_RE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DRIVER_RE: Final = re.compile(r"Driver Version:\s*([0-9][0-9.]*)")
_CUDA_RE: Final = re.compile(r"CUDA Version:\s*([0-9][0-9.]*)")
# A GPU row of the nvidia-smi table: "|   0  NVIDIA H200     On  |   00000000:...".
_GPU_ROW_RE: Final = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|\s+[0-9A-Fa-f]{4,8}:")
_MEMORY_RE: Final = re.compile(r"/\s*(\d+)MiB\s*\|")


class SimClusterError(RuntimeError):
    """A step failed; ``str()`` names the cause and the first thing to try."""

    def __init__(self, cause: str, fix: str) -> None:
        super().__init__(f"{cause}\n  fix: {fix}")
        self.cause = cause
        self.fix = fix


class PortInUseError(SimClusterError):
    """A component could not listen because its port was taken (often by a concurrent create)."""


# --------------------------------------------------------------------------- pure helpers


@dataclasses.dataclass(frozen=True)
class CaptureInfo:
    """Facts parsed from an ``nvidia-smi`` capture.

    Attributes:
        driver_version: e.g. ``"580.159.04"``.
        cuda_version: newest CUDA the driver supports (header), e.g. ``"13.0"``.
        gpu_names: one name per GPU row, in index order, e.g. ``("NVIDIA H200",)``.
        memory_mib: total memory of GPU 0 in MiB, or ``None`` when not printed.
    """

    driver_version: str
    cuda_version: str
    gpu_names: tuple[str, ...]
    memory_mib: int | None

    @property
    def product_label(self) -> str:
        """GFD's ``nvidia.com/gpu.product`` value: the name with spaces as dashes."""
        return self.gpu_names[0].replace(" ", "-") if self.gpu_names else "unknown"


def parse_capture(text: str) -> CaptureInfo:
    """Parse the header and GPU rows of a plain ``nvidia-smi`` output.

    Raises:
        ValueError: the text has no ``Driver Version:``/``CUDA Version:`` header.
    """
    driver = _DRIVER_RE.search(text)
    cuda = _CUDA_RE.search(text)
    if not driver or not cuda:
        raise ValueError("not an nvidia-smi capture: no 'Driver Version:'/'CUDA Version:' header")
    names: list[str] = []
    memory: int | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        row = _GPU_ROW_RE.match(line)
        if row:
            names.append(row.group(2).strip())
            if memory is None and i + 1 < len(lines):
                mem = _MEMORY_RE.search(lines[i + 1])
                memory = int(mem.group(1)) if mem else None
    return CaptureInfo(driver.group(1), cuda.group(1), tuple(names), memory)


def capture_name(gpus: int) -> str:
    """Name of the capture simulating ``gpus`` GPUs.

    Raises:
        ValueError: no capture for that count (the message lists the counts there are).
    """
    try:
        return CAPTURES[gpus]
    except KeyError:
        have = ", ".join(str(n) for n in sorted(CAPTURES))
        raise ValueError(f"no nvidia-smi capture for {gpus} GPUs; --gpus must be one of {have}") from None


def load_capture(gpus: int) -> str:
    """Text of the packaged ``nvidia-smi`` capture for ``gpus`` GPUs (see :data:`CAPTURES`)."""
    ref = resources.files("gpulab").joinpath("captures", capture_name(gpus), "nvidia-smi.txt")
    return ref.read_text(encoding="utf-8")


def load_stages() -> list[dict[str, Any]]:
    """The kwok Stage objects of :data:`STAGE_FILES`, parsed, in order."""
    stages: list[dict[str, Any]] = []
    base = resources.files("gpulab").joinpath("sim", "stages")
    for name in STAGE_FILES:
        doc = yaml.safe_load(base.joinpath(name).read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("kind") != "Stage":
            raise ValueError(f"gpulab/sim/stages/{name} is not a kwok Stage")
        stages.append(doc)
    return stages


def render_cri_log(capture: str, now: dt.datetime, banner: str = LOG_BANNER) -> str:
    """Render ``banner`` then ``capture`` as a CRI container log (what the kubelet reads).

    Each line is ``<RFC3339Nano UTC> stdout F <text>``; the separator after ``F`` is kept
    for empty lines, because the CRI parser (``k8s.io/cri-client/pkg/logs``) needs it.
    Lines get increasing timestamps 1 ms apart starting at ``now``.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    start = now.astimezone(dt.UTC)
    out: list[str] = []
    for i, line in enumerate([banner, *capture.splitlines()]):
        ts = (start + dt.timedelta(milliseconds=i)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        out.append(f"{ts} stdout F {line}")
    return "\n".join(out) + "\n"


def node_labels(gpus: int, info: CaptureInfo) -> dict[str, str]:
    """Labels the GPU Operator, NFD and GFD would put on a node with ``gpus`` such GPUs."""
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.count": str(gpus),
        "nvidia.com/gpu.product": info.product_label,
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/cuda.driver-version.full": info.driver_version,
        "nvidia.com/cuda.runtime-version.full": info.cuda_version,
    }
    if info.memory_mib is not None:
        labels["nvidia.com/gpu.memory"] = str(info.memory_mib)
    return labels


def render_node_manifest(node_name: str, gpus: int, info: CaptureInfo) -> dict[str, Any]:
    """The kwok GPU Node, with ``status.capacity``/``allocatable`` including ``nvidia.com/gpu``.

    kwok's node-initialize Stage keeps a status capacity/allocatable that is already set,
    so the values survive. No Hostname address is set: the API server reaches kwok's fake
    kubelet (logs) through the Hostname kwok writes (``localhost``). No taint: the GPU
    Operator's pods must schedule here without tolerations.
    """
    if gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    resources_ = {
        "cpu": NODE_CPU,
        "memory": NODE_MEMORY,
        "pods": NODE_PODS,
        GPU_RESOURCE: str(gpus),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name,
            "labels": {"kubernetes.io/hostname": node_name, **node_labels(gpus, info)},
            "annotations": {
                SIMULATED_ANNOTATION: "true",
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": {},
        "status": {
            "capacity": dict(resources_),
            "allocatable": dict(resources_),
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "osImage": "gpu-lab simulated (kwok)",
                "kernelVersion": "simulated",
                "containerRuntimeVersion": "containerd://simulated",
                "kubeletVersion": "simulated",
                "kubeProxyVersion": "",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
        },
    }


def render_cluster_logs(log_file: Path, namespaces: Sequence[str], pods: Sequence[str]) -> dict[str, Any]:
    """A kwok ``ClusterLogs`` serving ``log_file`` for every container of the matching Pods."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": "gpulab-nvidia-smi"},
        "spec": {
            "selector": {"matchNamespaces": list(namespaces), "matchNames": list(pods)},
            # No "containers": the entry is the default for every container of the Pod.
            "logs": [
                {
                    "logsFile": str(log_file),
                    "previousLogsFile": str(log_file),
                    "follow": False,
                }
            ],
        },
    }


class _BlockDumper(yaml.SafeDumper):
    """Dumps multi-line strings (Stage templates) as ``|`` blocks, for a readable config."""


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_BlockDumper.add_representer(str, _str_presenter)


def render_kwokctl_config(
    *,
    kube_version: str,
    bin_dir: Path,
    log_file: Path,
    log_namespaces: Sequence[str] = DEFAULT_LOG_NAMESPACES,
    log_pods: Sequence[str] = DEFAULT_LOG_PODS,
    apiserver_advertise_address: str | None = None,
    stages: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The ``kwokctl create cluster --config`` file: options, the full Stage list, ClusterLogs.

    Every server binds ``127.0.0.1``; every binary is a local path in ``bin_dir`` (kwokctl
    then downloads nothing). Paths must be absolute: kwok runs in the cluster's work dir.
    """
    for p in (bin_dir, log_file):
        if not p.is_absolute():
            raise ValueError(f"path must be absolute: {p}")
    options: dict[str, Any] = {
        "runtime": "binary",
        "kubeVersion": kube_version,
        "bindAddress": BIND_ADDRESS,
        "kubeBinaryPrefix": str(bin_dir),
        "kubectlBinary": str(bin_dir / "kubectl"),
        "etcdBinary": str(bin_dir / "etcd"),
        "kwokControllerBinary": str(bin_dir / "kwok"),
    }
    config: dict[str, Any] = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": options,
    }
    if apiserver_advertise_address:
        config["componentsPatches"] = [
            {
                "name": "kube-apiserver",
                "extraArgs": [{"key": "advertise-address", "value": apiserver_advertise_address}],
            }
        ]
    docs: list[Mapping[str, Any]] = [
        config,
        *(load_stages() if stages is None else stages),
        render_cluster_logs(log_file, log_namespaces, log_pods),
    ]
    header = "# Generated by gpulab.simcluster; every listed Stage replaces kwok's defaults.\n"
    return header + yaml.dump_all(docs, Dumper=_BlockDumper, sort_keys=False, explicit_start=True)


def default_cache_bin_dir(env: Mapping[str, str] | None = None) -> Path:
    """``${GPULAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpu-lab}/sim/bin`` (toolchain/sim/build.sh)."""
    env = os.environ if env is None else env
    cache = env.get("GPULAB_CACHE")
    if not cache:
        xdg = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".cache")
        cache = str(Path(xdg) / "gpu-lab")
    return Path(cache) / "sim" / "bin"


def validate_name(kind: str, value: str) -> str:
    """Return ``value`` if it is a DNS label; raise :class:`ValueError` naming ``kind`` otherwise."""
    if not _NAME_RE.match(value):
        raise ValueError(f"{kind} {value!r} is not a DNS label (lowercase letters, digits, '-', at most 63)")
    return value


def node_names(base: str, count: int) -> list[str]:
    """Names of ``count`` simulated nodes: ``base``, ``base-2``, ... ``base-<count>``.

    Raises:
        ValueError: ``count`` outside 1..:data:`MAX_NODES`, or a name is not a DNS label.
    """
    if not 1 <= count <= MAX_NODES:
        raise ValueError(f"nodes must be 1..{MAX_NODES}, got {count}")
    names = [base, *(f"{base}-{i}" for i in range(2, count + 1))]
    return [validate_name("node name", n) for n in names]


def stale_nodes(existing: Iterable[str], base: str, wanted: Sequence[str]) -> list[str]:
    """Nodes an earlier ``up`` with more ``--nodes`` made (``base-K`` not in ``wanted``), sorted."""
    pattern = re.compile(re.escape(base) + r"(-\d+)?")
    return sorted(n for n in existing if pattern.fullmatch(n) and n not in wanted)


# --------------------------------------------------------------------------- processes


def _log(msg: str) -> None:
    print(f"[simcluster] {msg}", file=sys.stderr, flush=True)


@dataclasses.dataclass(frozen=True)
class Paths:
    """Where a cluster lives. Everything is under ``workdir``; ``down`` removes it all."""

    name: str
    workdir: Path

    @property
    def kwok_workdir(self) -> Path:
        """``KWOK_WORKDIR`` for kwokctl (instead of ``~/.kwok``)."""
        return self.workdir / "kwok"

    @property
    def cluster_dir(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name

    @property
    def config_file(self) -> Path:
        return self.workdir / "kwokctl-config.yaml"

    @property
    def log_file(self) -> Path:
        return self.workdir / "logs" / "nvidia-smi.log"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def marker(self) -> Path:
        return self.workdir / MARKER


@dataclasses.dataclass(frozen=True)
class Tools:
    """The simulated cluster's binaries in one directory."""

    bin_dir: Path

    @classmethod
    def locate(cls, bin_dir: Path | None, required: Iterable[str] = REQUIRED_BINARIES) -> Tools:
        """Find the bin dir: ``bin_dir``, else ``$GPULAB_SIM_BIN_DIR`` (set by
        toolchain/sim/env.sh), else where ``kwokctl`` is on PATH, else the build cache.

        Raises:
            SimClusterError: a binary is missing or not executable.
        """
        if bin_dir is None and os.environ.get("GPULAB_SIM_BIN_DIR"):
            bin_dir = Path(os.environ["GPULAB_SIM_BIN_DIR"])
        if bin_dir is None:
            on_path = shutil.which("kwokctl")
            candidate = Path(on_path).parent if on_path else default_cache_bin_dir()
            if on_path and not all((candidate / b).exists() for b in REQUIRED_BINARIES):
                candidate = default_cache_bin_dir()
            bin_dir = candidate
        bin_dir = bin_dir.expanduser().absolute()
        missing = [b for b in required if not os.access(bin_dir / b, os.X_OK)]
        if missing:
            raise SimClusterError(
                f"simulated-cluster binaries missing in {bin_dir}: {', '.join(missing)}",
                f"{BUILD_FIX}, or pass --bin-dir pointing at the sim bin dir",
            )
        return cls(bin_dir)

    def path(self, name: str) -> str:
        return str(self.bin_dir / name)


def _env(paths: Paths, tools: Tools | None) -> dict[str, str]:
    """Environment for kwokctl/kubectl: our work dir, our binaries first on PATH.

    Every inherited ``KWOK_*`` variable is dropped: kwokctl lets them override the config
    (e.g. ``KWOK_KUBE_VERSION``, ``KWOK_RUNTIME``), and this cluster must be what we render.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("KWOK_")}
    env["KWOK_WORKDIR"] = str(paths.kwok_workdir)
    if tools is not None:
        env["PATH"] = os.pathsep.join([str(tools.bin_dir), env.get("PATH", "")])
    # kubectl must never read or write the user's ~/.kube (config, discovery cache).
    env["KUBECONFIG"] = str(paths.kubeconfig)
    env["KUBECACHEDIR"] = str(paths.workdir / "kube-cache")
    return env


def _run(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    timeout: float,
    input_text: str | None = None,
    capture: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv``; its output is captured, or with ``capture=False`` passed to our stderr.

    Our stdout carries only the final JSON, so a child never writes to it.
    """
    passthrough = not capture and _has_fileno(sys.stderr)
    proc = subprocess.run(
        list(argv),
        env=dict(env),
        input=input_text,
        stdin=None if input_text is not None else subprocess.DEVNULL,
        stdout=sys.stderr if passthrough else subprocess.PIPE,
        stderr=sys.stderr if passthrough else subprocess.PIPE,
        text=True,
        timeout=timeout,
        check=False,
    )
    if not capture and not passthrough:
        sys.stderr.write(proc.stdout + proc.stderr)
    return proc


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _kubectl(
    tools: Tools,
    paths: Paths,
    args: Sequence[str],
    *,
    timeout: float = 30,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    argv = [
        tools.path("kubectl"),
        "--kubeconfig",
        str(paths.kubeconfig),
        "--request-timeout=10s",
        *args,
    ]
    return _run(argv, _env(paths, tools), timeout=timeout, input_text=input_text)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + t for t in text[-lines:]) or "    (empty)"


def _dead_components(paths: Paths) -> list[str]:
    """Components kwokctl started (a pid file exists) whose process has exited."""
    pid_dir = paths.cluster_dir / "pids"
    dead: list[str] = []
    for f in sorted(pid_dir.glob("*.pid")) if pid_dir.is_dir() else []:
        try:
            pid = int(f.read_text().strip())
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid):
            dead.append(f.stem)
    return dead


def _diagnose_start_failure(paths: Paths, dead: Sequence[str] = ()) -> SimClusterError:
    """Turn the component logs of a cluster that did not come up into a cause and a fix.

    The logs are first copied to ``<workdir>/failed-start-logs/``, which survives the
    clean-up of the cluster dir, so the paths in the message stay readable.
    """
    logs = paths.workdir / "failed-start-logs"
    shutil.rmtree(logs, ignore_errors=True)
    if (paths.cluster_dir / "logs").is_dir():
        shutil.copytree(paths.cluster_dir / "logs", logs)
    in_use = re.compile(r"address already in use", re.IGNORECASE)
    for component in (
        "etcd",
        "kube-apiserver",
        "kwok-controller",
        "kube-controller-manager",
        "kube-scheduler",
    ):
        log = logs / f"{component}.log"
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        if in_use.search(text):
            m = re.search(
                r"(127\.0\.0\.1|0\.0\.0\.0|\[::\]):(\d+)[^\n]*address already in use",
                text,
            )
            port = f" port {m.group(2)}" if m else " a port"
            return PortInUseError(
                f"{component} could not listen:{port} is already in use (log {log}):\n{_tail(log)}",
                "stop the process holding that port (`ss -ltnp`), or run `up` again: kwokctl "
                "picks new random ports for a new cluster",
            )
    apiserver_log = logs / "kube-apiserver.log"
    text = apiserver_log.read_text(encoding="utf-8", errors="replace") if apiserver_log.exists() else ""
    if re.search(r"no default routes|suitable network address", text, re.IGNORECASE):
        return SimClusterError(
            "kube-apiserver found no address to advertise (host has no default route); "
            f"log {apiserver_log}:\n{_tail(apiserver_log)}",
            "pass --apiserver-advertise-address <a non-loopback IP of this host>",
        )
    down_cmd = f"`python -m gpulab.simcluster down --name {paths.name} --workdir {paths.workdir}`"
    first = next((c for c in ("etcd", "kube-apiserver") if c in dead), dead[0] if dead else None)
    if first is not None:
        log = logs / f"{first}.log"
        return SimClusterError(
            f"{first} exited during start-up (exited: {', '.join(dead)}); last lines of {log}:\n{_tail(log)}",
            f"fix the cause the log names, then {down_cmd} and `up` again",
        )
    return SimClusterError(
        f"the API server did not become ready; last lines of {apiserver_log}:\n"
        f"{_tail(apiserver_log)}\n  etcd ({logs / 'etcd.log'}):\n{_tail(logs / 'etcd.log', 5)}",
        f"read the logs above; then {down_cmd} and `up` again",
    )


def _pid_alive(pid: int) -> bool:
    """True when ``pid`` runs and is not a zombie (an exited child nobody reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # Field 3 (after the parenthesised command name) is the state.
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cluster_pids(paths: Paths) -> set[int]:
    """Live processes of this cluster: its pid files, plus any process whose command line
    names the cluster dir (kwokctl passes every component paths inside it)."""
    pids: set[int] = set()
    pid_dir = paths.cluster_dir / "pids"
    if pid_dir.is_dir():
        for f in pid_dir.glob("*.pid"):
            try:
                pids.add(int(f.read_text().strip()))
            except (OSError, ValueError):
                continue
    marker = str(paths.cluster_dir) + os.sep
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and marker in _cmdline(int(entry.name)):
            pids.add(int(entry.name))
    pids.discard(os.getpid())
    # A pid from a stale file may belong to an unrelated process now: keep only ours.
    return {p for p in pids if _pid_alive(p) and str(paths.cluster_dir) in _cmdline(p)}


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _listening() -> dict[str, int]:
    """Listening TCP sockets of this host: inode -> port (from /proc/net/tcp and tcp6)."""
    result: dict[str, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            if len(f) > 9 and f[3] == "0A":  # TCP_LISTEN
                result[f[9]] = int(f[1].rsplit(":", 1)[1], 16)
    return result


def _ports_of(pids: Iterable[int]) -> set[int]:
    listening = _listening()
    ports: set[int] = set()
    for pid in pids:
        ports |= {listening[i] for i in _socket_inodes(pid) if i in listening}
    return ports


def _stop_pids(pids: set[int], grace: float = 10.0) -> None:
    """SIGTERM each pid, then SIGKILL what is left after ``grace`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if _pid_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_pid_alive(p) for p in pids):
            time.sleep(0.2)
        if not any(_pid_alive(p) for p in pids):
            return


# --------------------------------------------------------------------------- cluster


@dataclasses.dataclass(frozen=True)
class UpOptions:
    """Validated inputs of :func:`up` (see the module docstring for the CLI flags)."""

    name: str
    workdir: Path
    gpus: int = 1
    bin_dir: Path | None = None
    node_name: str = DEFAULT_NODE_NAME
    nodes: int = 1
    log_namespaces: tuple[str, ...] = DEFAULT_LOG_NAMESPACES
    log_pods: tuple[str, ...] = DEFAULT_LOG_PODS
    timeout: float = 300.0
    apiserver_advertise_address: str | None = None

    def __post_init__(self) -> None:
        validate_name("cluster name", self.name)
        validate_name("node name", self.node_name)
        node_names(self.node_name, self.nodes)
        capture_name(self.gpus)
        if not self.log_namespaces or not self.log_pods:
            raise ValueError("--log-namespace and --log-pod need at least one value each")
        for ns in self.log_namespaces:
            validate_name("log namespace", ns)
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout}")


def kube_version_of(tools: Tools) -> str:
    """The stamped version of the kube-apiserver binary, e.g. ``"v1.36.3"``.

    Raises:
        SimClusterError: the binary is unstamped (``v0.0.0``) or does not run.
    """
    proc = _run([tools.path("kube-apiserver"), "--version"], {**os.environ}, timeout=60)
    m = re.search(r"Kubernetes (v\d+\.\d+\.\d+\S*)", proc.stdout + proc.stderr)
    if proc.returncode != 0 or not m:
        raise SimClusterError(
            f"`kube-apiserver --version` failed (exit {proc.returncode}): "
            f"{(proc.stdout + proc.stderr).strip()[:300]}",
            BUILD_FIX,
        )
    if m.group(1).startswith("v0.0.0"):
        raise SimClusterError(
            f"kube-apiserver in {tools.bin_dir} is not version-stamped ({m.group(1)}); "
            "Helm would reject charts",
            BUILD_FIX,
        )
    return m.group(1)


def _api_ready(tools: Tools, paths: Paths) -> bool:
    if not paths.kubeconfig.exists():
        return False
    proc = _kubectl(tools, paths, ["get", "--raw", "/readyz"], timeout=20)
    return proc.returncode == 0 and proc.stdout.strip() == "ok"


def _write_kubeconfig(tools: Tools, paths: Paths) -> str:
    proc = _run(
        [tools.path("kwokctl"), "--name", paths.name, "get", "kubeconfig"],
        _env(paths, tools),
        timeout=60,
    )
    if proc.returncode != 0 or "apiVersion" not in proc.stdout:
        raise SimClusterError(
            f"`kwokctl get kubeconfig` failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}",
            f"run `python -m gpulab.simcluster down --name {paths.name} --workdir {paths.workdir}` "
            "and `up` again",
        )
    paths.kubeconfig.touch(mode=0o600, exist_ok=True)
    paths.kubeconfig.write_text(proc.stdout, encoding="utf-8")
    return proc.stdout


def _api_server_of(kubeconfig: str) -> str:
    doc = yaml.safe_load(kubeconfig)
    return str(doc["clusters"][0]["cluster"]["server"])


def _server_version(tools: Tools, paths: Paths) -> str:
    proc = _kubectl(tools, paths, ["get", "--raw", "/version"])
    if proc.returncode != 0:
        raise SimClusterError(f"GET /version failed: {proc.stderr.strip()}", "check the API server log")
    return str(json.loads(proc.stdout)["gitVersion"])


def _config_for(opts: UpOptions, tools: Tools, paths: Paths, kube_version: str) -> str:
    return render_kwokctl_config(
        kube_version=kube_version,
        bin_dir=tools.bin_dir,
        log_file=paths.log_file,
        log_namespaces=opts.log_namespaces,
        log_pods=opts.log_pods,
        apiserver_advertise_address=opts.apiserver_advertise_address,
    )


#: Attempts of ``kwokctl create cluster`` when a port was taken under it.
CREATE_ATTEMPTS: Final = 3


@contextlib.contextmanager
def _create_lock() -> Iterator[None]:
    """Serialise cluster creation among this user's processes.

    kwokctl picks its ports by probing downwards from 32767, so two concurrent creates
    choose the same ports and one loses. Holding this lock until the components listen
    makes the next create see those ports taken and pick others.
    """
    path = Path(tempfile.gettempdir()) / f"gpulab-simcluster-{os.getuid()}.lock"
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _create_cluster(opts: UpOptions, tools: Tools, paths: Paths, kube_version: str) -> None:
    paths.config_file.write_text(_config_for(opts, tools, paths, kube_version), encoding="utf-8")
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            with _create_lock():
                _create_once(opts, tools, paths, kube_version)
            return
        except PortInUseError as e:
            if attempt == CREATE_ATTEMPTS:
                raise
            _log(f"{e.cause.splitlines()[0]}; retrying ({attempt}/{CREATE_ATTEMPTS - 1})")
            time.sleep(random.uniform(0.5, 2.0))


def _create_once(opts: UpOptions, tools: Tools, paths: Paths, kube_version: str) -> None:
    wait = max(30, int(opts.timeout))
    argv = [
        tools.path("kwokctl"),
        "--name",
        opts.name,
        "create",
        "cluster",
        "--runtime",
        "binary",
        "--config",
        str(paths.config_file),
        "--kubeconfig",
        "",  # never add a context to ~/.kube/config
        "--wait",
        f"{wait}s",
    ]
    _log(
        f"creating cluster {opts.name!r} in {paths.workdir} (kube {kube_version}, "
        f"{opts.nodes} node(s) x {opts.gpus} GPU)"
    )
    start = time.monotonic()
    out = sys.stderr if _has_fileno(sys.stderr) else subprocess.DEVNULL
    # Popen, not run: kwokctl waits up to 2 min for an API server that already exited,
    # so a component that dies is detected here and reported at once.
    kwokctl = subprocess.Popen(argv, env=_env(paths, tools), stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    deadline = start + wait + 120
    dead: list[str] = []
    while kwokctl.poll() is None:
        dead = _dead_components(paths)
        if dead or time.monotonic() > deadline:
            kwokctl.terminate()
            try:
                kwokctl.wait(10)
            except subprocess.TimeoutExpired:
                kwokctl.kill()
                kwokctl.wait()
            break
        time.sleep(0.5)
    if kwokctl.returncode != 0 or dead:
        err = _diagnose_start_failure(paths, dead)
        why = f"{', '.join(dead)} exited" if dead else f"kwokctl exited {kwokctl.returncode}"
        _log(f"cluster did not start ({why}); stopping what did")
        _teardown(paths, tools, remove_workdir=False)
        raise err
    # kwokctl only logs a failed --wait; check readiness ourselves.
    _write_kubeconfig(tools, paths)
    deadline = time.monotonic() + 60
    while not _api_ready(tools, paths):
        if time.monotonic() > deadline:
            err = _diagnose_start_failure(paths, _dead_components(paths))
            _teardown(paths, tools, remove_workdir=False)
            raise err
        time.sleep(1)
    _log(f"control plane ready in {time.monotonic() - start:.1f}s")


def _ensure_node(opts: UpOptions, tools: Tools, paths: Paths, info: CaptureInfo, node_name: str) -> None:
    """Create or update one GPU node; its status capacity/allocatable are patched too,
    because an existing node keeps its status on apply."""
    manifest = render_node_manifest(node_name, opts.gpus, info)
    status = {"status": {k: manifest["status"][k] for k in ("capacity", "allocatable")}}
    proc = _kubectl(
        tools,
        paths,
        ["apply", "--server-side", "--force-conflicts", "-f", "-"],
        input_text=json.dumps(manifest),
    )
    if proc.returncode != 0:
        raise SimClusterError(
            f"creating node {node_name} failed: {proc.stderr.strip()}",
            "check the API server log",
        )
    # Labels that a previous `up` with another GPU count set are replaced by apply; the
    # status is a subresource, so it is patched explicitly.
    proc = _kubectl(
        tools,
        paths,
        [
            "patch",
            "node",
            node_name,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps(status),
        ],
    )
    if proc.returncode != 0:
        raise SimClusterError(
            f"patching node {node_name} status failed: {proc.stderr.strip()}",
            "check the API server log",
        )


def _node_state(tools: Tools, paths: Paths, node_name: str) -> tuple[bool, str | None]:
    """(Ready, allocatable nvidia.com/gpu) of the node, or (False, None) when absent."""
    proc = _kubectl(tools, paths, ["get", "node", node_name, "-o", "json"])
    if proc.returncode != 0:
        return False, None
    node = json.loads(proc.stdout)
    conds = node.get("status", {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
    return ready, node.get("status", {}).get("allocatable", {}).get(GPU_RESOURCE)


def _remove_stale_nodes(opts: UpOptions, tools: Tools, paths: Paths, wanted: Sequence[str]) -> None:
    """Delete the nodes an earlier ``up`` with more ``--nodes`` created."""
    proc = _kubectl(tools, paths, ["get", "nodes", "-o", "name"])
    existing = [line.removeprefix("node/") for line in proc.stdout.split()] if proc.returncode == 0 else []
    for name in stale_nodes(existing, opts.node_name, wanted):
        _log(f"deleting node {name} (not among the {len(wanted)} asked for)")
        _kubectl(tools, paths, ["delete", "node", name, "--wait=false"])


def _wait_usable(opts: UpOptions, tools: Tools, paths: Paths, names: Sequence[str]) -> None:
    """Wait until every node is Ready with the GPUs and Pods can be created in every log namespace."""
    deadline = time.monotonic() + opts.timeout
    want = str(opts.gpus)
    pending = list(names)
    while True:
        ready, gpus = False, None
        while pending:
            ready, gpus = _node_state(tools, paths, pending[0])
            if not (ready and gpus == want):
                break
            pending.pop(0)
        sa = _kubectl(
            tools,
            paths,
            ["get", "serviceaccount", "default", "-n", "default", "-o", "name"],
        )
        if not pending and sa.returncode == 0:
            return
        if time.monotonic() > deadline:
            kwok_log = paths.cluster_dir / "logs" / "kwok-controller.log"
            node = pending[0] if pending else names[-1]
            raise SimClusterError(
                f"node {node} not usable after {opts.timeout:.0f}s (Ready={ready}, "
                f"allocatable {GPU_RESOURCE}={gpus!r}, want {want}; default ServiceAccount "
                f"{'present' if sa.returncode == 0 else 'missing'}); kwok log {kwok_log}:\n{_tail(kwok_log)}",
                "check the kwok-controller and kube-controller-manager logs in that directory",
            )
        time.sleep(0.5)


def up(opts: UpOptions) -> dict[str, Any]:
    """Bring the cluster up (or reuse a healthy one) and return the JSON result.

    Returns:
        ``{"kubeconfig": str (flattened), "kubernetesVersion": "v1.36.3",
        "apiServer": "https://127.0.0.1:PORT", "node": str (the first), "nodes": [str],
        "gpus": int (per node), "totalGpus": int, "workdir": str}``

    Raises:
        SimClusterError: with the cause and the first fix.
    """
    tools = Tools.locate(opts.bin_dir)
    paths = Paths(opts.name, opts.workdir.expanduser().absolute())
    kube_version = kube_version_of(tools)
    capture = load_capture(opts.gpus)
    info = parse_capture(capture)

    if paths.workdir.exists() and not paths.marker.exists() and any(paths.workdir.iterdir()):
        raise SimClusterError(
            f"work dir {paths.workdir} is not empty and was not made by gpulab.simcluster",
            "pass an empty or new --workdir (down removes the whole directory)",
        )
    paths.workdir.mkdir(parents=True, exist_ok=True)
    paths.marker.write_text(json.dumps({"name": opts.name}) + "\n", encoding="utf-8")
    paths.log_file.parent.mkdir(parents=True, exist_ok=True)
    # Rewritten on every up: the capture follows --gpus, and kwok reads the file per request.
    paths.log_file.write_text(render_cri_log(capture, dt.datetime.now(dt.UTC)), encoding="utf-8")

    reuse = False
    if paths.cluster_dir.exists():
        # The GPU count is not part of the kwokctl config (node and log file are updated in
        # place); anything else that differs (binaries, version, log selectors, Stages)
        # needs a new cluster.
        old = paths.config_file.read_text(encoding="utf-8") if paths.config_file.exists() else ""
        same_config = old == _config_for(opts, tools, paths, kube_version)
        try:
            _write_kubeconfig(tools, paths)
            healthy = _api_ready(tools, paths) and bool(_cluster_pids(paths))
        except SimClusterError:
            healthy = False
        reuse = healthy and same_config
        if reuse:
            _log(f"cluster {opts.name!r} is already running; reusing it")
        else:
            why = "its configuration changed" if healthy else "it is not healthy"
            _log(f"cluster {opts.name!r} exists but {why}; recreating it")
            _teardown(paths, tools, remove_workdir=False)
    if not reuse:
        _create_cluster(opts, tools, paths, kube_version)

    names = node_names(opts.node_name, opts.nodes)
    for node in names:
        _ensure_node(opts, tools, paths, info, node)
    _remove_stale_nodes(opts, tools, paths, names)
    _wait_usable(opts, tools, paths, names)
    # A component that lost a port race can exit after the API server answered; then a
    # stranger (e.g. another cluster's kwok) may be serving this node's kubelet endpoint.
    dead = _dead_components(paths)
    if dead:
        err = _diagnose_start_failure(paths, dead)
        _teardown(paths, tools, remove_workdir=False)
        raise err
    kubeconfig = paths.kubeconfig.read_text(encoding="utf-8")
    return {
        "kubeconfig": kubeconfig,
        "kubernetesVersion": _server_version(tools, paths),
        "apiServer": _api_server_of(kubeconfig),
        "node": names[0],
        "nodes": names,
        "gpus": opts.gpus,
        "totalGpus": opts.gpus * len(names),
        "workdir": str(paths.workdir),
    }


def _teardown(paths: Paths, tools: Tools | None, *, remove_workdir: bool) -> None:
    """Stop every process of the cluster, verify it, and remove its files.

    Raises:
        SimClusterError: a process or a listening port of the cluster survived.
    """
    pids = _cluster_pids(paths)
    ports = _ports_of(pids)
    if paths.cluster_dir.exists() and tools is not None:
        proc = _run(
            [tools.path("kwokctl"), "--name", paths.name, "delete", "cluster"],
            _env(paths, tools),
            timeout=120,
            capture=False,
        )
        if proc.returncode != 0:
            _log(f"kwokctl delete cluster exited {proc.returncode}; stopping the processes directly")
    left = _cluster_pids(paths) | {p for p in pids if _pid_alive(p)}
    if left:
        _log(f"stopping leftover processes {sorted(left)}")
        _stop_pids(left)
    still = sorted(p for p in left if _pid_alive(p))
    if still:
        raise SimClusterError(
            f"processes of cluster {paths.name!r} survived SIGKILL: {still}",
            f"inspect them with `ps -o pid,stat,cmd -p {','.join(map(str, still))}`",
        )
    deadline = time.monotonic() + 10
    while True:
        busy = sorted(ports & set(_listening().values()))
        if not busy or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if busy:
        raise SimClusterError(
            f"ports of cluster {paths.name!r} still listening after its processes stopped: {busy}",
            "find the owner with `ss -ltnp` and stop it",
        )
    if remove_workdir:
        if paths.marker.exists() or (paths.workdir.exists() and not any(paths.workdir.iterdir())):
            shutil.rmtree(paths.workdir, ignore_errors=False)
        elif paths.workdir.exists():
            # Not ours as a whole: remove only what up creates.
            for p in (paths.kwok_workdir, paths.log_file.parent):
                shutil.rmtree(p, ignore_errors=True)
            for f in (paths.config_file, paths.kubeconfig):
                f.unlink(missing_ok=True)
    elif paths.kwok_workdir.exists():
        shutil.rmtree(paths.kwok_workdir)


def down(name: str, workdir: Path, bin_dir: Path | None = None) -> dict[str, Any]:
    """Stop the cluster and remove ``workdir``; a cluster that is already gone is success.

    Works without the binaries too (the processes are found from their pid files and
    command lines), so a cleared cache does not leave a cluster running.
    """
    validate_name("cluster name", name)
    paths = Paths(name, workdir.expanduser().absolute())
    try:
        tools: Tools | None = Tools.locate(bin_dir, required=("kwokctl",))
    except SimClusterError as e:
        _log(f"{e.cause}; stopping the processes without kwokctl")
        tools = None
    existed = paths.workdir.exists()
    _teardown(paths, tools, remove_workdir=True)
    _log(f"cluster {name!r} is down; {paths.workdir} {'removed' if existed else 'was already absent'}")
    return {"name": name, "workdir": str(paths.workdir), "running": False}


def status(name: str, workdir: Path, bin_dir: Path | None = None) -> dict[str, Any]:
    """``{"name", "workdir", "running": bool, "pids": [...]}`` plus ``apiServer`` and
    ``node``/``gpus`` (allocatable) when running."""
    validate_name("cluster name", name)
    paths = Paths(name, workdir.expanduser().absolute())
    pids = sorted(_cluster_pids(paths))
    result: dict[str, Any] = {
        "name": name,
        "workdir": str(paths.workdir),
        "running": False,
        "pids": pids,
    }
    if not pids or not paths.kubeconfig.exists():
        return result
    tools = Tools.locate(bin_dir, required=("kubectl",))
    if _api_ready(tools, paths):
        result["running"] = True
        result["apiServer"] = _api_server_of(paths.kubeconfig.read_text(encoding="utf-8"))
    return result


# --------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gpulab.simcluster",
        description="Simulated GPU cluster: a real Kubernetes control plane and one kwok GPU node.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--name", required=True, help="cluster name (a DNS label)")
        sp.add_argument(
            "--workdir",
            required=True,
            type=Path,
            help="directory holding everything of the cluster",
        )
        sp.add_argument(
            "--bin-dir",
            type=Path,
            default=None,
            help="sim binaries (default: $GPULAB_SIM_BIN_DIR, else the dir of kwokctl on "
            "PATH, else the toolchain cache)",
        )

    sp_up = sub.add_parser("up", help="create the cluster (or reuse it) and print its JSON")
    common(sp_up)
    sp_up.add_argument(
        "--gpus",
        type=int,
        default=1,
        help=f"nvidia.com/gpu of the node, one of {sorted(CAPTURES)}",
    )
    sp_up.add_argument("--node-name", default=DEFAULT_NODE_NAME, help="name of the (first) node")
    sp_up.add_argument(
        "--nodes",
        type=int,
        default=1,
        help=f"simulated GPU nodes, 1..{MAX_NODES}; named NODE_NAME, NODE_NAME-2, ... (each --gpus)",
    )
    sp_up.add_argument(
        "--log-namespace",
        action="append",
        default=None,
        help="namespace of Pods whose logs serve the capture (repeatable; default: default)",
    )
    sp_up.add_argument(
        "--log-pod",
        action="append",
        default=None,
        help="name of Pods whose logs serve the capture (repeatable; default: gpu-smoke)",
    )
    sp_up.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the cluster")
    sp_up.add_argument(
        "--apiserver-advertise-address",
        default=None,
        help="only for hosts without a default route: an IP the API server advertises",
    )
    common(sub.add_parser("down", help="stop the cluster and remove the work dir"))
    common(sub.add_parser("status", help="print whether the cluster is running"))
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 ok, 1 failure, 2 usage)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "up":
            try:
                opts = UpOptions(
                    name=args.name,
                    workdir=args.workdir,
                    gpus=args.gpus,
                    bin_dir=args.bin_dir,
                    node_name=args.node_name,
                    nodes=args.nodes,
                    log_namespaces=tuple(args.log_namespace or DEFAULT_LOG_NAMESPACES),
                    log_pods=tuple(args.log_pod or DEFAULT_LOG_PODS),
                    timeout=args.timeout,
                    apiserver_advertise_address=args.apiserver_advertise_address,
                )
            except ValueError as e:
                print(f"simcluster: {e}", file=sys.stderr)
                return 2
            result = up(opts)
        elif args.command == "down":
            result = down(args.name, args.workdir, args.bin_dir)
        else:
            result = status(args.name, args.workdir, args.bin_dir)
    except ValueError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    except SimClusterError as e:
        print(f"simcluster: error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
