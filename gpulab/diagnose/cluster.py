"""The cluster diagnosis: every check over one cluster state, sorted along the dependency chain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.daemonsets import _daemonset_diagnoses
from gpulab.diagnose.fields import _creation, _name, _ns
from gpulab.diagnose.mig import _mig_diagnoses
from gpulab.diagnose.namespaces import _namespace_diagnoses
from gpulab.diagnose.nodes import _allocatable_diagnoses, _node_diagnoses
from gpulab.diagnose.pods import _pod_diagnoses
from gpulab.diagnose.record import DEFAULT_PROFILE, GPU_RESOURCE, Diagnosis, Json
from gpulab.diagnose.workloads import condition_diagnoses


@dataclass(frozen=True)
class _Ranked:
    rank: int
    seq: int
    diag: Diagnosis


def diagnose_cluster(
    *,
    pods: Sequence[Json],
    events: Sequence[Json],
    daemonsets: Sequence[Json],
    nodes: Sequence[Json],
    logs: Mapping[str, str] | None = None,
    expected_gpus: int | None = None,
    host_max_cuda: str | None = None,
    profile: str = DEFAULT_PROFILE,
    mig_strategy: str = "none",
    expected_mig: Mapping[str, int] | None = None,
    namespaces: Sequence[Json] = (),
    now: datetime | None = None,
    gpu_resource: str = GPU_RESOURCE,
    device_plugin: tuple[str, str] | None = None,
    workloads: Sequence[Json] = (),
    node_command: str | None = None,
) -> list[Diagnosis]:
    """Diagnose the lab's cluster state; return findings, the one to fix first first.

    Args:
        pods, events, daemonsets, nodes: ``items`` of ``kubectl get ... -o json`` (any
            namespaces; events of kind Pod and DaemonSet are used).
        logs: recent log text per ``"namespace/pod/container"``; the last non-empty line is
            quoted, and the device plugin's and DCGM exporter's logs are searched for known
            messages.
        expected_gpus: GPUs the nodes should advertise (host GPUs x time-slicing replicas);
            ``None`` skips the count check.
        host_max_cuda: newest CUDA ``"X.Y"`` the host driver supports (nvidia-smi header),
            used when a start error gives no maximum.
        profile: minikube profile named in the fix commands.
        mig_strategy: ``none``, ``single`` or ``mixed`` (:mod:`gpulab.config.mig`); under ``mixed``
            the nodes' ``nvidia.com/mig-*`` resources are checked against ``expected_mig``
            (``{"nvidia.com/mig-1g.18gb": 7}``, None: some > 0) instead of ``nvidia.com/gpu``.
        namespaces: ``kubectl get ns -o json`` items; those ``Terminating`` are diagnosed
            (:mod:`gpulab.diagnose.namespaces`).
        now: when the state was read (aware datetime; default: now, UTC), for how long an
            init container or a namespace has been stuck.
        gpu_resource: the whole-GPU resource counted (``nvidia.com/gpu``, or
            ``nvidia.com/gpu.shared`` under time-slicing's rename).
        device_plugin: ``(namespace, DaemonSet)`` of the device plugin the gate waits for;
            None: the operator's (or minikube addon's) ``nvidia-device-plugin*`` DaemonSet.
        workloads: Deployments, ReplicaSets and the ClusterPolicy (each with its ``kind``),
            whose conditions :mod:`gpulab.diagnose.workloads` reads.
        node_command: how a fix runs a command on the GPU node, the variant's template of
            ``{cmd}`` (gpulab.core.fixes.on_node); None: the minikube node of ``profile``.

    Returns:
        Diagnoses ordered along the dependency chain (:mod:`gpulab.diagnose`), blocking before
        non-blocking, duplicates (same row and object) removed; ``[]`` when nothing is wrong.
    """
    ctx = _Ctx(
        pods=sorted(pods, key=lambda p: (_creation(p), _ns(p), _name(p))),
        events=list(events),
        daemonsets=list(daemonsets),
        nodes=list(nodes),
        logs=logs or {},
        host_max_cuda=host_max_cuda,
        profile=profile,
        gpu_resource=gpu_resource,
        namespaces=list(namespaces),
        now=now or datetime.now(UTC),
        device_plugin=device_plugin,
        node_command=node_command,
    )
    pairs: list[tuple[Diagnosis, int]] = [
        *_namespace_diagnoses(ctx),
        *_node_diagnoses(ctx),
        *condition_diagnoses(workloads),
    ]
    gpu_pending: list[tuple[Json, str]] = []
    for pod in ctx.pods:
        pairs.extend(_pod_diagnoses(ctx, pod, gpu_pending))
    pairs.extend(_daemonset_diagnoses(ctx, [d for d, _ in pairs]))
    pairs.extend(_mig_diagnoses(ctx, mig_strategy, expected_mig))
    if mig_strategy != "mixed":  # mixed: the MIG resources are the GPUs (gpulab.diagnose.mig)
        pairs.extend(_allocatable_diagnoses(ctx, expected_gpus, gpu_pending))

    ranked = [_Ranked(rank, i, d) for i, (d, rank) in enumerate(pairs)]
    ranked.sort(key=lambda r: (r.rank, r.seq))
    seen: set[tuple[str, str]] = set()
    result: list[Diagnosis] = []
    for r in ranked:
        key = (r.diag.row, r.diag.object)
        if key not in seen:
            seen.add(key)
            result.append(r.diag)
    return result
