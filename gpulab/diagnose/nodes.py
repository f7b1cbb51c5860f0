"""The nodes: ``node-not-ready``, and what they advertise as allocatable ``nvidia.com/gpu``
(``allocatable-zero``, ``allocatable-mismatch``) against what pods ask for
(``gpu-insufficient``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from gpulab.config.time_slicing import other_resource
from gpulab.core import fixes
from gpulab.core.names import OPERATOR_NAMESPACE, SIMULATED_ANNOTATION
from gpulab.diagnose import stop
from gpulab.diagnose.context import _Ctx
from gpulab.diagnose.fields import _ds_ready, _get, _name, _ns, _one_line, _pod_obj, _quantity
from gpulab.diagnose.gpus import gpu_holders, gpu_request
from gpulab.diagnose.record import SHARED_GPU_RESOURCE, Diagnosis, Json
from gpulab.diagnose.roles import _ROLE_RANK


def _node_ready(node: Json) -> tuple[bool, str]:
    for cond in _get(node, "status", "conditions") or []:
        if cond.get("type") == "Ready":
            ok = cond.get("status") == "True"
            return ok, str(cond.get("message") or cond.get("reason") or "")
    return True, ""


def _all_simulated(nodes: list[Json]) -> bool:
    """Every node is one the simulated lab made (annotated ``gpulab.dev/simulated``)."""
    return bool(nodes) and all(
        (_get(n, "metadata", "annotations") or {}).get(SIMULATED_ANNOTATION) == "true" for n in nodes
    )


def _node_diagnoses(ctx: _Ctx) -> list[tuple[Diagnosis, int]]:
    """``node-not-ready`` for every node whose Ready condition is not True; ``node-pressure``
    for every pressure condition (DiskPressure, MemoryPressure, PIDPressure) that is True, with
    its taints and how many Pods the kubelet evicted there; ``node-cordoned`` for a node marked
    unschedulable (:mod:`gpulab.diagnose.stop` has the same causes for a wait)."""
    pairs: list[tuple[Diagnosis, int]] = []
    for node in ctx.nodes:
        name = _name(node)
        taints = ", ".join(
            f"{t.get('key')}:{t.get('effect')}" for t in _get(node, "spec", "taints") or [] if t.get("key")
        )
        evicted = sum(
            1
            for p in ctx.pods
            if _get(p, "spec", "nodeName") == name and _get(p, "status", "reason") == "Evicted"
        )
        for cond, c in stop.node_pressure(node):
            pairs.append(
                (
                    Diagnosis(
                        row="node-pressure",
                        object=f"node {name}",
                        reason=f"node reports {cond} ({c.get('reason')}: {c.get('message')}): the scheduler "
                        f"keeps Pods that do not tolerate {stop.PRESSURE[cond]} off it",
                        detail=f"taints: {taints or 'none'}; Pods evicted there: {evicted}",
                        fix=stop._pressure_fix(cond, ctx.profile, name),
                        variant=cond,
                    ),
                    _ROLE_RANK["node"],
                )
            )
        if _get(node, "spec", "unschedulable"):
            pairs.append(
                (
                    Diagnosis(
                        row="node-cordoned",
                        object=f"node {name}",
                        reason="the node is marked unschedulable (cordoned): no new Pod is placed on it",
                        detail=f"taints: {taints or 'none'}",
                        fix=f"{fixes.KUBECTL} uncordon {name} && make lab",
                    ),
                    _ROLE_RANK["node"],
                )
            )
        ok, why = _node_ready(node)
        if not ok:
            pairs.append(
                (
                    Diagnosis(
                        row="node-not-ready",
                        object=f"node {name}",
                        reason="node condition Ready is not True",
                        detail=_one_line(why or "no message"),
                        fix=f"scripts/kubectl describe node {name}; minikube -p {ctx.profile} status; "
                        f"minikube -p {ctx.profile} logs | tail -50",
                    ),
                    _ROLE_RANK["node"],
                )
            )
    return pairs


def _plugin_daemonset(ctx: _Ctx) -> Json | None:
    """The device plugin's DaemonSet: the one the gate waits for (``ctx.device_plugin``),
    else the first whose name says it is NVIDIA's (the operator's, minikube's addon)."""
    if ctx.device_plugin is not None:
        ns, name = ctx.device_plugin
        return next((d for d in ctx.daemonsets if _ns(d) == ns and _name(d) == name), None)
    return next((d for d in ctx.daemonsets if _name(d).startswith("nvidia-device-plugin")), None)


