"""Simulated GPU cluster: a real Kubernetes control plane and kwok nodes with ``nvidia.com/gpu``.

``kwokctl --runtime binary`` runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as local processes, all listening on 127.0.0.1
only. The API server, admission, the scheduler's extended-resource accounting and the
controllers are real; the GPU node, container execution and the logs are simulated:

* the node ``gpu-sim-node`` (with ``--nodes M``, also ``gpu-sim-node-2`` ... ``-M``) is
  created with ``status.capacity/allocatable`` holding ``nvidia.com/gpu: N`` each and the
  labels the GPU Operator, NFD and GFD would set; it carries the annotation
  ``gpulab.dev/simulated: "true"``;
* kwok Stages (``variants/sim/stages/*.yaml``) make Pods Running, complete Job Pods and
  bare run-once Pods (exit code 0), and emit an Event whose message says it is simulated;
* ``kubectl logs`` of the smoke Pod serves a real ``nvidia-smi`` capture
  (``gpulab/host/captures/``) through kwok ``ClusterLogs``, first line marked simulated; that of
  the compute Pod (``gpu-compute``) serves the vectorAdd sample's output as NVIDIA's docs
  print it (``gpulab/host/captures/cuda-vectoradd.txt``), first line marked simulated too.

CLI (``python -m variants.sim.ctl``; every diagnostic goes to stderr):

* ``up --name N --workdir DIR [--gpus 1] [--replicas 1] [--mig 1g.18gb=7 --mig-strategy mixed]
  [--capture h200-1gpu-mig] [--nodes 1] [--bin-dir B] [--node-name gpu-sim-node]
  [--log-namespace default]... [--log-pod gpu-smoke]... [--timeout 300]
  [--apiserver-advertise-address IP] [--node-spec NAME=GPUS[/ADVERTISED]]... [--preinstalled]``
  (a fleet of nodes of their own sizes, and the GPU stack found installed:
  :mod:`~variants.sim.ctl.fleet`) prints one JSON object: ``{"kubeconfig",
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

Modules: :mod:`~variants.sim.ctl.render` (the kwokctl config, the nodes, the Stages and the
logs; its pure helpers :func:`render_kwokctl_config`, :func:`render_node_manifest`,
:func:`render_cri_log`, :func:`parse_capture`, ... have no side effects on import or call
beyond reading package data, and are unit-tested without binaries),
:mod:`~variants.sim.ctl.gpus` (what a node advertises: ``nvidia.com/gpu`` x replicas,
nothing for ``--gpus 0``, the MIG resources and GFD's labels),
:mod:`~variants.sim.ctl.process` (binaries, processes, ports, directories),
:mod:`~variants.sim.ctl.cluster` (``up``, ``down``, ``status``) and
:mod:`~variants.sim.ctl.cli`.
"""

from __future__ import annotations

from variants.sim.ctl.cli import main
from variants.sim.ctl.cluster import UpOptions
from variants.sim.ctl.process import (
    REQUIRED_BINARIES,
    Paths,
    PortInUseError,
    SimClusterError,
    Tools,
    _cluster_pids,
    _diagnose_start_failure,
    _listening,
    default_cache_bin_dir,
)
from variants.sim.ctl.render import (
    LOG_BANNER,
    MAX_NODES,
    capture_name,
    load_capture,
    node_names,
    parse_capture,
    render_cri_log,
    render_kwokctl_config,
    render_node_manifest,
    stale_nodes,
)

__all__ = [
    "LOG_BANNER",
    "MAX_NODES",
    "REQUIRED_BINARIES",
    "Paths",
    "PortInUseError",
    "SimClusterError",
    "Tools",
    "UpOptions",
    "_cluster_pids",
    "_diagnose_start_failure",
    "_listening",
    "capture_name",
    "default_cache_bin_dir",
    "load_capture",
    "main",
    "node_names",
    "parse_capture",
    "render_cri_log",
    "render_kwokctl_config",
    "render_node_manifest",
    "stale_nodes",
]
