"""Rendering for the simulated cluster: the kwokctl config, the GPU nodes, the Stages, the logs.

Pure helpers: no side effects on import or call beyond reading package data
(``gpulab/host/captures/``, ``variants/sim/stages/``), unit-tested without binaries.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import yaml

from gpulab.core import names, yamlio
from variants.sim.ctl.gpus import NodeGpus

#: Extended resource the NVIDIA device plugin advertises.
GPU_RESOURCE: Final = names.GPU_RESOURCE
#: Annotation on every object this package fakes.
SIMULATED_ANNOTATION: Final = names.SIMULATED_ANNOTATION
DEFAULT_NODE_NAME: Final = "gpu-sim-node"
#: Most simulated GPU nodes one cluster gets (``--nodes``).
MAX_NODES: Final = 8
DEFAULT_LOG_NAMESPACES: Final = (names.WORKLOAD_NAMESPACE,)
DEFAULT_LOG_PODS: Final = (names.SMOKE_POD,)
#: Pods whose log is the vectorAdd sample's (the compute check), in the log namespaces.
COMPUTE_LOG_PODS: Final = (names.COMPUTE_POD,)
#: The vectorAdd sample's output as NVIDIA's docs print it (package data, ``gpulab/host/captures/``).
VECTORADD_CAPTURE: Final = "cuda-vectoradd.txt"
#: Compute containers (``vectoradd-0`` ...) that get a log of their own, listing one GPU of
#: the capture: as many as a simulated node can have GPUs (``simGpus`` <= 8). A fixed number,
#: so the kwokctl config does not change with the GPU count.
COMPUTE_CONTAINER_LOGS: Final = 8
#: First line of every simulated log, so no reader mistakes it for a container's output.
LOG_BANNER: Final = "# gpu-lab simulated: kwok serves this capture; no container ran"
#: nvidia-smi capture (package data under ``gpulab/host/captures/``) per simulated GPU count.
CAPTURES: Final[Mapping[int, str]] = {1: "h200-1gpu", 2: "h200-2gpu"}
#: kwok Stages (package data under ``variants/sim/stages/``), in the order they are listed.
#: A custom Stage list replaces all of kwokctl's defaults, so this is the complete set.
STAGE_FILES: Final = (
    "10-node-initialize.yaml",
    "20-node-heartbeat-with-lease.yaml",
    "30-pod-ready.yaml",
    "35-pod-pull-refused.yaml",
    "40-pod-complete-job.yaml",
    "50-pod-complete-bare.yaml",
    "60-pod-delete.yaml",
)
#: Node allocatable besides the GPUs (a mid-size GPU server).
NODE_CPU: Final = "16"
NODE_MEMORY: Final = "64Gi"
NODE_PODS: Final = "110"
BIND_ADDRESS: Final = "127.0.0.1"
#: The sim control plane's Go programs, by kwokctl's component names (kwok v0.8.0
#: pkg/consts: ComponentEtcd, ComponentKubeApiserver, ...).
GO_COMPONENTS: Final = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok-controller",
)
#: Their garbage collector's settings (the Go runtime's GOGC and GOMEMLIMIT, set per component
#: through kwokctl's ``componentsPatches[].extraEnvs``, which the binary runtime adds to the
#: component's environment: pkg/kwokctl/runtime/binary/cluster_operation.go): collect at 400 %
#: heap growth instead of 100 %, and harder near 1 GiB, so a lab's heap stays bounded.
GO_GC_ENV: Final[Mapping[str, str]] = {"GOGC": "400", "GOMEMLIMIT": "1GiB"}

_NAME_RE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DRIVER_RE: Final = re.compile(r"Driver Version:\s*([0-9][0-9.]*)")
_CUDA_RE: Final = re.compile(r"CUDA Version:\s*([0-9][0-9.]*)")
# A GPU row of the nvidia-smi table: "|   0  NVIDIA H200     On  |   00000000:...".
_GPU_ROW_RE: Final = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(?:On|Off)\s+\|\s+[0-9A-Fa-f]{4,8}:")
_MEMORY_RE: Final = re.compile(r"/\s*(\d+)MiB\s*\|")


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
        # 0 GPUs advertised: the host still has its one GPU (a plugin that never registered).
        return CAPTURES[gpus or 1]
    except KeyError:
        have = ", ".join(str(n) for n in sorted(CAPTURES))
        raise ValueError(f"no nvidia-smi capture for {gpus} GPUs; --gpus must be one of {have}") from None


def load_capture(gpus: int, name: str | None = None) -> str:
    """Text of the packaged ``nvidia-smi`` capture ``name``, default the one for ``gpus`` GPUs
    (see :data:`CAPTURES`).

    Raises:
        ValueError: no capture for that count, or ``name`` is not a capture's directory name.
    """
    if name is not None and not _NAME_RE.match(name):
        raise ValueError(f"capture {name!r} is not a capture name")
    ref = resources.files("gpulab.host").joinpath("captures", name or capture_name(gpus), "nvidia-smi.txt")
    return ref.read_text(encoding="utf-8")


def _listing(name: str) -> list[str] | None:
    """The lines of capture ``name``'s ``nvidia-smi-L.txt``; None when it has none.

    Raises:
        ValueError: ``name`` is not a capture's directory name.
    """
    if not _NAME_RE.match(name):
        raise ValueError(f"capture {name!r} is not a capture name")
    ref = resources.files("gpulab.host").joinpath("captures", name, "nvidia-smi-L.txt")
    return ref.read_text(encoding="utf-8").splitlines() if ref.is_file() else None


def capture_listing(name: str) -> list[str]:
    """The lines of capture ``name``'s ``nvidia-smi -L`` listing (``[]`` when it has none).

    Raises:
        ValueError: ``name`` is not a capture's directory name.
    """
    return _listing(name) or []


def smoke_log(capture: str, name: str, gpus: int | None = None) -> str:
    """The smoke Pod's simulated log: ``capture`` (the plain ``nvidia-smi`` table), then the
    physical GPU lines of the capture's ``nvidia-smi-L.txt`` where it has one, as the Pod's
    ``nvidia-smi && nvidia-smi -L`` prints them (components/smoke.py): the first ``gpus`` of
    them (what the smoke Pod is given: one replica, one MIG device or ``smokeGpus``; None: all),
    so the listing matches the allocation as a real runtime's would. MIG rows are left out:
    a Pod given one MIG device does not list all of them. ``name``: the capture's directory.

    Raises:
        ValueError: ``name`` is not a capture's directory name.
    """
    lines = _listing(name)
    if lines is None:
        return capture
    listed = [line for line in lines if line.startswith("GPU ")]
    listed = listed if gpus is None else listed[: max(gpus, 0)]
    return capture.rstrip("\n") + "\n" + "".join(f"{line}\n" for line in listed)


def load_vectoradd() -> str:
    """Text of the packaged vectorAdd output (:data:`VECTORADD_CAPTURE`), served as the compute
    Pod's log."""
    return resources.files("gpulab.host").joinpath("captures", VECTORADD_CAPTURE).read_text(encoding="utf-8")


