"""Automatic diagnosis: cluster state mapped to the chapter's troubleshooting rows.

Input is what ``kubectl get -o json`` returns (the ``items`` of pods, events, DaemonSets and
nodes, as plain JSON dicts with camelCase keys), optionally recent container logs, a Helm
error message or ``minikube start``'s stderr. Output is a list of :class:`Diagnosis`: which
object fails, why, the evidence, and the first reaction as a concrete command. Pure
functions, no API calls: :mod:`gpulab.kube` reads the cluster and calls
:func:`diagnose_cluster` and :func:`render` when a wait times out.

Rows (``Diagnosis.row``), the first five from the chapter's table 2 (单机 GPU 集群常见故障与
第一反应), the others from its checklist and from how the GPU Operator fails in practice:

============================== ======================================================
``allocatable-zero``           allocatable 输出 0. Variants: ``not-registered`` (the key
                               is missing on every node), ``unhealthy`` (0 with capacity
                               > 0: devices marked unhealthy, e.g. XID errors),
                               ``no-devices`` (0 with capacity 0)
``operator-pending``           Operator Pod 一直 Pending (Insufficient cpu/memory)
``smoke-container-creating``   gpu-smoke 一直 ContainerCreating. Variants:
                               ``toolkit-not-ready``, ``runtime``
``cuda-image-newer-than-driver`` the table's "Pod 起了但报 insufficient" row:
                               ``unsatisfied condition: cuda>=X.Y`` at container start
``minikube-start-failed``      ``minikube start`` 卡死或报 GPU 相关错误
                               (:func:`diagnose_minikube_start`)
``allocatable-mismatch``       allocatable differs from the expected GPU count
``gpu-insufficient``           ``Insufficient nvidia.com/gpu`` while the GPUs are held
                               by other pods (names the holders)
``device-plugin-crashloop``    device plugin restarting; variant ``nvml-not-injected``
                               when its log says it cannot load NVML
``daemonset-no-nodes``         ``desiredNumberScheduled: 0``: no node matches the
                               DaemonSet's nodeSelector
``daemonset-not-ready``        ready < desired, with no pod-level cause found
``validator-stuck``            ``nvidia-operator-validator`` stuck in an init container
``pod-init-waiting``           an operand stuck in an init container (usually waits on
                               an earlier component)
``dcgm-exporter-failing``      DCGM exporter failing: ``blocking=False`` (reported in the
                               card, does not block the lab)
``image-pull-failed``          ``ErrImagePull`` / ``ImagePullBackOff``
``pod-crashloop``              any other container crash loop or start error
``pod-unschedulable``          Pending for a reason other than the above
``pod-not-ready``              Running, not Ready
``pod-failed``                 phase ``Failed`` (e.g. admission refused the GPU)
``node-not-ready``             node condition Ready is not True
``helm-*``                     Helm errors (:func:`diagnose_helm_error`)
============================== ======================================================

Order: :func:`diagnose_cluster` sorts along the lab's dependency chain (node, operator,
DaemonSet placement, driver validation, toolkit, device plugin, allocatable, scheduling,
workloads; non-blocking last), so the first diagnosis is the one to fix first: later ones
are often its consequences.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from gpulab import cuda

__all__ = [
    "GPU_RESOURCE",
    "Diagnosis",
    "diagnose_cluster",
    "diagnose_helm_error",
    "diagnose_minikube_start",
    "gpu_holders",
    "gpu_request",
    "render",
]

GPU_RESOURCE: Final = "nvidia.com/gpu"
DEFAULT_PROFILE: Final = "gpu-lab"
DEFAULT_PROBE_IMAGE: Final = "nvidia/cuda:12.4.1-base-ubuntu22.04"

Json = Mapping[str, Any]


@dataclass(frozen=True)
class Diagnosis:
    """One finding.

    ``row``: stable kebab-case id of the troubleshooting row (module docstring);
    ``object``: the failing object, e.g.
    ``"pod gpu-operator/nvidia-device-plugin-daemonset-x2k/container nvidia-device-plugin"``,
    ``"node minikube"``, ``"daemonset gpu-operator/nvidia-container-toolkit-daemonset"``;
    ``reason``: one sentence, what is wrong; ``detail``: the evidence (an event message, the
    last log line, counts); ``fix``: the first reaction, as commands to run;
    ``blocking``: False when the lab still works (e.g. the DCGM exporter);
    ``variant``: a sub-case of the row (e.g. ``"not-registered"``), ``""`` when none.
    """

    row: str
    object: str
    reason: str
    detail: str
    fix: str
    blocking: bool = True
    variant: str = ""


# --- small JSON helpers ------------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _name(obj: Json) -> str:
    return str(_get(obj, "metadata", "name") or "?")


def _ns(obj: Json) -> str:
    return str(_get(obj, "metadata", "namespace") or "default")


def _last_line(text: str | None) -> str:
    if not text:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _event_time(event: Json) -> str:
    for path in (
        ("lastTimestamp",),
        ("series", "lastObservedTime"),
        ("eventTime",),
        ("firstTimestamp",),
        ("metadata", "creationTimestamp"),
    ):
        value = _get(event, *path)
        if value:
            return str(value)
    return ""


def _quantity(value: Any) -> int:
    # Extended resources are whole numbers; kubectl prints them as strings ("1").
    try:
        return int(str(value))
    except ValueError:
        return 0


# --- GPU accounting ----------------------------------------------------------------------


def gpu_request(pod: Json) -> int:
    """Number of ``nvidia.com/gpu`` a pod asks for (its effective request).

    Per container, limits win over requests (for extended resources a limit alone sets the
    request, and both must be equal when both are given). The pod's figure is the larger of
    the sum over ``spec.containers`` and the largest single ``spec.initContainers`` entry,
    as the scheduler computes it.
    """

    def per_container(c: Json) -> int:
        res = c.get("resources") or {}
        lim = (res.get("limits") or {}).get(GPU_RESOURCE)
        req = (res.get("requests") or {}).get(GPU_RESOURCE)
        return _quantity(lim if lim is not None else req) if (lim or req) is not None else 0

    spec = pod.get("spec") or {}
    main = sum(per_container(c) for c in spec.get("containers") or [])
    init = max((per_container(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def gpu_holders(pods: Iterable[Json], node: str | None = None) -> list[tuple[str, int]]:
    """Pods that hold ``nvidia.com/gpu`` now: ``[("namespace/name", count), ...]``.

    A pod holds GPUs when it is bound to a node (``spec.nodeName`` set), has not terminated
    (phase not ``Succeeded``/``Failed``) and its :func:`gpu_request` is > 0; a Pending pod
    not yet bound holds nothing. ``node`` limits the answer to pods bound to that node.
    Order: as given.
    """
    out: list[tuple[str, int]] = []
    for p in pods:
        bound = _get(p, "spec", "nodeName")
        if not bound or (node is not None and bound != node):
            continue
        if _get(p, "status", "phase") in ("Succeeded", "Failed"):
            continue
        count = gpu_request(p)
        if count > 0:
            out.append((f"{_ns(p)}/{_name(p)}", count))
    return out


# --- roles ---------------------------------------------------------------------------------

# (role, prefix) in match order: longer, more specific prefixes first.
_ROLE_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("validator", "nvidia-operator-validator"),
    ("device-plugin", "nvidia-device-plugin-daemonset"),
    ("toolkit", "nvidia-container-toolkit-daemonset"),
    ("dcgm-exporter", "nvidia-dcgm-exporter"),
    ("dcgm-exporter", "nvidia-dcgm"),
    ("operator", "gpu-operator-node-feature-discovery"),
    ("operator", "gpu-operator"),
    ("operand", "gpu-feature-discovery"),
    ("operand", "nvidia-"),
)
_ROLE_RANK: Final = {
    "node": 0,
    "operator": 10,
    "daemonset": 20,
    "validator-driver": 25,
    "toolkit": 30,
    "validator-toolkit": 35,
    "device-plugin": 40,
    "operand": 45,
    "validator": 50,
    "allocatable": 60,
    "scheduling": 70,
    "workload": 80,
}
_NON_BLOCKING_RANK: Final = 1000

#: Operand DaemonSets that legitimately schedule on no node when their feature is off.
_OPTIONAL_DAEMONSETS: Final = (
    "nvidia-mig-manager",
    "nvidia-sandbox",
    "nvidia-vfio-manager",
    "nvidia-kata",
    "nvidia-cc-manager",
    "nvidia-vgpu",
    "nvidia-driver-daemonset",
    "nvidia-fs",
    "nvidia-gds",
)


def _role_of_name(name: str, app: str | None = None) -> str:
    for role, prefix in _ROLE_PREFIXES:
        if app == prefix or name == prefix or name.startswith(prefix + "-"):
            return role
        if prefix.endswith("-") and name.startswith(prefix):
            return role
    return "workload"


def _role(pod: Json) -> str:
    labels = _get(pod, "metadata", "labels") or {}
    app = labels.get("app") or labels.get("app.kubernetes.io/name")
    if labels.get("app.kubernetes.io/component") == "gpu-operator":
        return "operator"
    if app == "node-feature-discovery":
        return "operator"
    role = _role_of_name(_name(pod), app)
    if role == "workload" and app:
        role = _role_of_name(str(app))
    return role


# --- the cluster diagnosis -----------------------------------------------------------------


@dataclass
class _Ctx:
    pods: list[Json]
    events: list[Json]
    daemonsets: list[Json]
    nodes: list[Json]
    logs: Mapping[str, str]
    host_max_cuda: str | None
    profile: str

    def pod_events(self, pod: Json) -> list[Json]:
        ns, name = _ns(pod), _name(pod)
        found = [
            e
            for e in self.events
            if _get(e, "involvedObject", "name") == name
            and (_get(e, "involvedObject", "kind") in (None, "Pod"))
            and (_get(e, "involvedObject", "namespace") or _ns(e)) == ns
        ]
        return sorted(found, key=_event_time)

    def log(self, pod: Json, container: str) -> str:
        return self.logs.get(f"{_ns(pod)}/{_name(pod)}/{container}", "")

    def daemonset(self, name: str) -> Json | None:
        for ds in self.daemonsets:
            if _name(ds) == name:
                return ds
        return None


@dataclass(frozen=True)
class _Ranked:
    rank: int
    seq: int
    diag: Diagnosis


def _ds_ready(ds: Json) -> tuple[int, int]:
    st = ds.get("status") or {}
    return int(st.get("desiredNumberScheduled") or 0), int(st.get("numberReady") or 0)


def _pod_obj(pod: Json, container: str | None = None) -> str:
    base = f"pod {_ns(pod)}/{_name(pod)}"
    return f"{base}/container {container}" if container else base


# "1 Insufficient nvidia.com/gpu." -> "nvidia.com/gpu" (the name never ends in a dot).
_INSUFFICIENT_RE: Final = re.compile(r"Insufficient ([A-Za-z0-9](?:[A-Za-z0-9./_-]*[A-Za-z0-9])?)")
_CUDA_COND_RE: Final = re.compile(r"unsatisfied condition: cuda\s*>=\s*(\d+\.\d+)")
_DRIVER_MAX_RE: Final = re.compile(
    r"(?:CUDA Version:\s*|driver supports (?:up to )?CUDA\s*|cuda=)(\d+\.\d+)", re.IGNORECASE
)
_NVML_RE: Final = re.compile(
    r"could not load NVML|libnvidia-ml\.so[.\d]*: cannot open|Failed to initialize NVML|"
    r"ERROR_LIBRARY_NOT_FOUND|NVML library not found",
    re.IGNORECASE,
)
_DCGM_PROFILING_RE: Final = re.compile(
    r"Profiling module returned an unrecoverable error|profiling.*not supported|"
    r"DCGM_FR_PROF|DCP metrics.*not supported",
    re.IGNORECASE,
)
_CRASH_REASONS: Final = frozenset(
    {
        "CrashLoopBackOff",
        "Error",
        "RunContainerError",
        "CreateContainerError",
        "CreateContainerConfigError",
        "StartError",
        "ContainerCannotRun",
        "OOMKilled",
    }
)
_PULL_REASONS: Final = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
_CREATING_REASONS: Final = frozenset({"ContainerCreating", "PodInitializing"})


def _container_image(pod: Json, container: str) -> str | None:
    spec = pod.get("spec") or {}
    for c in list(spec.get("initContainers") or []) + list(spec.get("containers") or []):
        if c.get("name") == container:
            image = c.get("image")
            return str(image) if image else None
    return None


def _status_texts(cs: Json) -> list[str]:
    texts = []
    for path in (
        ("state", "waiting", "message"),
        ("state", "terminated", "message"),
        ("lastState", "terminated", "message"),
        ("state", "terminated", "reason"),
        ("lastState", "terminated", "reason"),
    ):
        value = _get(cs, *path)
        if value:
            texts.append(str(value))
    return texts


def _cuda_diagnosis(
    ctx: _Ctx, pod: Json, container: str, texts: Sequence[str], rank: int
) -> tuple[Diagnosis, int] | None:
    match = None
    evidence = ""
    for text in texts:
        match = _CUDA_COND_RE.search(text)
        if match:
            evidence = text
            break
    if match is None:
        return None
    need = match.group(1)
    image = _container_image(pod, container) or "?"
    image_cuda = cuda.image_cuda_version(image) or need
    max_match = _DRIVER_MAX_RE.search(evidence)
    host_max = max_match.group(1) if max_match else ctx.host_max_cuda
    parts = [f"image {image} needs CUDA >= {need}"]
    if image_cuda != need:
        parts.append(f"(its tag says CUDA {image_cuda})")
    if host_max:
        parts.append(f"but the host driver supports CUDA <= {host_max}")
    else:
        parts.append("but the host driver supports an older CUDA (max unknown here)")
    reason = " ".join(parts)
    fixes = []
    tag = cuda.newest_fitting_tag(image, host_max) if host_max else None
    if tag:
        fixes.append(
            f"use an image that fits the driver: {tag} (pulumi config set smokeImage {tag} && pulumi up)"
        )
    elif host_max:
        fixes.append(f"use an image built for CUDA <= {host_max} (check the baseline card's max CUDA)")
    else:
        fixes.append(
            "read the driver's max CUDA (nvidia-smi header 'CUDA Version', baseline card) and "
            "pick an image tag at or below it"
        )
    with contextlib.suppress(KeyError, ValueError):  # a CUDA newer than the table knows
        fixes.append(f"or upgrade the host driver to >= {cuda.min_driver_for(need)}")
    diag = Diagnosis(
        row="cuda-image-newer-than-driver",
        object=_pod_obj(pod, container),
        reason=reason,
        detail=_one_line(evidence),
        fix="; ".join(fixes),
        variant=f"cuda-{need}",
    )
    return diag, rank


def _validator_fix(ns: str, pod: str, container: str) -> str:
    logs = f"kubectl -n {ns} logs {pod} -c {container}"
    hints = {
        "driver-validation": (
            "driver.enabled=false, so it validates the host driver: check the node sees it "
            "(minikube -p {profile} ssh -- nvidia-smi); if the log mentions symlinks or "
            "/dev/char, set validator.driver.env DISABLE_DEV_CHAR_SYMLINK_CREATION=true"
        ),
        "toolkit-validation": (
            f"waits for the toolkit: kubectl -n {ns} logs -l app=nvidia-container-toolkit-daemonset"
            " --all-containers --tail=50"
        ),
        "cuda-validation": (f"check the CUDA workload pod: kubectl -n {ns} get pods | grep cuda-validator"),
        "plugin-validation": (
            f"check the device plugin: kubectl -n {ns} logs -l app=nvidia-device-plugin-daemonset --tail=50"
        ),
    }
    hint = hints.get(container)
    return f"{logs}; {hint}" if hint else logs


def _init_blocked(ctx: _Ctx, pod: Json, role: str, cs: Json) -> tuple[Diagnosis, int]:
    """An init container that has not completed (running, or waiting to start)."""
    cname = str(cs.get("name") or "?")
    ns, name = _ns(pod), _name(pod)
    state = cs.get("state") or {}
    if "running" in state:
        since = _get(state, "running", "startedAt")
        how = f"running since {since}" if since else "running"
    else:
        how = f"waiting ({_get(state, 'waiting', 'reason') or 'not started'})"
    line = _last_line(ctx.log(pod, cname)) or "(no log line given)"
    fix = _validator_fix(ns, name, cname).replace("{profile}", ctx.profile)
    if role == "validator":
        rank = {
            "driver-validation": _ROLE_RANK["validator-driver"],
            "toolkit-validation": _ROLE_RANK["validator-toolkit"],
        }.get(cname, _ROLE_RANK["validator"])
        return (
            Diagnosis(
                row="validator-stuck",
                object=_pod_obj(pod, cname),
                reason=f"validator init container {cname} has not completed: {how}",
                detail=f"last log line: {line}",
                fix=fix,
                variant=cname,
            ),
            rank,
        )
    blocking = role != "dcgm-exporter"
    return (
        Diagnosis(
            row="pod-init-waiting",
            object=_pod_obj(pod, cname),
            reason=f"init container {cname} has not completed: {how} (it usually waits for "
            "an earlier component; fix that one first)",
            detail=f"last log line: {line}",
            fix=fix,
            blocking=blocking,
            variant=cname,
        ),
        _ROLE_RANK.get(role, _ROLE_RANK["operand"]) + (0 if blocking else _NON_BLOCKING_RANK),
    )


def _crash_diagnosis(
    ctx: _Ctx, pod: Json, role: str, cs: Json, reason: str, events: Sequence[Json]
) -> tuple[Diagnosis, int]:
    cname = str(cs.get("name") or "?")
    ns, name = _ns(pod), _name(pod)
    log = ctx.log(pod, cname)
    texts = [log, *_status_texts(cs), *(str(e.get("message") or "") for e in events)]
    restarts = int(cs.get("restartCount") or 0)
    last_term = _get(cs, "lastState", "terminated") or _get(cs, "state", "terminated") or {}
    exit_code = last_term.get("exitCode")
    line = _last_line(log) or _last_line(str(last_term.get("message") or "")) or ""
    evidence = f"last log line: {line}" if line else "no log line given"
    summary = f"{reason}, {restarts} restart(s)" + (
        f", last exit code {exit_code}" if exit_code is not None else ""
    )
    prev_logs = f"kubectl -n {ns} logs {name} -c {cname} --previous"
    rank = _ROLE_RANK.get(role, _ROLE_RANK["workload"])

    if role == "device-plugin":
        nvml = next((m for t in texts if (m := _NVML_RE.search(t))), None)
        if nvml is not None:
            nvml_line = next((t for t in log.splitlines() if _NVML_RE.search(t)), "")
            return (
                Diagnosis(
                    row="device-plugin-crashloop",
                    object=_pod_obj(pod, cname),
                    reason=f"device plugin cannot load NVML ({summary}): the container runtime "
                    "does not inject the driver libraries into the plugin's container",
                    detail=_one_line(nvml_line or evidence),
                    fix="on the host: sudo nvidia-ctk runtime configure --runtime=docker && "
                    "sudo systemctl restart docker; prove it with docker run --rm --gpus all "
                    f"{DEFAULT_PROBE_IMAGE} nvidia-smi; then restart the node "
                    f"(minikube -p {ctx.profile} stop && pulumi up) and check "
                    f"kubectl -n {ns} logs -l app=nvidia-device-plugin-daemonset",
                    variant="nvml-not-injected",
                ),
                rank,
            )
        return (
            Diagnosis(
                row="device-plugin-crashloop",
                object=_pod_obj(pod, cname),
                reason=f"device plugin keeps restarting ({summary})",
                detail=_one_line(evidence),
                fix=f"{prev_logs}; check the node sees the GPU: minikube -p {ctx.profile} ssh -- nvidia-smi",
                variant="other",
            ),
            rank,
        )
    if role == "dcgm-exporter":
        prof = any(_DCGM_PROFILING_RE.search(t) for t in texts)
        return (
            Diagnosis(
                row="dcgm-exporter-failing",
                object=_pod_obj(pod, cname),
                reason=f"DCGM exporter failing ({summary})"
                + (": profiling metrics not supported on this GPU" if prof else "")
                + "; the lab does not need it (metrics only), so it is reported, not blocking",
                detail=_one_line(evidence),
                fix=f"{prev_logs}; "
                + (
                    "drop the DCGM_FI_PROF_* (profiling) metrics from the exporter's metrics CSV, or "
                    if prof
                    else ""
                )
                + "switch the exporter off: pulumi config set dcgmExporter false && pulumi up",
                blocking=False,
                variant="profiling-unsupported" if prof else "other",
            ),
            _ROLE_RANK["operand"] + _NON_BLOCKING_RANK,
        )
    return (
        Diagnosis(
            row="pod-crashloop",
            object=_pod_obj(pod, cname),
            reason=f"container {cname} is failing ({summary})",
            detail=_one_line(evidence),
            fix=f"{prev_logs}; kubectl -n {ns} describe pod {name}",
            variant=reason,
        ),
        rank,
    )


def _unschedulable(pod: Json, events: Sequence[Json]) -> Json | None:
    """The scheduling failure message of a Pending, unbound pod, or None."""
    if _get(pod, "status", "phase") != "Pending" or _get(pod, "spec", "nodeName"):
        return None
    failed = [e for e in events if e.get("reason") == "FailedScheduling"]
    if failed:
        return failed[-1]
    for cond in _get(pod, "status", "conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return {"message": cond.get("message") or cond.get("reason") or "Unschedulable"}
    return None


def _node_fix(ctx: _Ctx) -> str:
    return (
        "give the node >= 4 CPUs / 8 GiB (minikube start --cpus 4 --memory 8g): "
        "pulumi config set cpus 4 && pulumi config set memoryMiB 8192 && pulumi up "
        "(minikube cannot resize a profile, so the cluster is re-created); "
        f"see who holds the node: kubectl describe node; minikube -p {ctx.profile} ssh -- nproc"
    )


def _pod_diagnoses(ctx: _Ctx, pod: Json, gpu_pending: list[tuple[Json, str]]) -> list[tuple[Diagnosis, int]]:
    """Diagnoses for one pod as ``(Diagnosis, rank)`` pairs."""
    phase = _get(pod, "status", "phase")
    if phase == "Succeeded" or _get(pod, "metadata", "deletionTimestamp"):
        return []
    role = _role(pod)
    ns, name = _ns(pod), _name(pod)
    events = ctx.pod_events(pod)
    rank = _ROLE_RANK.get(role, _ROLE_RANK["workload"])
    non_blocking = role == "dcgm-exporter"

    unsched = _unschedulable(pod, events)
    if unsched is not None:
        msg = str(unsched.get("message") or "")
        short = set(_INSUFFICIENT_RE.findall(msg))
        if GPU_RESOURCE in short:
            gpu_pending.append((pod, msg))
            return []
        if short & {"cpu", "memory"}:
            row = "operator-pending" if role != "workload" else "pod-unschedulable"
            return [
                (
                    Diagnosis(
                        row=row,
                        object=_pod_obj(pod),
                        reason="Pending: the node has too little "
                        + " and ".join(sorted(short & {"cpu", "memory"}))
                        + " for it (the GPU Operator's pods need >= 4 CPUs / 8 GiB in all)",
                        detail=_one_line(msg),
                        fix=_node_fix(ctx),
                        blocking=not non_blocking,
                        variant="insufficient-" + "-".join(sorted(short & {"cpu", "memory"})),
                    ),
                    rank + (_NON_BLOCKING_RANK if non_blocking else 0),
                )
            ]
        return [
            (
                Diagnosis(
                    row="pod-unschedulable",
                    object=_pod_obj(pod),
                    reason="Pending: the scheduler finds no node for it",
                    detail=_one_line(msg),
                    fix=f"kubectl -n {ns} describe pod {name}; compare its nodeSelector, "
                    "affinity and tolerations with kubectl get nodes --show-labels and "
                    "kubectl describe node | grep -i taint",
                    blocking=not non_blocking,
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
        ]

    out: list[tuple[Diagnosis, int]] = []
    event_texts = [str(e.get("message") or "") for e in events]

    # Init containers run in order: the first one not terminated with exit 0 is where the
    # pod is; the ones after it have not started yet.
    for cs in _get(pod, "status", "initContainerStatuses") or []:
        term = _get(cs, "state", "terminated")
        if term is not None and term.get("exitCode") == 0:
            continue
        waiting_reason = _get(cs, "state", "waiting", "reason")
        cuda_hit = _cuda_diagnosis(ctx, pod, str(cs.get("name")), [*_status_texts(cs), *event_texts], rank)
        if cuda_hit is not None:
            out.append(cuda_hit)
        elif waiting_reason in _CRASH_REASONS or (term is not None and term.get("exitCode")):
            out.append(_crash_diagnosis(ctx, pod, role, cs, waiting_reason or "Error", events))
        elif waiting_reason in _PULL_REASONS:
            out.append(_pull_diagnosis(pod, role, cs, rank))
        else:
            out.append(_init_blocked(ctx, pod, role, cs))
        return out

    for cs in _get(pod, "status", "containerStatuses") or []:
        cname = str(cs.get("name") or "?")
        waiting = _get(cs, "state", "waiting") or {}
        wreason = waiting.get("reason")
        term = _get(cs, "state", "terminated")
        cuda_hit = _cuda_diagnosis(ctx, pod, cname, [*_status_texts(cs), *event_texts], rank)
        if cuda_hit is not None:
            out.append(cuda_hit)
            continue
        if wreason in _PULL_REASONS:
            out.append(_pull_diagnosis(pod, role, cs, rank))
        elif wreason in _CRASH_REASONS:
            out.append(_crash_diagnosis(ctx, pod, role, cs, str(wreason), events))
        elif term is not None and term.get("exitCode") not in (0, None):
            out.append(_crash_diagnosis(ctx, pod, role, cs, "Terminated", events))
        elif wreason in _CREATING_REASONS:
            out.append(_creating_diagnosis(ctx, pod, role, cname, events, rank))
        elif _get(cs, "state", "running") is not None and cs.get("ready") is False and role != "workload":
            line = _last_line(ctx.log(pod, cname)) or "(no log line given)"
            out.append(
                (
                    Diagnosis(
                        row="pod-not-ready",
                        object=_pod_obj(pod, cname),
                        reason="Running but not Ready (its readiness probe fails)",
                        detail=f"last log line: {line}",
                        fix=f"kubectl -n {ns} describe pod {name}; kubectl -n {ns} logs {name} -c {cname}",
                        blocking=not non_blocking,
                    ),
                    rank + (_NON_BLOCKING_RANK if non_blocking else 0),
                )
            )
    if out:
        return out

    # Bound but no container status yet: sandbox creation or volume problems show as events.
    statuses = _get(pod, "status", "containerStatuses") or []
    if not statuses and phase == "Pending" and _get(pod, "spec", "nodeName"):
        return [_creating_diagnosis(ctx, pod, role, None, events, rank)]
    if phase == "Failed":
        reason = _get(pod, "status", "reason") or "Failed"
        message = _get(pod, "status", "message") or ""
        gpu_admission = "nvidia.com/gpu" in str(message) or reason == "UnexpectedAdmissionError"
        return [
            (
                Diagnosis(
                    row="pod-failed",
                    object=_pod_obj(pod),
                    reason=f"phase Failed ({reason})",
                    detail=_one_line(str(message) or "no status message"),
                    fix=(
                        "the kubelet refused the GPU at admission (devices unhealthy or gone): "
                        f"kubectl -n {ns} logs -l app=nvidia-device-plugin-daemonset --tail=50;"
                        f" minikube -p {ctx.profile} ssh -- nvidia-smi; "
                        if gpu_admission
                        else ""
                    )
                    + f"kubectl -n {ns} describe pod {name}; delete it and re-run (pulumi up)",
                    blocking=not non_blocking,
                    variant=str(reason),
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
        ]
    return out


def _pull_diagnosis(pod: Json, role: str, cs: Json, rank: int) -> tuple[Diagnosis, int]:
    cname = str(cs.get("name") or "?")
    image = cs.get("image") or _container_image(pod, cname) or "?"
    message = _get(cs, "state", "waiting", "message") or ""
    non_blocking = role == "dcgm-exporter"
    return (
        Diagnosis(
            row="image-pull-failed",
            object=_pod_obj(pod, cname),
            reason=f"image {image} cannot be pulled ({_get(cs, 'state', 'waiting', 'reason')})",
            detail=_one_line(str(message) or "no message"),
            fix=f"check the tag exists and the registry is reachable from the node "
            f"(minikube ssh -- docker pull {image}); offline: load it into the node with "
            f"minikube image load {image}",
            blocking=not non_blocking,
        ),
        rank + (_NON_BLOCKING_RANK if non_blocking else 0),
    )


def _creating_diagnosis(
    ctx: _Ctx,
    pod: Json,
    role: str,
    container: str | None,
    events: Sequence[Json],
    rank: int,
) -> tuple[Diagnosis, int]:
    ns, name = _ns(pod), _name(pod)
    warnings = [e for e in events if e.get("type") == "Warning"]
    evidence = (
        _one_line(f"{warnings[-1].get('reason')}: {warnings[-1].get('message')}")
        if warnings
        else "no warning event"
    )
    toolkit = ctx.daemonset("nvidia-container-toolkit-daemonset")
    non_blocking = role == "dcgm-exporter"
    row = "smoke-container-creating" if role == "workload" else "pod-container-creating"
    if toolkit is not None:
        desired, ready = _ds_ready(toolkit)
        tk_ns = _ns(toolkit)
        if desired == 0 or ready < desired:
            tk_pods = [p for p in ctx.pods if _role(p) == "toolkit"]
            tk_line = ""
            for p in tk_pods:
                for cs in (_get(p, "status", "containerStatuses") or []) + (
                    _get(p, "status", "initContainerStatuses") or []
                ):
                    tk_line = tk_line or _last_line(ctx.log(p, str(cs.get("name"))))
            detail = (
                f"DaemonSet {tk_ns}/nvidia-container-toolkit-daemonset ready {ready}/{desired}"
                + (f"; toolkit last log line: {tk_line}" if tk_line else "")
                + f"; pod event: {evidence}"
            )
            return (
                Diagnosis(
                    row=row,
                    object=_pod_obj(pod, container),
                    reason="stuck in ContainerCreating: the container toolkit is not ready, so "
                    "the runtime cannot inject the GPU yet",
                    detail=detail,
                    fix=f"kubectl -n {tk_ns} logs -l app=nvidia-container-toolkit-daemonset "
                    f"--all-containers --tail=50; wait for the toolkit: kubectl -n {tk_ns} "
                    "rollout status ds/nvidia-container-toolkit-daemonset --timeout=10m; then "
                    f"re-create the pod (kubectl -n {ns} delete pod {name}; pulumi up)",
                    blocking=not non_blocking,
                    variant="toolkit-not-ready",
                ),
                rank + (_NON_BLOCKING_RANK if non_blocking else 0),
            )
    return (
        Diagnosis(
            row=row,
            object=_pod_obj(pod, container),
            reason="stuck in ContainerCreating"
            + (" with the toolkit ready: the runtime configuration conflicts" if toolkit is not None else ""),
            detail=evidence,
            fix=f"kubectl -n {ns} describe pod {name} (Events); check the node's runtime: "
            f"minikube -p {ctx.profile} ssh -- docker info | grep -i runtime; "
            "kubectl -n gpu-operator logs -l app=nvidia-container-toolkit-daemonset --tail=50",
            blocking=not non_blocking,
            variant="runtime",
        ),
        rank + (_NON_BLOCKING_RANK if non_blocking else 0),
    )


def _node_ready(node: Json) -> tuple[bool, str]:
    for cond in _get(node, "status", "conditions") or []:
        if cond.get("type") == "Ready":
            ok = cond.get("status") == "True"
            return ok, str(cond.get("message") or cond.get("reason") or "")
    return True, ""


def _allocatable_diagnoses(
    ctx: _Ctx, expected_gpus: int | None, gpu_pending: list[tuple[Json, str]]
) -> list[tuple[Diagnosis, int]]:
    if not ctx.nodes:
        return []
    out: list[tuple[Diagnosis, int]] = []
    rank = _ROLE_RANK["allocatable"]
    alloc: dict[str, int] = {}
    cap: dict[str, int] = {}
    for n in ctx.nodes:
        a = (_get(n, "status", "allocatable") or {}).get(GPU_RESOURCE)
        c = (_get(n, "status", "capacity") or {}).get(GPU_RESOURCE)
        if a is not None:
            alloc[_name(n)] = _quantity(a)
        if c is not None:
            cap[_name(n)] = _quantity(c)
    node_names = ", ".join(_name(n) for n in ctx.nodes)
    obj = f"node {node_names}" if len(ctx.nodes) == 1 else f"nodes {node_names}"
    plugin = next((d for d in ctx.daemonsets if _name(d).startswith("nvidia-device-plugin")), None)
    plugin_state = ""
    plugin_ns = "gpu-operator"
    if plugin is not None:
        desired, ready = _ds_ready(plugin)
        plugin_ns = _ns(plugin)
        plugin_state = f"DaemonSet {plugin_ns}/{_name(plugin)} ready {ready}/{desired}"
    pending_note = "".join(f"; pod {_ns(p)}/{_name(p)} Pending: {_one_line(m, 200)}" for p, m in gpu_pending)
    check_node = f"minikube -p {ctx.profile} ssh -- nvidia-smi"
    plugin_logs = f"kubectl -n {plugin_ns} logs -l app=nvidia-device-plugin-daemonset --tail=50"
    total_alloc = sum(alloc.values())
    total_cap = sum(cap.values())
    if not alloc:
        out.append(
            (
                Diagnosis(
                    row="allocatable-zero",
                    object=obj,
                    reason=f"device plugin not registered: no node has {GPU_RESOURCE} in status.allocatable",
                    detail=(plugin_state or "no device-plugin DaemonSet given") + pending_note,
                    fix=f"check the node sees the GPU: {check_node}; then the device plugin's "
                    f"log: {plugin_logs}",
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
                        f"look for XID errors on the host: sudo dmesg | grep -i xid; "
                        f"nvidia-smi -q | grep -i -A2 -E 'xid|retired|remapp'; {plugin_logs} "
                        "(it logs 'unhealthy'); a GPU that keeps failing needs a host reset "
                        "or reboot"
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
                    reason=f"allocatable {GPU_RESOURCE} is {total_alloc}, expected {expected_gpus}",
                    detail=f"capacity {total_cap}; " + (plugin_state or ""),
                    fix=(
                        f"some GPUs are missing or unhealthy: {check_node}; {plugin_logs}"
                        if fewer
                        else "more than expected: is time-slicing on? expected = GPUs x "
                        "replicas (pulumi config get timeSlicingReplicas)"
                    ),
                    variant="fewer" if fewer else "more",
                ),
                rank + 1,
            )
        )
    if total_alloc > 0:
        holders = gpu_holders(ctx.pods)
        for pod, msg in gpu_pending:
            want = gpu_request(pod)
            mine = f"{_ns(pod)}/{_name(pod)}"
            others = [(h, c) for h, c in holders if h != mine]
            held = sum(c for _, c in others)
            who = ", ".join(f"{h} holds {c}" for h, c in others)
            if want > total_alloc:
                reason = (
                    f"asks for {want} {GPU_RESOURCE}, more than the {total_alloc} allocatable "
                    f"(held now: {who or 'none'})"
                )
                fix = f"lower the pod's nvidia.com/gpu limit to <= {total_alloc}"
                variant = "request-too-large"
            elif others:
                reason = (
                    f"asks for {want} {GPU_RESOURCE} but {held} of {total_alloc} allocatable are held: {who}"
                )
                first = others[0][0].split("/", 1)
                fix = (
                    f"free a GPU: wait for or delete the holder (kubectl -n {first[0]} delete "
                    f"pod {first[1]}), or share the GPU (time-slicing: pulumi config set "
                    "timeSlicingReplicas 2)"
                )
                variant = "held-by-pods"
            else:
                reason = (
                    f"asks for {want} {GPU_RESOURCE}; {total_alloc} allocatable and none held "
                    "by other pods (a stale FailedScheduling event, or a GPU just freed)"
                )
                fix = "wait for the scheduler's next attempt: kubectl get events -w"
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


def _daemonset_diagnoses(ctx: _Ctx, found: Sequence[Diagnosis]) -> list[tuple[Diagnosis, int]]:
    out: list[tuple[Diagnosis, int]] = []
    for ds in ctx.daemonsets:
        name, ns = _name(ds), _ns(ds)
        if name.startswith(_OPTIONAL_DAEMONSETS):
            continue
        desired, ready = _ds_ready(ds)
        non_blocking = _role_of_name(name) == "dcgm-exporter"
        extra = _NON_BLOCKING_RANK if non_blocking else 0
        obj = f"daemonset {ns}/{name}"
        if desired == 0:
            selector = _get(ds, "spec", "template", "spec", "nodeSelector") or {}
            affinity = _get(ds, "spec", "template", "spec", "affinity", "nodeAffinity")
            wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
            missing: list[str] = []
            for node in ctx.nodes:
                labels = _get(node, "metadata", "labels") or {}
                lacks = [f"{k}={v}" for k, v in sorted(selector.items()) if labels.get(k) != v]
                if lacks:
                    missing.append(f"node {_name(node)} lacks {', '.join(lacks)}")
            reason = (
                f"no node matches its nodeSelector {wanted}"
                if wanted
                else "no node matches its node affinity"
                if affinity
                else "it schedules on no node"
            )
            label_fix = (
                "; ".join(
                    f"kubectl label node {_name(n)} {k}={v}"
                    for n in ctx.nodes[:1]
                    for k, v in sorted(selector.items())
                )
                if selector
                else ""
            )
            out.append(
                (
                    Diagnosis(
                        row="daemonset-no-nodes",
                        object=obj,
                        reason=f"desiredNumberScheduled is 0: {reason}",
                        detail="; ".join(missing) or (str(affinity) if affinity else "no nodes given"),
                        fix="kubectl get nodes --show-labels; GPU labels come from NFD and the "
                        f"operator: kubectl -n {ns} get pods -l "
                        "app.kubernetes.io/name=node-feature-discovery"
                        + (f"; to test by hand: {label_fix}" if label_fix else ""),
                        blocking=not non_blocking,
                        variant=name,
                    ),
                    _ROLE_RANK["daemonset"] + extra,
                )
            )
        elif ready < desired:
            prefix = f"pod {ns}/{name}-"
            if any(d.object.startswith(prefix) for d in found):
                continue
            ds_events = [
                e
                for e in ctx.events
                if _get(e, "involvedObject", "kind") == "DaemonSet"
                and _get(e, "involvedObject", "name") == name
            ]
            ds_events.sort(key=_event_time)
            evidence = (
                f"{ds_events[-1].get('reason')}: {ds_events[-1].get('message')}"
                if ds_events
                else "no pod or event of it given"
            )
            role = _role_of_name(name)
            out.append(
                (
                    Diagnosis(
                        row="daemonset-not-ready",
                        object=obj,
                        reason=f"{ready}/{desired} pods ready",
                        detail=_one_line(evidence),
                        fix=f"kubectl -n {ns} describe ds {name}; kubectl -n {ns} get pods -o wide "
                        f"| grep {name}",
                        blocking=not non_blocking,
                    ),
                    _ROLE_RANK.get(role, _ROLE_RANK["operand"]) + extra,
                )
            )
    return out


def _creation(obj: Json) -> str:
    return str(_get(obj, "metadata", "creationTimestamp") or "")


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

    Returns:
        Diagnoses ordered along the dependency chain (module docstring), blocking before
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
    )
    pairs: list[tuple[Diagnosis, int]] = []
    for node in ctx.nodes:
        ok, why = _node_ready(node)
        if not ok:
            pairs.append(
                (
                    Diagnosis(
                        row="node-not-ready",
                        object=f"node {_name(node)}",
                        reason="node condition Ready is not True",
                        detail=_one_line(why or "no message"),
                        fix=f"kubectl describe node {_name(node)}; minikube -p {profile} status; "
                        f"minikube -p {profile} logs | tail -50",
                    ),
                    _ROLE_RANK["node"],
                )
            )
    gpu_pending: list[tuple[Json, str]] = []
    for pod in ctx.pods:
        pairs.extend(_pod_diagnoses(ctx, pod, gpu_pending))
    pairs.extend(_daemonset_diagnoses(ctx, [d for d, _ in pairs]))
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


def render(diags: Sequence[Diagnosis]) -> str:
    """Plain-text report: one block per diagnosis, numbered in order; a sentence when empty.

    Block::

        [1] allocatable-zero (not-registered), blocking
            object: node minikube
            reason: ...
            detail: ...
            fix:    ...
    """
    if not diags:
        return (
            "diagnosis: no problem found in the pods, events, DaemonSets and nodes given "
            "(if a wait still timed out, the components may only be slow: image pulls)"
        )
    blocks = []
    for i, d in enumerate(diags, 1):
        head = f"[{i}] {d.row}" + (f" ({d.variant})" if d.variant else "")
        head += ", blocking" if d.blocking else ", not blocking (reported only)"
        blocks.append(
            "\n".join(
                [
                    head,
                    f"    object: {d.object}",
                    f"    reason: {d.reason}",
                    f"    detail: {d.detail}",
                    f"    fix:    {d.fix}",
                ]
            )
        )
    return "\n".join(blocks)


# --- Helm ----------------------------------------------------------------------------------

_EXISTS_RE: Final = re.compile(r'(?P<kind>[A-Za-z]+) "(?P<name>[^"]+)" in namespace "(?P<ns>[^"]*)" exists')
_KUBEVERSION_RE: Final = re.compile(
    r"chart requires kubeVersion: (?P<want>\S+) which is incompatible with Kubernetes "
    r"(?P<have>\S+)"
)


def diagnose_helm_error(
    message: str,
    namespace: str = "gpu-operator",
    release: str = "gpu-operator",
    *,
    pods: Sequence[Json] | None = None,
    events: Sequence[Json] | None = None,
    daemonsets: Sequence[Json] | None = None,
    nodes: Sequence[Json] | None = None,
    logs: Mapping[str, str] | None = None,
    host_max_cuda: str | None = None,
) -> Diagnosis | None:
    """Map a Helm error message (install/upgrade output) to a diagnosis, or None if unknown.

    Rows: ``helm-name-in-use`` (``cannot re-use a name that is still in use``: an earlier
    failed release; the fix is the exact ``helm uninstall`` command, then ``pulumi up``),
    ``helm-operation-in-progress``, ``helm-resource-exists`` (objects left by an earlier
    install, typically the CRDs, which ``helm uninstall`` keeps), ``helm-kube-version``,
    ``helm-cluster-unreachable``, ``helm-chart-unreachable`` and ``helm-timeout``
    (``context deadline exceeded`` / ``timed out waiting for the condition``).

    For a timeout, pass the cluster state (same arguments as :func:`diagnose_cluster`): the
    diagnosis then names the first blocking object that was not ready and carries its fix,
    instead of only "timed out".
    """
    text = message.strip()
    first_line = _one_line(_last_line(text) if "Error:" not in text else text, 500)
    obj = f"helm release {namespace}/{release}"
    again = "then pulumi up again"
    if "cannot re-use a name that is still in use" in text:
        return Diagnosis(
            row="helm-name-in-use",
            object=obj,
            reason="a release of that name exists from an earlier, failed install",
            detail=first_line,
            fix=f"helm -n {namespace} status {release}; helm uninstall {release} -n {namespace}; {again}",
        )
    if "another operation (install/upgrade/rollback) is in progress" in text:
        return Diagnosis(
            row="helm-operation-in-progress",
            object=obj,
            reason="the release is stuck in a pending state from an interrupted run",
            detail=first_line,
            fix=f"helm -n {namespace} history {release}; helm -n {namespace} rollback {release} "
            f"(to the last deployed revision) or helm uninstall {release} -n {namespace}; {again}",
        )
    m = _EXISTS_RE.search(text)
    if m and "exists and cannot be imported" in text:
        kind, name, ns = m.group("kind"), m.group("name"), m.group("ns")
        where = f" -n {ns}" if ns else ""
        crd = kind == "CustomResourceDefinition"
        return Diagnosis(
            row="helm-resource-exists",
            object=f"{kind.lower()} {ns + '/' if ns else ''}{name}",
            reason="left over from an earlier install"
            + (" (helm uninstall keeps CRDs unless operator.cleanupCRD=true)" if crd else ""),
            detail=first_line,
            fix=f"kubectl delete {kind.lower()}{where} {name}"
            + (" (this also deletes every object of that kind)" if crd else "")
            + f"; {again}",
        )
    m = _KUBEVERSION_RE.search(text)
    if m:
        return Diagnosis(
            row="helm-kube-version",
            object=obj,
            reason=f"the chart requires Kubernetes {m.group('want')}, the cluster reports {m.group('have')}",
            detail=first_line,
            fix="pick a chart version that supports this Kubernetes (pulumi config set "
            "chartVersion ...) or a Kubernetes the chart supports (pulumi config set "
            "kubernetesVersion ...); a self-built control plane must stamp its version",
        )
    if "Kubernetes cluster unreachable" in text:
        return Diagnosis(
            row="helm-cluster-unreachable",
            object=obj,
            reason="Helm cannot reach the API server",
            detail=first_line,
            fix="minikube -p gpu-lab status; kubectl --context gpu-lab get nodes; "
            "pulumi refresh && pulumi up if the cluster was deleted outside Pulumi",
        )
    if re.search(r"context deadline exceeded|timed out waiting for the condition", text):
        return _helm_timeout(text, namespace, release, pods, events, daemonsets, nodes, logs, host_max_cuda)
    if re.search(
        r"failed to (?:fetch|download)|no such host|could not find protocol|"
        r"repo .* not found|chart .* not found|x509:",
        text,
        re.IGNORECASE,
    ):
        return Diagnosis(
            row="helm-chart-unreachable",
            object=obj,
            reason="the chart cannot be downloaded from its repository",
            detail=first_line,
            fix="check the network to https://helm.ngc.nvidia.com/nvidia; offline, install "
            "from a local copy: pulumi config set chartPath <dir of the gpu-operator chart> "
            f"(or export GPULAB_CHART_PATH); {again}",
        )
    return None


def _helm_timeout(
    text: str,
    namespace: str,
    release: str,
    pods: Sequence[Json] | None,
    events: Sequence[Json] | None,
    daemonsets: Sequence[Json] | None,
    nodes: Sequence[Json] | None,
    logs: Mapping[str, str] | None,
    host_max_cuda: str | None,
) -> Diagnosis:
    obj = f"helm release {namespace}/{release}"
    line = _one_line(text, 300)
    cleanup = (
        "then pulumi up again (if it then says 'cannot re-use a name': "
        f"helm uninstall {release} -n {namespace})"
    )
    if pods is None and events is None and daemonsets is None and nodes is None:
        return Diagnosis(
            row="helm-timeout",
            object=obj,
            reason="Helm's wait timed out before the release's pods were ready",
            detail=line,
            fix=f"find the pod that is not ready: kubectl -n {namespace} get pods; kubectl -n "
            f"{namespace} describe pod <it>; {cleanup}",
            variant="no-cluster-state",
        )
    found = diagnose_cluster(
        pods=pods or [],
        events=events or [],
        daemonsets=daemonsets or [],
        nodes=nodes or [],
        logs=logs,
        host_max_cuda=host_max_cuda,
    )
    blocking = [d for d in found if d.blocking]
    if not blocking:
        return Diagnosis(
            row="helm-timeout",
            object=obj,
            reason="Helm's wait timed out but no failing object was found: the pods were "
            "probably only slow (image pulls on a first install)",
            detail=line,
            fix="raise the wait: pulumi config set operatorTimeoutSeconds 1200; " + cleanup,
            variant="slow",
        )
    first = blocking[0]
    return replace(
        first,
        row="helm-timeout",
        reason=f"Helm's wait timed out; first not-ready object: {first.reason}",
        detail=f"[{first.row}] {first.detail}; helm: {line}",
        fix=f"{first.fix}; {cleanup}",
        variant=first.row,
    )


# --- minikube start ------------------------------------------------------------------------

_MINIKUBE_GPU_RE: Final = re.compile(
    r'could not select device driver ".*" with capabilities: \[\[gpu\]\]|'
    r"unknown or invalid runtime name: nvidia|nvidia-container-cli|nvidia-container-runtime|"
    r"Error response from daemon:.*nvidia",
    re.IGNORECASE,
)
_MINIKUBE_DOCKER_DOWN_RE: Final = re.compile(
    r"Cannot connect to the Docker daemon|PROVIDER_DOCKER_NOT_RUNNING|docker daemon.*not running",
    re.IGNORECASE,
)
_MINIKUBE_RESOURCES_RE: Final = re.compile(
    r"RSRC_INSUFFICIENT|Requested (?:cpu count|memory allocation).*(?:greater|more) than",
    re.IGNORECASE,
)


def diagnose_minikube_start(
    stderr: str, *, profile: str = DEFAULT_PROFILE, image: str = DEFAULT_PROBE_IMAGE
) -> Diagnosis:
    """Diagnose a failed ``minikube start`` from its stderr (row ``minikube-start-failed``).

    Variants: ``docker-gpu-runtime`` (Docker cannot give containers a GPU: ``could not
    select device driver "" with capabilities: [[gpu]]``, ``unknown or invalid runtime name:
    nvidia``, ``docker: Error response from daemon: ... nvidia``), ``docker-not-running``,
    ``insufficient-resources`` and ``unknown``. The chapter's first reaction for GPU errors
    (and for anything unrecognised) is to redo the Docker nvidia runtime configuration and
    prove it with ``docker run --rm --gpus all <image> nvidia-smi``. Always returns a
    diagnosis; ``detail`` quotes the matching line (or the last non-empty one).
    """
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]

    def line_for(pattern: re.Pattern[str]) -> str | None:
        return next((line for line in lines if pattern.search(line)), None)

    obj = f"minikube profile {profile}"
    prove = f"docker run --rm --gpus all {image} nvidia-smi"
    redo = (
        "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker; "
        f"prove it: {prove}; then minikube delete -p {profile} and pulumi up"
    )
    hit = line_for(_MINIKUBE_GPU_RE)
    if hit is not None:
        return Diagnosis(
            row="minikube-start-failed",
            object=obj,
            reason="Docker cannot hand a GPU to a container: its nvidia runtime is not "
            "configured, or Docker was not restarted after configuring it",
            detail=_one_line(hit),
            fix=redo,
            variant="docker-gpu-runtime",
        )
    hit = line_for(_MINIKUBE_DOCKER_DOWN_RE)
    if hit is not None:
        return Diagnosis(
            row="minikube-start-failed",
            object=obj,
            reason="the Docker daemon is not running or not reachable by this user",
            detail=_one_line(hit),
            fix="sudo systemctl start docker; docker info; add the user to the docker group "
            f"(sudo usermod -aG docker $USER, log in again); then {prove}",
            variant="docker-not-running",
        )
    hit = line_for(_MINIKUBE_RESOURCES_RE)
    if hit is not None:
        return Diagnosis(
            row="minikube-start-failed",
            object=obj,
            reason="the machine (or Docker's limits) has fewer CPUs or less memory than asked",
            detail=_one_line(hit),
            fix="the lab needs >= 4 CPUs / 8 GiB: pulumi config set cpus 4 && pulumi config set "
            "memoryMiB 8192, on a machine that has them (nproc; free -g)",
            variant="insufficient-resources",
        )
    return Diagnosis(
        row="minikube-start-failed",
        object=obj,
        reason="minikube start failed or hung; the usual cause is Docker's nvidia runtime",
        detail=_one_line(lines[-1]) if lines else "no stderr",
        fix=f"{redo}; minikube -p {profile} logs | tail -50 for more",
        variant="unknown",
    )