@dataclass(frozen=True)
class _Supply:
    """What the nodes advertise of the lab's GPU resource, and the device plugin behind it:
    the evidence every allocatable and shortage rule reads.

    ``alloc``: allocatable ``resource`` per node that has the key; ``total_alloc`` and
    ``total_cap``: summed allocatable and capacity; ``other_alloc``: summed allocatable under the
    other name (``other``: time-slicing's rename or its absence), None when no node has it;
    ``plugin_state``: ``"DaemonSet ns/name ready r/d"``, ``""`` when no plugin was found;
    ``pending``: ``"; pod ns/name Pending: ..."`` per pod the scheduler refused for GPUs."""

    obj: str
    resource: str
    other: str
    alloc: dict[str, int]
    total_alloc: int
    total_cap: int
    other_alloc: int | None
    plugin_state: str
    plugin_ns: str
    plugin_logs: str
    check_node: str
    pending: str
    simulated: bool
    profile: str
    node_command: str | None
    expected: int | None

    @property
    def state(self) -> str:
        """The plugin's state and the refused pods: a node-level finding's evidence."""
        return (self.plugin_state or "no device-plugin DaemonSet given") + self.pending


def _supply(ctx: _Ctx, expected_gpus: int | None, gpu_pending: list[tuple[Json, str]]) -> _Supply:
    resource = ctx.gpu_resource
    other = other_resource(resource)
    alloc: dict[str, int] = {}
    cap: dict[str, int] = {}
    other_alloc: int | None = None
    for n in ctx.nodes:
        a = (_get(n, "status", "allocatable") or {}).get(resource)
        c = (_get(n, "status", "capacity") or {}).get(resource)
        o = (_get(n, "status", "allocatable") or {}).get(other)
        if a is not None:
            alloc[_name(n)] = _quantity(a)
        if c is not None:
            cap[_name(n)] = _quantity(c)
        if o is not None:
            other_alloc = (other_alloc or 0) + _quantity(o)
    node_names = ", ".join(_name(n) for n in ctx.nodes)
    plugin = _plugin_daemonset(ctx)
    plugin_state = ""
    plugin_ns = ctx.device_plugin[0] if ctx.device_plugin else OPERATOR_NAMESPACE
    selector = None
    if plugin is not None:
        desired, ready = _ds_ready(plugin)
        plugin_ns = _ns(plugin)
        plugin_state = f"DaemonSet {plugin_ns}/{_name(plugin)} ready {ready}/{desired}"
        labels = (_get(plugin, "spec", "selector", "matchLabels") or {}).items()
        selector = ",".join(f"{k}={v}" for k, v in labels) or None
    return _Supply(
        obj=f"node {node_names}" if len(ctx.nodes) == 1 else f"nodes {node_names}",
        resource=resource,
        other=other,
        alloc=alloc,
        total_alloc=sum(alloc.values()),
        total_cap=sum(cap.values()),
        other_alloc=other_alloc,
        plugin_state=plugin_state,
        plugin_ns=plugin_ns,
        plugin_logs=fixes.device_plugin_logs(plugin_ns, selector=selector),
        check_node=fixes.node_nvidia_smi(ctx.profile, ctx.node_command),
        pending="".join(f"; pod {_ns(p)}/{_name(p)} Pending: {_one_line(m, 200)}" for p, m in gpu_pending),
        simulated=_all_simulated(ctx.nodes),
        profile=ctx.profile,
        node_command=ctx.node_command,
        expected=expected_gpus,
    )


# --- the allocatable rules: the first that applies is the nodes' finding -----------------------


