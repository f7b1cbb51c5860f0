"""The readiness gate's rules: when the cluster's state says the GPUs will not come by waiting.

The gate (:mod:`gpulab.kube.gate`) polls the cluster; each poll's state goes through these pure
functions, which say *wait*, *done* or *stuck* (a :class:`Stuck`: the cause and the fix).
A stuck state that can still change by itself (a DaemonSet placed on no node while NFD is
still labelling, allocatable that has not appeared yet) counts only once it has held for
the grace (``gpuGraceSeconds``, :class:`Grace`); one that cannot (a plugin that restarted
:data:`CRASH_RESTARTS` times) stops the gate at once.

Where the failures come from (upstream reports):

* the key ``nvidia.com/gpu`` absent from a Ready node: NVIDIA/k8s-device-plugin#834 ("no GPU
  resource allocatable on a GPU cloud instance": capacity lists cpu/memory/pods only);
* allocatable 0 with capacity > 0 (devices unhealthy): NVIDIA/k8s-device-plugin#58
  ("allocatable stuck at zero": ``capacity nvidia.com/gpu: 16``, ``allocatable: 0``);
* the operator reports ``ready`` with no device plugin at all: its ClusterPolicy
  controller marks the state ``ready`` with condition reason ``NoGPUNodes`` ("No GPU node
  found, watching for new nodes to join the cluster.") and creates no operand DaemonSet,
  and treats ``desiredNumberScheduled == 0`` as ready (gpu-operator
  ``controllers/object_controls.go``, ``isDaemonSetReady``);
* a crash-looping plugin that never registers: NVIDIA/gpu-operator#1190 (the validator's
  ``plugin-validation`` finds no allocatable GPU while the plugin restarts).
* the MIG manager's ``nvidia.com/mig.config.state`` taken as it means it (NVIDIA/mig-parted
  v0.15.0 ``pkg/mig/reconfigure/reconfigure.go``): ``pending``/``rebooting`` is a layout being
  applied (MIG resources at 0 are then expected: the gate waits, its grace held), ``failed``
  will not change until the node's ``nvidia.com/mig.config`` does (it stops at once).

Pure: no I/O. Inputs are the JSON dicts ``kubectl get -o json`` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpulab.config.mig import Expected, mig_totals
from gpulab.config.time_slicing import other_resource
from gpulab.core import fixes, fixes_operator
from gpulab.core.names import GPU_RESOURCE

Json = Mapping[str, Any]

#: Restarts of a device-plugin container after which it is crash-looping for good: the
#: kubelet's back-off has then waited 10 s, 20 s and 40 s, so about 70 s of crashing.
CRASH_RESTARTS: Final = 3
#: The grace when the config gives none, in seconds.
DEFAULT_GRACE_SECONDS: Final = 60


@dataclass(frozen=True)
class Stuck:
    """A state the gate stops on.

    Attributes:
        row: the diagnosis row it matches (:mod:`gpulab.diagnose`), e.g. ``allocatable-zero``.
        cause: one sentence: what is wrong and why waiting does not help.
        fix: the first reaction, as commands.
    """

    row: str
    cause: str
    fix: str


@dataclass
class Grace:
    """How long each stuck condition has held, in seconds of the gate's clock.

    :meth:`expired` is called once per poll for each condition: it starts the condition's
    clock the first time the condition is true, clears it when it is false, and says whether
    it has now held for :attr:`seconds`.
    """

    seconds: float
    since: dict[str, float] = field(default_factory=dict)

    def expired(self, key: str, active: bool, now: float) -> bool:
        if not active:
            self.since.pop(key, None)
            return False
        start = self.since.setdefault(key, now)
        return now - start >= self.seconds


def _containers(pod: Json) -> list[Json]:
    return list((pod.get("status") or {}).get("containerStatuses") or [])


def crash_looping(pods: Sequence[Json]) -> tuple[str, bool] | None:
    """The first device-plugin container that crash-loops: ``("<pod>/<container>: ...",
    final)``; ``final`` is True when it restarted :data:`CRASH_RESTARTS` times or more (stop
    now), False when it is in ``CrashLoopBackOff`` with fewer restarts (stop once that held
    for the grace). None when none does."""
    for pod in pods:
        name = (pod.get("metadata") or {}).get("name", "?")
        for cs in _containers(pod):
            restarts = int(cs.get("restartCount") or 0)
            waiting = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
            what = f"{name}/{cs.get('name')}: {waiting or 'running'}, {restarts} restart(s)"
            if restarts >= CRASH_RESTARTS:
                return what, True
            if waiting == "CrashLoopBackOff":
                return what, False
    return None


def crash_stuck(what: str, namespace: str, selector: str = "app=nvidia-device-plugin-daemonset") -> Stuck:
    """The :class:`Stuck` of a crash-looping device plugin (``what`` from :func:`crash_looping`;
    ``selector``: the label selector of the DaemonSet's pods)."""
    return Stuck(
        "device-plugin-crashloop",
        f"the device plugin is crash-looping ({what}); it registers no GPU until the cause is fixed",
        f"kubectl -n {namespace} logs -l {selector} --previous --tail=50 "
        "(a 'could not load NVML' line means the runtime hands no driver to the container: "
        f"{fixes.docker_runtime()})",
    )


def placement(ds: Json | None) -> str | None:
    """Why the device-plugin DaemonSet places no pod, or None when it does (or may still).

    ``"absent"``: no DaemonSet (the operator creates none when it found no GPU node);
    ``"no-nodes"``: the DaemonSet controller has seen the current spec
    (``status.observedGeneration >= metadata.generation``) and schedules it on no node.
    """
    if ds is None:
        return "absent"
    st = ds.get("status") or {}
    seen = int(st.get("observedGeneration") or 0) >= int((ds.get("metadata") or {}).get("generation") or 1)
    if seen and int(st.get("desiredNumberScheduled") or 0) == 0:
        return "no-nodes"
    return None


def placement_stuck(why: str, ds_name: str, namespace: str, policy: Json | None) -> Stuck:
    """The :class:`Stuck` for :func:`placement`'s ``why``; ``policy`` is ClusterPolicy
    ``cluster-policy`` (its Ready condition's reason and message are quoted when given)."""
    cond = next(
        (c for c in ((policy or {}).get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"),
        None,
    )
    said = f"; ClusterPolicy says {cond.get('reason')}: {cond.get('message')}" if cond else ""
    labels = (
        "kubectl get nodes -L feature.node.kubernetes.io/pci-10de.present,nvidia.com/gpu.deploy.device-plugin"
    )
    if why == "absent":
        return Stuck(
            "daemonset-no-nodes",
            f"DaemonSet {namespace}/{ds_name} does not exist: the operator found no GPU node{said}",
            f"NFD must label the GPU node feature.node.kubernetes.io/pci-10de.present=true: {labels}; "
            f"kubectl -n {namespace} logs deploy/gpu-operator --tail=50",
        )
    return Stuck(
        "daemonset-no-nodes",
        f"DaemonSet {namespace}/{ds_name} has desiredNumberScheduled 0: no node matches its "
        f"nodeSelector or tolerates its node's taints{said}",
        f"{labels}; kubectl -n {namespace} get ds {ds_name} "
        "-o jsonpath='{.spec.template.spec.nodeSelector}'; kubectl describe node | grep -i taint",
    )


def _ready_nodes(nodes: Sequence[Json]) -> list[Json]:
    out = []
    for n in nodes:
        for c in (n.get("status") or {}).get("conditions") or []:
            if c.get("type") == "Ready" and c.get("status") == "True":
                out.append(n)
    return out


def _gpu(nodes: Sequence[Json], field_name: str, resource: str = GPU_RESOURCE) -> int | None:
    total: int | None = None
    for n in nodes:
        value = ((n.get("status") or {}).get(field_name) or {}).get(resource)
        if value is not None:
            total = (total or 0) + int(str(value))
    return total


@dataclass(frozen=True)
class Resources:
    """What the nodes advertise, summed: ``resource`` (``nvidia.com/gpu``, or
    ``nvidia.com/gpu.shared`` under time-slicing's rename) allocatable and capacity (None: no
    node has the key), ``nvidia.com/mig-*`` allocatable per resource, and ``other``: the
    allocatable of the other whole-GPU name (None: absent), which says a rename was or was not
    applied."""

    allocatable: int | None
    capacity: int | None
    mig: Mapping[str, int]
    resource: str = GPU_RESOURCE
    other: int | None = None

    @classmethod
    def of(cls, nodes: Sequence[Json], resource: str = GPU_RESOURCE) -> Resources:
        """Sum ``nodes`` (JSON dicts as ``kubectl get nodes -o json`` items)."""
        return cls(
            _gpu(nodes, "allocatable", resource),
            _gpu(nodes, "capacity", resource),
            mig_totals(nodes),
            resource,
            _gpu(nodes, "allocatable", other_resource(resource)),
        )

    @property
    def other_name(self) -> str:
        """The other whole-GPU name (``nvidia.com/gpu.shared`` <-> ``nvidia.com/gpu``)."""
        return other_resource(self.resource)

    def describe(self) -> str:
        """One phrase, e.g. ``"nvidia.com/gpu 1 (capacity 1)"``."""
        gpu = f"{self.resource} " + (
            "absent" if self.allocatable is None else f"{self.allocatable} (capacity {self.capacity})"
        )
        mig = ", ".join(f"{r} {n}" for r, n in sorted(self.mig.items()))
        other = f"; {self.other_name} {self.other}" if self.other is not None else ""
        return gpu + other + (f"; {mig}" if mig else "")


def resources_verdict(nodes: Sequence[Json], expect: Expected) -> tuple[str, str] | None:
    """Whether the nodes advertise what ``expect`` says: None when they do (the gate is
    done), else ``(key, cause)``: ``key`` names the condition for :class:`Grace`
    (``"not-ready"`` when no node is Ready yet: keep waiting, never a failure by itself),
    ``cause`` says what is missing.

    ``none``/``single``: ``nvidia.com/gpu`` > 0 and, when known, == ``expect.gpus``.
    ``mixed``: every expected ``nvidia.com/mig-*`` at its count (when unknown: some
    ``nvidia.com/mig-*`` > 0), no other MIG resource, and ``nvidia.com/gpu`` == ``expect.gpus``
    when that is known and > 0.
    """
    if not _ready_nodes(nodes):
        return "not-ready", "no node is Ready"
    have = Resources.of(nodes, expect.resource)
    if expect.wants_mig:
        if not have.mig:
            return (
                "absent",
                f"no node has an nvidia.com/mig-* resource in status.allocatable ({have.describe()})",
            )
        if expect.mig is not None and dict(have.mig) != dict(expect.mig):
            return "mismatch", f"MIG resources {have.describe()}, expected {expect.describe()}"
        if expect.mig is None and not any(have.mig.values()):
            return "zero", f"every MIG resource is 0 ({have.describe()})"
        if expect.gpus and have.allocatable != expect.gpus:
            return "mismatch", f"{have.describe()}, expected {expect.describe()}"
        return None
    name = expect.resource
    if have.allocatable is None and have.other is not None:
        # The plugin registered the GPUs under the other name: the rename was not (or was
        # unexpectedly) applied. A mismatch, so the gate adds the sharing config's diagnosis.
        renamed = "expected" if name != GPU_RESOURCE else "not expected"
        return (
            "mismatch",
            f"no node has {name} in status.allocatable, but {have.other_name} is {have.other}: "
            f"time-slicing's rename (renameByDefault) was {renamed}",
        )
    if have.allocatable is None:
        return "absent", f"no node has {name} in status.allocatable"
    if have.allocatable == 0:
        why = "devices unhealthy" if (have.capacity or 0) > 0 else "the plugin sees no GPU"
        return "zero", f"allocatable {name} is 0 (capacity {have.capacity}): {why}"
    if expect.gpus is not None and have.allocatable != expect.gpus:
        return "mismatch", f"allocatable {name} is {have.allocatable}, expected {expect.gpus}"
    return None


#: The label the GPU Operator's MIG manager sets while it applies ``nvidia.com/mig.config``
#: (k8s-mig-manager v0.15.0, the migManager of the chart v26.7.0: NVIDIA/mig-parted v0.15.0
#: ``pkg/mig/reconfigure/reconfigure.go``): ``pending`` once it starts changing the layout
#: (it pauses the device plugin, GFD and DCGM with ``nvidia.com/gpu.deploy.*=
#: paused-for-mig-change``, so the MIG resources read 0 meanwhile), ``rebooting`` before it
#: reboots the node for a mode change, then ``success`` or ``failed``; after ``failed`` it
#: tries again only when the ``nvidia.com/mig.config`` label changes.
MIG_STATE_LABEL: Final = "nvidia.com/mig.config.state"
#: States in which the layout is still being changed: the gate waits (its grace does not run).
MIG_WORKING: Final = ("pending", "rebooting")
MIG_FAILED: Final = "failed"


def mig_manager_state(nodes: Sequence[Json]) -> tuple[str, list[str]] | None:
    """What the MIG manager's label says across ``nodes``: ``("failed", [node, ...])`` when
    any node's state is ``failed`` (it wins: that node will not come by waiting),
    ``("working", ["node=pending", ...])`` when any is pending or rebooting, else None
    (``success``, or no MIG manager: the resources decide)."""
    failed, working = [], []
    for n in nodes:
        meta = n.get("metadata") or {}
        state = (meta.get("labels") or {}).get(MIG_STATE_LABEL)
        if state == MIG_FAILED:
            failed.append(str(meta.get("name")))
        elif state in MIG_WORKING:
            working.append(f"{meta.get('name')}={state}")
    if failed:
        return "failed", failed
    return ("working", working) if working else None


def mig_failed_stuck(nodes: Sequence[str], namespace: str) -> Stuck:
    """The :class:`Stuck` for a node whose MIG manager reports ``failed`` (no grace: it does
    not retry by itself)."""
    return Stuck(
        "allocatable-zero",  # the troubleshooting row: MIG resources left at 0
        f"the MIG manager could not apply the MIG layout on {', '.join(nodes)} ({MIG_STATE_LABEL}="
        f"{MIG_FAILED}); it does not try again until the node's nvidia.com/mig.config label changes",
        fixes_operator.mig_config_failed(" ".join(nodes), namespace),
    )


def resources_stuck(
    key: str,
    cause: str,
    profile: str,
    simulated: bool,
    plugin_logs: str | None = None,
    unhealthy: bool = False,
    node_command: str | None = None,
) -> Stuck:
    """The :class:`Stuck` for a :func:`resources_verdict` that held for the grace.

    ``plugin_logs``: the command that shows the log of the device plugin the gate waited for
    (default: the operator's DaemonSet's); ``unhealthy``: the plugin registered GPUs (capacity
    > 0) that it reports unhealthy (allocatable 0), whose first fix is the host's XID records,
    not whether the node sees a GPU; ``node_command``: how the fix runs ``nvidia-smi`` on the
    node (gpulab.core.fixes.node_nvidia_smi).
    """
    row = "allocatable-mismatch" if key == "mismatch" else "allocatable-zero"
    logs = plugin_logs or fixes.device_plugin_logs()
    fix = (
        fixes.sim_allocatable()
        if simulated
        else fixes.unhealthy_gpus(logs)
        if key == "zero" and unhealthy
        else fixes.allocatable(profile, logs, node_command)
        if key != "mismatch"
        else "expected = GPUs x time-slicing replicas (MIG: the MIG devices, see migStrategy); "
        f"{fixes.node_nvidia_smi(profile, node_command)}; {logs}"
    )
    return Stuck(row, f"{cause}, for longer than the grace", fix)