def compute_logs(name: str) -> list[str]:
    """The simulated logs of the compute Pod's containers, one per GPU the capture ``name``
    lists (``nvidia-smi-L.txt``), as each container's ``nvidia-smi -L; vectorAdd`` prints them
    (gpulab.kube.compute.COMPUTE_SCRIPT): container ``i`` lists GPU ``i`` only, then the
    vectorAdd output. Under MIG (the capture lists MIG devices) container ``i`` lists MIG
    device ``i`` under its parent GPU. ``[]`` for a capture without a listing.

    Raises:
        ValueError: ``name`` is not a capture's directory name.
    """
    lines = _listing(name) or []
    units: list[list[str]] = []
    parent = ""
    has_mig = any(line.strip().startswith("MIG ") for line in lines)
    for line in lines:
        if line.startswith("GPU "):
            parent = line
            if not has_mig:
                units.append([line])
        elif has_mig and line.strip().startswith("MIG ") and parent:
            units.append([parent, line])
    vectoradd = load_vectoradd().rstrip("\n")
    return ["\n".join([*unit, vectoradd]) + "\n" for unit in units]


def compute_container_log_file(default: Path, index: int) -> Path:
    """Where container ``vectoradd-<index>``'s simulated log lives, beside ``default`` (the log
    of every other container: vectorAdd without a listing)."""
    return default.with_name(f"{default.stem}-{index}{default.suffix}")


def render_compute_logs(default: Path, namespaces: Sequence[str]) -> dict[str, Any]:
    """The kwok ``ClusterLogs`` of the compute Pod: container ``vectoradd-<i>`` reads
    :func:`compute_container_log_file` ``i`` (for ``i`` < :data:`COMPUTE_CONTAINER_LOGS`),
    any other container ``default``. kwok picks the entry that names the container, else the
    one that names none (sigs.k8s.io/kwok pkg/kwok/server/debugging_logs.go findLogInLogs)."""
    doc = render_cluster_logs(default, namespaces, COMPUTE_LOG_PODS, "gpulab-vectoradd")
    own = [
        {
            "containers": [f"{names.COMPUTE_CONTAINER_PREFIX}{i}"],
            "logsFile": str(compute_container_log_file(default, i)),
            "previousLogsFile": str(compute_container_log_file(default, i)),
            "follow": False,
        }
        for i in range(COMPUTE_CONTAINER_LOGS)
    ]
    doc["spec"]["logs"] = [*own, *doc["spec"]["logs"]]
    return doc