def _under_the_other_name(s: _Supply) -> Diagnosis | None:
    """``allocatable-mismatch`` (``renamed`` / ``not-renamed``): no node has the lab's name,
    some have the other: time-slicing's rename applied, or not, unlike the config."""
    if s.alloc or s.other_alloc is None:
        return None
    renamed = s.resource == SHARED_GPU_RESOURCE
    return Diagnosis(
        row="allocatable-mismatch",
        object=s.obj,
        reason=f"no node has {s.resource} but {s.other} is {s.other_alloc}: time-slicing's rename "
        "(renameByDefault) was " + ("expected and not applied" if renamed else "applied, not expected"),
        detail=s.state,
        fix=(
            "the device plugin did not get the lab's sharing config: scripts/kubectl -n "
            f"{s.plugin_ns} get configmap time-slicing-config -o yaml (renameByDefault: true), "
            "scripts/kubectl get clusterpolicy cluster-policy -o jsonpath="
            "'{.spec.devicePlugin.config}'; "
            if renamed
            else "another sharing config renames the GPUs: ask for the name the node has, or "
            "scripts/pulumi config set gpu-lab:timeSlicingRename true; "
        )
        + s.plugin_logs,
        variant="renamed" if not renamed else "not-renamed",
    )


def _not_registered(s: _Supply) -> Diagnosis | None:
    """``allocatable-zero`` (``not-registered``): no node has the key at all."""
    if s.alloc:
        return None
    return Diagnosis(
        row="allocatable-zero",
        object=s.obj,
        reason=f"device plugin not registered: no node has {s.resource} in status.allocatable",
        detail=s.state,
        # A kwok node advertises what the sim lab wrote (simGpus), not what a plugin found.
        fix=(
            f"simulated lab: {fixes.sim_allocatable()}"
            if s.simulated
            else fixes.allocatable(s.profile, s.plugin_logs, s.node_command)
        ),
        variant="not-registered",
    )


def _zero(s: _Supply) -> Diagnosis | None:
    """``allocatable-zero``: registered with 0 (``unhealthy`` with capacity > 0, else ``no-devices``)."""
    if s.total_alloc != 0:
        return None
    unhealthy = s.total_cap > 0
    return Diagnosis(
        row="allocatable-zero",
        object=s.obj,
        reason=(
            f"devices unhealthy (e.g. XID errors): capacity {s.total_cap}, allocatable 0"
            if unhealthy
            else "the device plugin registered but found no GPU (capacity 0)"
        ),
        detail=s.state,
        fix=(
            fixes.unhealthy_gpus(s.plugin_logs)
            if unhealthy
            else f"the node container got no GPU: {s.check_node}; {s.plugin_logs}"
        ),
        variant="unhealthy" if unhealthy else "no-devices",
    )


def _count_differs(s: _Supply) -> Diagnosis | None:
    """``allocatable-mismatch`` (``fewer`` / ``more``): a count other than the expected one."""
    if s.expected is None or s.total_alloc == s.expected:
        return None
    fewer = s.total_alloc < s.expected
    return Diagnosis(
        row="allocatable-mismatch",
        object=s.obj,
        reason=f"allocatable {s.resource} is {s.total_alloc}, expected {s.expected}",
        detail=f"capacity {s.total_cap}; " + s.plugin_state,
        fix=(
            f"some GPUs are missing or unhealthy: {s.check_node}; {s.plugin_logs}"
            if fewer
            else "more than expected: is time-slicing on? expected = GPUs x "
            "replicas (scripts/pulumi config get gpu-lab:timeSlicingReplicas)"
        ),
        variant="fewer" if fewer else "more",
    )


#: ``(rule, rank offset)`` in order: the first rule that yields a finding is the nodes' one; its
#: rank is the allocatable rank plus the offset (a count that differs sorts one step later).
_SUPPLY_RULES: Final[tuple[tuple[Callable[[_Supply], Diagnosis | None], int], ...]] = (
    (_under_the_other_name, 0),
    (_not_registered, 0),
    (_zero, 0),
    (_count_differs, 1),
)


# --- the shortage rules: why a pod the scheduler refused for GPUs waits ------------------------


