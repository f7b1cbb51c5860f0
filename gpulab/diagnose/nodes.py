"""The nodes: ``node-not-ready``, and what they advertise as allocatable ``nvidia.com/gpu``
(``allocatable-zero``, ``allocatable-mismatch``) against what pods ask for
(``gpu-insufficient``)."""

from __future__ import annotations

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


def _allocatable_diagnoses(
    ctx: _Ctx, expected_gpus: int | None, gpu_pending: list[tuple[Json, str]]
) -> list[tuple[Diagnosis, int]]:
    if not ctx.nodes:
        return []
    out: list[tuple[Diagnosis, int]] = []
    rank = _ROLE_RANK["allocatable"]
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
    obj = f"node {node_names}" if len(ctx.nodes) == 1 else f"nodes {node_names}"
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
    pending_note = "".join(f"; pod {_ns(p)}/{_name(p)} Pending: {_one_line(m, 200)}" for p, m in gpu_pending)
    check_node = fixes.node_nvidia_smi(ctx.profile)
    plugin_logs = fixes.device_plugin_logs(plugin_ns, selector=selector)
    total_alloc = sum(alloc.values())
    total_cap = sum(cap.values())
    if not alloc and other_alloc is not None:
        # Registered under the other name: time-slicing's rename applied, or not, unlike config.
        renamed = resource == SHARED_GPU_RESOURCE
        out.append(
            (
                Diagnosis(
                    row="allocatable-mismatch",
                    object=obj,
                    reason=f"no node has {resource} but {other} is {other_alloc}: time-slicing's rename "
                    "(renameByDefault) was "
                    + ("expected and not applied" if renamed else "applied, not expected"),
                    detail=(plugin_state or "no device-plugin DaemonSet given") + pending_note,
                    fix=(
                        "the device plugin did not get the lab's sharing config: scripts/kubectl -n "
                        f"{plugin_ns} get configmap time-slicing-config -o yaml (renameByDefault: true), "
                        "scripts/kubectl get clusterpolicy cluster-policy -o jsonpath="
                        "'{.spec.devicePlugin.config}'; "
                        if renamed
                        else "another sharing config renames the GPUs: ask for the name the node has, or "
                        "scripts/pulumi config set gpu-lab:timeSlicingRename true; "
                    )
                    + plugin_logs,
                    variant="renamed" if not renamed else "not-renamed",
                ),
                rank,
            )
        )
    elif not alloc:
        out.append(
            (
                Diagnosis(
                    row="allocatable-zero",
                    object=obj,
                    reason=f"device plugin not registered: no node has {resource} in status.allocatable",
                    detail=(plugin_state or "no device-plugin DaemonSet given") + pending_note,
                    # A kwok node advertises what the sim lab wrote (simGpus), not what a plugin found.
                    fix=(
                        f"simulated lab: {fixes.sim_allocatable()}"
                        if _all_simulated(ctx.nodes)
                        else fixes.allocatable(ctx.profile, plugin_logs)
                    ),
                    variant="not-registered",
                ),
                rank,
            )
        )
    elif total_alloc == 0:
        unhealthy = total_cap > 0
        out.append(
            (
                Diagnosis(
                    row="allocatable-zero",
                    object=obj,
                    reason=(
                        f"devices unhealthy (e.g. XID errors): capacity {total_cap}, allocatable 0"
                        if unhealthy
                        else "the device plugin registered but found no GPU (capacity 0)"
                    ),
                    detail=(plugin_state or "no device-plugin DaemonSet given") + pending_note,
                    fix=(
                        fixes.unhealthy_gpus(plugin_logs)
                        if unhealthy
                        else f"the node container got no GPU: {check_node}; {plugin_logs}"
                    ),
                    variant="unhealthy" if unhealthy else "no-devices",
                ),
                rank,
            )
        )
    elif expected_gpus is not None and total_alloc != expected_gpus:
        fewer = total_alloc < expected_gpus
        out.append(
            (
                Diagnosis(
                    row="allocatable-mismatch",
                    object=obj,
                    reason=f"allocatable {resource} is {total_alloc}, expected {expected_gpus}",
                    detail=f"capacity {total_cap}; " + (plugin_state or ""),
                    fix=(
                        f"some GPUs are missing or unhealthy: {check_node}; {plugin_logs}"
                        if fewer
                        else "more than expected: is time-slicing on? expected = GPUs x "
                        "replicas (scripts/pulumi config get gpu-lab:timeSlicingReplicas)"
                    ),
                    variant="fewer" if fewer else "more",
                ),
                rank + 1,
            )
        )
    if total_alloc > 0:
        holders = gpu_holders(ctx.pods, resource=resource)
        for pod, msg in gpu_pending:
            want = gpu_request(pod, resource)
            mine = f"{_ns(pod)}/{_name(pod)}"
            others = [(h, c) for h, c in holders if h != mine]
            held = sum(c for _, c in others)
            who = ", ".join(f"{h} holds {c}" for h, c in others)
            asked_other = gpu_request(pod, other)
            if want == 0 and asked_other:
                reason = (
                    f"asks for {asked_other} {other}, which no node advertises: the nodes have "
                    f"{total_alloc} {resource}"
                    + (" (time-slicing's rename)" if resource == SHARED_GPU_RESOURCE else "")
                )
                fix = f"ask for {resource} in the pod's limits"
                variant = "other-resource-name"
            elif want > total_alloc:
                reason = (
                    f"asks for {want} {resource}, more than the {total_alloc} allocatable "
                    f"(held now: {who or 'none'})"
                )
                fix = f"lower the pod's {resource} limit to <= {total_alloc}"
                variant = "request-too-large"
            elif others:
                reason = f"asks for {want} {resource} but {held} of {total_alloc} allocatable are held: {who}"
                first = others[0][0].split("/", 1)
                fix = (
                    f"free a GPU: wait for or delete the holder (scripts/kubectl -n {first[0]} delete "
                    f"pod {first[1]}), or share the GPU (time-slicing: scripts/pulumi config set gpu-lab:"
                    "timeSlicingReplicas 2)"
                )
                variant = "held-by-pods"
            else:
                reason = (
                    f"asks for {want} {resource}; {total_alloc} allocatable and none held "
                    "by other pods (a stale FailedScheduling event, or a GPU just freed)"
                )
                fix = "wait for the scheduler's next attempt: scripts/kubectl get events -w"
                variant = "retrying"
            out.append(
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
    return out