def load_stages() -> list[dict[str, Any]]:
    """The kwok Stage objects of :data:`STAGE_FILES`, parsed, in order."""
    stages: list[dict[str, Any]] = []
    base = resources.files("variants.sim").joinpath("stages")
    for name in STAGE_FILES:
        doc = yamlio.load(base.joinpath(name).read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("kind") != "Stage":
            raise ValueError(f"variants/sim/stages/{name} is not a kwok Stage")
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


def render_node_manifest(
    node_name: str, gpus: int, info: CaptureInfo, node: NodeGpus | None = None
) -> dict[str, Any]:
    """The kwok GPU Node, with ``status.capacity``/``allocatable`` including ``nvidia.com/gpu``.

    kwok's node-initialize Stage keeps a status capacity/allocatable that is already set,
    so the values survive. No Hostname address is set: the API server reaches kwok's fake
    kubelet (logs) through the Hostname kwok writes (``localhost``). No taint: the GPU
    Operator's pods must schedule here without tolerations. ``node`` (default: ``gpus``
    whole GPUs) says what the GPU resources and GFD's labels are
    (:class:`variants.sim.ctl.gpus.NodeGpus`: none for 0 GPUs, MIG resources, replicas).

    Raises:
        ValueError: ``gpus`` < 1 without ``node``.
    """
    if node is None and gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {gpus}")
    node = node or NodeGpus(gpus)
    resources_ = {
        "cpu": NODE_CPU,
        "memory": NODE_MEMORY,
        "pods": NODE_PODS,
        **node.resources(),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name,
            "labels": {
                "kubernetes.io/hostname": node_name,
                **node_labels(gpus, info),
                **node.labels(info.product_label),
            },
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


def render_cluster_logs(
    log_file: Path, namespaces: Sequence[str], pods: Sequence[str], name: str = "gpulab-nvidia-smi"
) -> dict[str, Any]:
    """A kwok ``ClusterLogs`` ``name`` serving ``log_file`` for every container of the matching Pods."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterLogs",
        "metadata": {"name": name},
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
    compute_log_file: Path | None = None,
    ports: Mapping[str, int] | None = None,
    extra_logs: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The ``kwokctl create cluster --config`` file: options, the full Stage list, ClusterLogs
    (``log_file`` for the smoke Pods; ``compute_log_file``, when given, for the compute Pod
    :data:`COMPUTE_LOG_PODS` in the same namespaces, each of its first containers from a file
    of its own beside it: :func:`render_compute_logs`; ``extra_logs``: further ClusterLogs,
    the fleet's per-node ones, :mod:`variants.sim.ctl.fleet`).

    Every server binds ``127.0.0.1``; every binary is a local path in ``bin_dir`` (kwokctl
    then downloads nothing). Paths must be absolute: kwok runs in the cluster's work dir.
    ``ports``: the components' ports (kwokctl option -> port, :mod:`variants.sim.ctl.ports`),
    so kwokctl picks none itself.
    """
    for p in (bin_dir, log_file, *([compute_log_file] if compute_log_file else [])):
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
        **dict(sorted((ports or {}).items())),
    }
    config: dict[str, Any] = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": options,
    }
    # The Go garbage collector at GOGC=400, capped by GOMEMLIMIT (:data:`GO_GC_ENV`): a lab's
    # API server spends about a fifth less CPU (measured 2026-12-02, two `make lab` each way),
    # for a larger heap that stays under the cap.
    patches: dict[str, dict[str, Any]] = {
        name: {"name": name, "extraEnvs": [{"name": k, "value": v} for k, v in GO_GC_ENV.items()]}
        for name in GO_COMPONENTS
    }
    # One instance of each: no leader to elect. With election on, kube-controller-manager and
    # kube-scheduler each renew a Lease every 2 s (their --leader-elect-retry-period default),
    # a write through the API server into etcd that is most of an idle cluster's CPU.
    for name in ("kube-controller-manager", "kube-scheduler"):
        patches[name]["extraArgs"] = [{"key": "leader-elect", "value": "false"}]
    # The sim has no kube-proxy, so a Service's ClusterIP routes nowhere: the API server reaches
    # a webhook or an aggregated API (Kueue's, run as a process of the sim:
    # variants/sim/ctl/queues.py) at an endpoint of its EndpointSlices instead, which
    # kube-apiserver v1.36.3 does only with this flag (cmd/kube-apiserver/app/server.go
    # buildServiceResolver: NewEndpointServiceResolver, else NewClusterIPServiceResolver).
    apiserver_args = [{"key": "enable-aggregator-routing", "value": "true"}]
    if apiserver_advertise_address:
        apiserver_args.append({"key": "advertise-address", "value": apiserver_advertise_address})
    patches["kube-apiserver"]["extraArgs"] = apiserver_args
    config["componentsPatches"] = list(patches.values())
    docs: list[Mapping[str, Any]] = [
        config,
        *(load_stages() if stages is None else stages),
        render_cluster_logs(log_file, log_namespaces, log_pods),
        *([render_compute_logs(compute_log_file, log_namespaces)] if compute_log_file else []),
        *extra_logs,
    ]
    header = "# Generated by variants.sim.ctl; every listed Stage replaces kwok's defaults.\n"
    return header + yaml.dump_all(docs, Dumper=_BlockDumper, sort_keys=False, explicit_start=True)


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