@dataclass(frozen=True)
class _Ask:
    """One pod refused for want of GPUs: ``want`` of the lab's resource, ``want_other`` of the
    other name, ``others``: ``(namespace/pod, GPUs)`` held by every other pod."""

    want: int
    want_other: int
    others: list[tuple[str, int]]

    @property
    def who(self) -> str:
        return ", ".join(f"{h} holds {c}" for h, c in self.others)


#: A shortage rule's finding: ``(reason, fix, variant)``.
_Shortage = tuple[str, str, str]


def _asks_the_other_name(s: _Supply, a: _Ask) -> _Shortage | None:
    if a.want != 0 or not a.want_other:
        return None
    renamed = " (time-slicing's rename)" if s.resource == SHARED_GPU_RESOURCE else ""
    return (
        f"asks for {a.want_other} {s.other}, which no node advertises: the nodes have "
        f"{s.total_alloc} {s.resource}{renamed}",
        f"ask for {s.resource} in the pod's limits",
        "other-resource-name",
    )


def _asks_too_many(s: _Supply, a: _Ask) -> _Shortage | None:
    if a.want <= s.total_alloc:
        return None
    return (
        f"asks for {a.want} {s.resource}, more than the {s.total_alloc} allocatable "
        f"(held now: {a.who or 'none'})",
        f"lower the pod's {s.resource} limit to <= {s.total_alloc}",
        "request-too-large",
    )


def _held_by_others(s: _Supply, a: _Ask) -> _Shortage | None:
    if not a.others:
        return None
    held = sum(c for _, c in a.others)
    ns, name = a.others[0][0].split("/", 1)
    return (
        f"asks for {a.want} {s.resource} but {held} of {s.total_alloc} allocatable are held: {a.who}",
        f"free a GPU: wait for or delete the holder (scripts/kubectl -n {ns} delete "
        f"pod {name}), or share the GPU (time-slicing: scripts/pulumi config set gpu-lab:"
        "timeSlicingReplicas 2)",
        "held-by-pods",
    )


def _retrying(s: _Supply, a: _Ask) -> _Shortage | None:
    return (
        f"asks for {a.want} {s.resource}; {s.total_alloc} allocatable and none held "
        "by other pods (a stale FailedScheduling event, or a GPU just freed)",
        "wait for the scheduler's next attempt: scripts/kubectl get events -w",
        "retrying",
    )


#: In order; the last always applies.
_SHORTAGE_RULES: Final[tuple[Callable[[_Supply, _Ask], _Shortage | None], ...]] = (
    _asks_the_other_name,
    _asks_too_many,
    _held_by_others,
    _retrying,
)


def _allocatable_diagnoses(
    ctx: _Ctx, expected_gpus: int | None, gpu_pending: list[tuple[Json, str]]
) -> list[tuple[Diagnosis, int]]:
    """The nodes' allocatable finding (the first of :data:`_SUPPLY_RULES` that applies), then,
    when the nodes have GPUs, ``gpu-insufficient`` for each pod in ``gpu_pending`` (``(pod,
    scheduler message)``) by the first of :data:`_SHORTAGE_RULES` that applies."""
    if not ctx.nodes:
        return []
    s = _supply(ctx, expected_gpus, gpu_pending)
    rank = _ROLE_RANK["allocatable"]
    first = next(((d, rank + off) for rule, off in _SUPPLY_RULES if (d := rule(s)) is not None), None)
    found = [first] if first is not None else []
    if s.total_alloc <= 0:
        return found
    holders = gpu_holders(ctx.pods, resource=s.resource)
    for pod, msg in gpu_pending:
        mine = f"{_ns(pod)}/{_name(pod)}"
        ask = _Ask(
            gpu_request(pod, s.resource), gpu_request(pod, s.other), [(h, c) for h, c in holders if h != mine]
        )
        reason, fix, variant = next(hit for rule in _SHORTAGE_RULES if (hit := rule(s, ask)) is not None)
        found.append(
            (
                Diagnosis(
                    row="gpu-insufficient",
                    object=_pod_obj(pod),
                    reason=reason,
                    detail=_one_line(msg),
                    fix=fix,
                    variant=variant,
                ),
                _ROLE_RANK["scheduling"],
            )
        )
    return found
