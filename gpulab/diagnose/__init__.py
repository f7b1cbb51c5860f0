"""Automatic diagnosis: cluster state mapped to the chapter's troubleshooting rows.

Input is what ``kubectl get -o json`` returns (the ``items`` of pods, events, DaemonSets and
nodes, as plain JSON dicts with camelCase keys), optionally recent container logs or
``minikube start``'s stderr. Output is a list of :class:`Diagnosis`: which
object fails, why, the evidence, and the first reaction as a concrete command. Pure
functions, no API calls, except :mod:`~gpulab.diagnose.live`, which reads a live cluster
through the API and renders :func:`diagnose_cluster`'s findings for a wait of :mod:`gpulab.kube`
that failed; :mod:`~gpulab.diagnose.sharing` says which step of time-slicing is missing.

Rows (``Diagnosis.row``), the first five from the chapter's table 2 (单机 GPU 集群常见故障与
第一反应), the others from its checklist and from how the GPU Operator fails in practice:

============================== ======================================================
``allocatable-zero``           allocatable 输出 0. Variants: ``not-registered`` (the key
                               is missing on every node), ``unhealthy`` (0 with capacity
                               > 0: devices marked unhealthy, e.g. XID errors),
                               ``no-devices`` (0 with capacity 0); MIG
                               (:mod:`~gpulab.diagnose.mig`): ``mig-not-registered``
                               (``mixed``, no ``nvidia.com/mig-*``), ``mig-invalid``
                               (``single``, GFD's ``-MIG-INVALID`` label)
``operator-pending``           Operator Pod 一直 Pending (Insufficient cpu/memory)
``smoke-container-creating``   gpu-smoke 一直 ContainerCreating. Variants:
                               ``toolkit-not-ready``, ``runtime``
``cuda-image-newer-than-driver`` the table's "Pod 起了但报 insufficient" row:
                               ``unsatisfied condition: cuda>=X.Y`` at container start
``minikube-start-failed``      ``minikube start`` 卡死或报 GPU 相关错误
                               (``variants.minikube.diagnose``)
``allocatable-mismatch``       allocatable differs from the expected GPU count;
                               variant ``mig``: the MIG resources differ; ``not-renamed``
                               / ``renamed``: the GPUs are under the other name
                               (``nvidia.com/gpu`` vs ``nvidia.com/gpu.shared``)
``gpu-insufficient``           ``Insufficient nvidia.com/gpu`` while the GPUs are held
                               by other pods (names the holders); variant
                               ``other-resource-name``: the pod asks for the name the
                               nodes do not advertise (time-slicing's rename)
``device-plugin-crashloop``    device plugin restarting; variant: the known message
                               its log shows (``nvml-not-injected``, ...), else ``other``
``device-plugin-idle``         device plugin running but its log says it found no usable
                               GPU (``No devices found``, MIG, NVML): variant the message
``daemonset-no-nodes``         ``desiredNumberScheduled: 0``: no node matches the
                               DaemonSet's nodeSelector
``daemonset-not-ready``        ready < desired, with no pod-level cause found
``validator-stuck``            ``nvidia-operator-validator`` stuck or failing in an init
                               container (or its workload Pods failing), with how long;
                               variant: the known message, else the init container
``pod-init-waiting``           an operand stuck in an init container (usually waits on
                               an earlier component)
``dcgm-exporter-failing``      DCGM exporter failing: ``blocking=False`` (reported in the
                               card, does not block the lab)
``image-pull-failed``          ``ErrImagePull`` / ``ImagePullBackOff``
``pod-crashloop``              any other container crash loop, start error or error exit
                               (variant: the known message, else the waiting reason)
``namespace-terminating``      a namespace stuck Terminating: what holds it (variants
                               ``finalizers``, ``discovery``, ``content``, ``waiting``)
``pod-unschedulable``          Pending for a reason other than the above
``pod-not-ready``              Running, not Ready
``pod-failed``                 phase ``Failed`` (e.g. admission refused the GPU)
``node-not-ready``             node condition Ready is not True
``node-pressure``              a pressure condition (DiskPressure, MemoryPressure,
                               PIDPressure) is True: its taints, Pods evicted there, the
                               prune (variant: the condition)
``node-cordoned``              the node is marked unschedulable
============================== ======================================================

Known messages (:mod:`~gpulab.diagnose.messages`): the log, status and event messages of a
failing or stuck container are searched for the failure messages the upstream trackers
report most (driver not visible in the container, host driver too old, runtime handler or
RuntimeClass missing, toolkit and validator states, DCGM exporter, device plugin); a match
names the cause and its fix and becomes the variant, the row stays the failing object's.

Order: :func:`diagnose_cluster` sorts along the lab's dependency chain (node, operator,
DaemonSet placement, driver validation, toolkit, device plugin, allocatable, scheduling,
workloads; non-blocking last), so the first diagnosis is the one to fix first: later ones
are often its consequences.

Rules: where one object can fail in several ways, the ways are a table of rules walked in
order, each a small function that says whether it applies and the finding it yields (None
when it does not): the nodes' allocatable and a pod's GPU shortage (``nodes._SUPPLY_RULES``,
``nodes._SHORTAGE_RULES``), a container's and an init container's state
(``pods._CONTAINER_RULES``, ``pods._INIT_RULES``), a crashing container
(``containers._CRASH_RULES``); a new failure is a new rule in its table.

Modules, by failing object: :mod:`~gpulab.diagnose.nodes` (readiness, allocatable, GPU
shortages), :mod:`~gpulab.diagnose.pods` (Pending, not Ready, Failed),
:mod:`~gpulab.diagnose.containers` (crash loops, image pulls),
:mod:`~gpulab.diagnose.init_containers` (the validator and other init waits),
:mod:`~gpulab.diagnose.smoke` (the smoke Pod: CUDA too new, ContainerCreating),
:mod:`~gpulab.diagnose.daemonsets` (operand placement and readiness),
:mod:`~gpulab.diagnose.namespaces` (a namespace stuck Terminating); a variant's own failures live in its
folder (``variants.minikube.diagnose``: ``minikube start``); :mod:`~gpulab.diagnose.cluster`
runs the cluster checks and orders them, :mod:`~gpulab.diagnose.formatting` renders them.
When a wait stops: :mod:`~gpulab.diagnose.stop` (the rules, as a table, that say a lab
Pod's state will not recover, final or after a bounded grace, each with its cause and a fix
that runs as printed: refused pulls, node pressure, cordons, evictions, mounts, sandboxes).
Shared: :mod:`~gpulab.diagnose.record` (:class:`Diagnosis`),
:mod:`~gpulab.diagnose.patterns` (the messages recognised),
:mod:`~gpulab.diagnose.roles` (what a pod is to the lab, and its rank),
:mod:`~gpulab.diagnose.fields` (JSON readers), :mod:`~gpulab.diagnose.gpus` (GPU
accounting), :mod:`~gpulab.diagnose.context` (the state one call reads).

May import: :mod:`gpulab.config`, :mod:`gpulab.core`. Not :mod:`gpulab.host` (its neighbour),
the cluster checks (:mod:`gpulab.kube` calls it) or anything above.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpulab.diagnose.cluster import diagnose_cluster
    from gpulab.diagnose.formatting import render
    from gpulab.diagnose.gpus import gpu_holders, gpu_request
    from gpulab.diagnose.namespaces import diagnose_namespace
    from gpulab.diagnose.record import GPU_RESOURCE, Diagnosis

#: Where each name of :data:`__all__` lives: imported on first use (PEP 562), so a check that
#: only names :class:`gpulab.diagnose.live.Context` does not load every rule table at start-up
#: (each ``python -m gpulab.kube`` check is a process of its own: ``make bench``).
_HOMES = {
    "diagnose_cluster": "cluster",
    "render": "formatting",
    "gpu_holders": "gpus",
    "gpu_request": "gpus",
    "diagnose_namespace": "namespaces",
    "GPU_RESOURCE": "record",
    "Diagnosis": "record",
}


def __getattr__(name: str) -> Any:
    """The re-exported ``name``, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "GPU_RESOURCE",
    "Diagnosis",
    "diagnose_cluster",
    "diagnose_namespace",
    "gpu_holders",
    "gpu_request",
    "render",
]
