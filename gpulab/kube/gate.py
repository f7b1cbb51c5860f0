"""The readiness gate (``python -m gpulab.kube gate``): the GPUs are schedulable, or it fails.

Three waits under one deadline (``--timeout``, seconds):

1. ClusterPolicy ``cluster-policy`` reports ``status.state == ready`` (skipped for
   minikube's addon without the operator's device plugin);
2. the device-plugin DaemonSet has every desired pod ready;
3. the nodes advertise what the lab expects (:class:`gpulab.config.mig.Expected`): allocatable
   ``nvidia.com/gpu`` (``nvidia.com/gpu.shared`` under time-slicing's rename,
   ``--gpu-resource``) equal to GPUs x time-slicing replicas, or under MIG ``mixed`` the
   ``nvidia.com/mig-<profile>`` resources.

It stops early, with the cause, the fix and the cluster's diagnosis
(:mod:`gpulab.diagnose.live`), when the state says waiting will not help
(:mod:`gpulab.kube.gate_rules`): a device plugin that restarted 3 times (or sits in
CrashLoopBackOff for the grace), a DaemonSet that does not exist or schedules on no node for
the grace, or Ready nodes without the expected resources (absent, 0, another count) for the
grace (``--grace``, ``gpuGraceSeconds``); and, on every poll, when a Pod of the operator's
namespace will not recover (:func:`operand_hits`: an image the registry refused, a node under
pressure or cordoned, an eviction: :mod:`gpulab.diagnose.stop`). It never hands a cluster
without GPUs to the smoke test: the smoke Pod depends on the gate and is not created when it
fails.

Prints (via :mod:`gpulab.kube`) ``{"gpuResource", "allocatableGpus", "capacityGpus", "migResources",
"clusterPolicyState", "devicePluginPods", "kubernetesVersion", "measuredAt"}``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from gpulab.config.mig import Expected, parse_devices, resource_of
from gpulab.core import fixes
from gpulab.core.names import DEVICE_PLUGIN_DS, OPERATOR_NAMESPACE, SIMULATED_ANNOTATION
from gpulab.diagnose import sharing
from gpulab.diagnose import stop as stop_rules
from gpulab.diagnose.live import Context
from gpulab.diagnose.live import diagnosis as _diagnose
from gpulab.kube import gate_rules as rules
from gpulab.kube.client import GateError, Waiter, sanitize
from gpulab.kube.results import GateResult

Json = Mapping[str, Any]


class Reader(Protocol):
    """What the gate reads of the cluster (JSON dicts as ``kubectl get -o json``); None for
    an object that does not exist. :class:`KubeReader` reads through the API."""

    def cluster_policy(self) -> Json | None: ...
    def daemonset(self) -> Json | None: ...
    def pods(self, selector: str) -> list[Json]: ...
    def nodes(self) -> list[Json]: ...
    def version(self) -> str: ...
    def config_map(self, name: str) -> Json | None: ...


@dataclass(frozen=True)
class GateSpec:
    """What the gate waits for.

    Attributes:
        device_plugin_namespace, device_plugin_ds: the device-plugin DaemonSet.
        require_cluster_policy: wait for ClusterPolicy ``cluster-policy`` first.
        timeout: seconds for all three waits together.
        grace: seconds a stuck state may last before the gate fails (``gpuGraceSeconds``).
        expect: what the nodes should advertise.
        profile: the minikube profile named in fixes.
        node_command: how a fix runs a command on the GPU node, the variant's template of
            ``{cmd}`` (gpulab.core.fixes.on_node); None: the minikube node of ``profile``.
    """

    device_plugin_namespace: str = OPERATOR_NAMESPACE
    device_plugin_ds: str = DEVICE_PLUGIN_DS
    require_cluster_policy: bool = True
    timeout: float = 600
    grace: float = rules.DEFAULT_GRACE_SECONDS
    expect: Expected = field(default_factory=Expected)
    profile: str = "gpu-lab"
    node_command: str | None = None


class KubeReader:
    """:class:`Reader` through an ``ApiClient`` (the official ``kubernetes`` client)."""

    def __init__(self, api: Any, spec: GateSpec) -> None:
        from kubernetes import client

        self.api, self.spec = api, spec
        self.custom = client.CustomObjectsApi(api)
        self.apps = client.AppsV1Api(api)
        self.core = client.CoreV1Api(api)
        self.versions = client.VersionApi(api)

    def _missing_is_none(self, read: Callable[[], Any]) -> Any:
        from kubernetes.client.rest import ApiException

        try:
            return read()
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def cluster_policy(self) -> Json | None:
        doc = self._missing_is_none(
            lambda: self.custom.get_cluster_custom_object(
                "nvidia.com", "v1", "clusterpolicies", "cluster-policy"
            )
        )
        return doc if isinstance(doc, dict) else None

    def daemonset(self) -> Json | None:
        ds = self._missing_is_none(
            lambda: self.apps.read_namespaced_daemon_set(
                self.spec.device_plugin_ds, self.spec.device_plugin_namespace
            )
        )
        return sanitize(ds, self.api) if ds is not None else None

    def pods(self, selector: str) -> list[Json]:
        items = self.core.list_namespaced_pod(
            self.spec.device_plugin_namespace, label_selector=selector
        ).items
        return [sanitize(p, self.api) for p in items]

    def nodes(self) -> list[Json]:
        return [sanitize(n, self.api) for n in self.core.list_node().items]

    def version(self) -> str:
        return str(self.versions.get_code().git_version)

    def config_map(self, name: str) -> Json | None:
        """ConfigMap ``name`` in the operator's namespace (the device plugin's config), or None."""
        cm = self._missing_is_none(
            lambda: self.core.read_namespaced_config_map(name, self.spec.device_plugin_namespace)
        )
        return sanitize(cm, self.api) if cm is not None else None

    def events(self) -> list[Json]:
        """The events of the operator's namespace (reason and message in full)."""
        items = self.core.list_namespaced_event(self.spec.device_plugin_namespace).items
        return [sanitize(e, self.api) for e in items]


#: The operand Pods' images and the config key that pins each (gpulab.config.operand_images),
#: by Pod name prefix: a refused operand image's fix names the key.
OPERAND_IMAGE_KEYS: Final = (
    ("nvidia-device-plugin", "devicePluginImage"),
    ("nvidia-container-toolkit", "toolkitImage"),
    ("nvidia-operator-validator", "validatorImage"),
    ("nvidia-dcgm-exporter", "dcgmExporterImage"),
)
#: Stop rules the gate applies to the operator's Pods: the states that will not recover (or
#: a registry that may, after the kubelet's retries). A sandbox or mount failing while the
#: operator is still rolling out (the toolkit restarts the runtime; the operator makes the
#: ConfigMaps it mounts) is its normal progress, left to the gate's own rules and timeout.
GATE_RULES: Final = frozenset({"image-pull", "node-pressure", "node-cordoned", "pod-evicted"})


def operand_hits(
    pods: Sequence[Json], events: Sequence[Json], nodes: Sequence[Json], profile: str
) -> list[Any]:
    """:data:`gpulab.diagnose.stop.POD_RULES` (those in :data:`GATE_RULES`) over the operator
    namespace's Pods, each with its own events and node; the DCGM exporter's are left out (it
    never blocks the lab)."""
    stop = stop_rules
    by_name = {str((n.get("metadata") or {}).get("name")): n for n in nodes}
    pressured = next((n for n in nodes if stop.node_pressure(n)), None)
    hits = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = str(meta.get("name") or "")
        if name.startswith("nvidia-dcgm-exporter"):
            continue
        own = [e for e in events if (e.get("involvedObject") or {}).get("uid") == meta.get("uid")]
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = by_name.get(str(node_name)) if node_name else pressured
        key = next((k for prefix, k in OPERAND_IMAGE_KEYS if name.startswith(prefix)), "")
        ev = stop.PodEvidence(pod, own, node, profile, key)
        hits += [h for rule in stop.POD_RULES if rule.id in GATE_RULES and (h := rule.find(ev)) is not None]
    return hits


def _selector(ds: Json | None, fallback: str) -> str:
    labels = ((ds or {}).get("spec") or {}).get("selector", {}).get("matchLabels") or {}
    return ",".join(f"{k}={v}" for k, v in labels.items()) or f"app={fallback}"


def _simulated(objs: Sequence[Json]) -> bool:
    return bool(objs) and all(
        ((o.get("metadata") or {}).get("annotations") or {}).get(SIMULATED_ANNOTATION) == "true" for o in objs
    )


def plugin_pods(ds: Json, pods: Sequence[Json]) -> list[dict[str, Any]]:
    """The ``devicePluginPods`` output: ``[{"name", "phase", "ready", "restarts", "simulated"}]``."""
    ds_simulated = _simulated([ds])
    out = []
    for p in pods:
        statuses = (p.get("status") or {}).get("containerStatuses") or []
        out.append(
            {
                "name": p["metadata"]["name"],
                "phase": (p.get("status") or {}).get("phase"),
                "ready": bool(statuses) and all(cs.get("ready") for cs in statuses),
                "restarts": sum(int(cs.get("restartCount") or 0) for cs in statuses),
                "simulated": ds_simulated or _simulated([p]),
            }
        )
    return out


def run_gate(
    reader: Reader,
    spec: GateSpec,
    diagnose: Callable[[], str],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> GateResult:
    """The gate's three waits (module docstring) against ``reader``; the facts it prints.

    Raises:
        GateError: a stuck state held for the grace, or a plugin crash-looping for good
            (``"readiness gate stopped after Ns: <cause>"``, the fix, then ``diagnose()``); or
            the timeout (``"timed out after ..."`` and ``diagnose()``).
    """
    start = clock()
    deadline = start + spec.timeout
    grace = rules.Grace(spec.grace)
    ns, ds_name = spec.device_plugin_namespace, spec.device_plugin_ds
    seen: dict[str, Any] = {"ds": None, "policy": None, "mig_working": False}

    def waiter() -> Waiter:
        return Waiter(max(1.0, deadline - clock()), clock=clock, sleep=sleep)

    def stop(stuck: rules.Stuck) -> GateError:
        return GateError(
            f"readiness gate stopped after {clock() - start:.0f}s: {stuck.cause}\n  fix: {stuck.fix}\n"
            f"waiting longer would not help (gpuGraceSeconds={spec.grace:.0f}); the cluster's "
            f"diagnosis ({stuck.row} first):\n{diagnose()}"
        )

    stop_clock = stop_rules.StopClock()

    def operands_stuck() -> None:
        # Every poll, beside the gate's own rules: a Pod of the operator's namespace that will
        # not recover (a refused image, a node under pressure, an eviction) stops the gate.
        hit = _operands_hit(reader, spec, stop_clock, clock())
        if hit is not None:
            raise GateError(
                f"{stop_rules.stop_message('readiness gate', hit, clock() - start)}\n"
                f"the cluster's diagnosis:\n{diagnose()}"
            )

    def no_crash_loop() -> None:
        operands_stuck()
        stuck, seen["mig_working"] = _mig_manager(reader, spec, grace)
        if stuck is not None:
            raise stop(stuck)
        looping = rules.crash_looping(reader.pods(_selector(seen["ds"], ds_name)))
        final = looping is not None and looping[1]
        if final or grace.expired("crash", looping is not None, clock()):
            raise stop(rules.crash_stuck(looping[0] if looping else "?", ns, _selector(seen["ds"], ds_name)))

    state = None
    if spec.require_cluster_policy:

        def cp_ready() -> str | None:
            no_crash_loop()
            seen["policy"] = reader.cluster_policy()
            st = ((seen["policy"] or {}).get("status") or {}).get("state")
            return st if st == "ready" else None

        state = waiter().until("ClusterPolicy cluster-policy to report state=ready", cp_ready, diagnose)

    def ds_ready() -> Json | None:
        seen["ds"] = ds = reader.daemonset()
        no_crash_loop()
        why = rules.placement(ds)
        for key in ("absent", "no-nodes"):
            if grace.expired(f"ds-{key}", why == key, clock()):
                raise stop(rules.placement_stuck(key, ds_name, ns, seen["policy"]))
        st = (ds or {}).get("status") or {}
        desired = int(st.get("desiredNumberScheduled") or 0)
        return ds if desired and st.get("numberReady") == desired else None

    ds = waiter().until(f"DaemonSet {ns}/{ds_name} to be ready", ds_ready, diagnose)

    def resources_seen() -> list[Json] | None:
        no_crash_loop()
        nodes = reader.nodes()
        if seen.get("mig_working"):
            return None  # the layout is still changing: counts now say nothing yet
        verdict = rules.resources_verdict(nodes, spec.expect)
        if verdict is None:
            return nodes
        key, cause = verdict
        for k in ("absent", "zero", "mismatch"):
            if grace.expired(f"nodes-{k}", key == k, clock()):
                if k == "mismatch" and not spec.expect.wants_mig:
                    cause = f"{cause}; {_sharing(reader, nodes, spec)}"
                have = rules.Resources.of(nodes, spec.expect.resource)  # the fix: the plugin waited for
                logs = fixes.device_plugin_logs(ns, selector=_selector(seen["ds"], ds_name))
                sick = have.allocatable == 0 and (have.capacity or 0) > 0  # registered, unhealthy: XID
                sim = _simulated(nodes)
                raise stop(rules.resources_stuck(k, cause, spec.profile, sim, logs, sick, spec.node_command))
        return None

    nodes = waiter().until(f"the nodes to advertise {spec.expect.describe()}", resources_seen, diagnose)
    return _facts(reader, spec, nodes, state, ds)


def _facts(reader: Reader, spec: GateSpec, nodes: Sequence[Json], state: str | None, ds: Json) -> GateResult:
    """What the gate prints once every wait passed (:func:`run_gate`)."""
    have = rules.Resources.of(nodes, spec.expect.resource)
    return GateResult(
        gpu_resource=spec.expect.resource,
        allocatable_gpus=have.allocatable,
        capacity_gpus=have.capacity,
        mig_resources=dict(sorted(have.mig.items())),
        cluster_policy_state=state,
        device_plugin_pods=plugin_pods(ds, reader.pods(_selector(ds, spec.device_plugin_ds))),
        kubernetes_version=reader.version(),
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _operands_hit(
    reader: Reader, spec: GateSpec, stop_clock: stop_rules.StopClock, now: float
) -> stop_rules.Hit | None:
    """The operand Pod state the gate stops on now (gpulab.diagnose.stop), or None; None too
    for a reader that cannot read events."""
    read_events = getattr(reader, "events", None)
    if read_events is None:
        return None
    return stop_clock.decide(operand_hits(reader.pods(""), read_events(), reader.nodes(), spec.profile), now)


def _mig_manager(reader: Reader, spec: GateSpec, grace: rules.Grace) -> tuple[rules.Stuck | None, bool]:
    """The MIG manager's own label read as its source defines it (gate_rules.MIG_STATE_LABEL):
    ``(Stuck, ...)`` when a node's layout failed (no grace: it does not retry by itself);
    ``(None, True)`` while one is pending or rebooting, the grace clocks cleared (MIG resources
    at 0 and a paused device plugin are expected then; the gate's timeout still holds);
    ``(None, False)`` otherwise, and always when the lab wants no MIG."""
    if not spec.expect.wants_mig:
        return None, False
    state = rules.mig_manager_state(reader.nodes())
    if state is not None and state[0] == "failed":
        return rules.mig_failed_stuck(state[1], spec.device_plugin_namespace), False
    if state is not None:
        grace.since.clear()
    return None, state is not None


def _sharing(reader: Reader, nodes: Sequence[Json], spec: GateSpec) -> str:
    """Whether the time-slicing config was applied at all (:func:`gpulab.diagnose.sharing.diagnosis`):
    the ClusterPolicy's reference, the ConfigMap it names, the nodes' GFD sharing labels."""
    policy = reader.cluster_policy()
    ref = sharing.config_ref(policy)
    cm = reader.config_map(ref[0]) if ref else None
    return sharing.diagnosis(policy, cm, nodes, spec.device_plugin_namespace)


def spec_from_args(args: Any) -> GateSpec:
    """The :class:`GateSpec` of ``python -m gpulab.kube gate``'s parsed arguments.

    Raises:
        GateError: an ``--expected-mig`` that is not ``PROFILE=COUNT``.
    """
    try:
        devices = parse_devices(",".join(args.expected_mig))
    except ValueError as exc:
        raise GateError(f"--expected-mig: {exc}") from exc
    expect = Expected(
        args.mig_strategy,
        args.expected_gpus,
        ({resource_of(p): n for p, n in devices.items()} or None) if args.mig_strategy == "mixed" else None,
        args.gpu_resource,
    )
    return GateSpec(
        device_plugin_namespace=args.device_plugin_namespace,
        device_plugin_ds=args.device_plugin_daemonset,
        require_cluster_policy=not args.no_cluster_policy,
        timeout=args.timeout,
        grace=args.grace,
        expect=expect,
        profile=args.profile,
        node_command=args.node_command,
    )


def context(spec: GateSpec, host_max_cuda: str | None = None) -> Context:
    """The diagnosis' :class:`~gpulab.diagnose.live.Context` for ``spec``."""
    return Context(
        spec.expect.gpus,
        host_max_cuda,
        spec.profile,
        mig_strategy=spec.expect.strategy,
        expected_mig=spec.expect.mig,
        gpu_resource=spec.expect.resource,
        device_plugin=(spec.device_plugin_namespace, spec.device_plugin_ds),
        node_command=spec.node_command,
    )


def gate(api: Any, spec: GateSpec, ctx: Context | None = None) -> GateResult:
    """:func:`run_gate` through the API (``api``: an ``ApiClient``), diagnosing with ``ctx``.

    Raises:
        GateError: see :func:`run_gate`.
    """
    ctx = ctx or Context(profile=spec.profile, node_command=spec.node_command)
    print(
        f"[gpulab] gate: expecting {spec.expect.describe()} (migStrategy {spec.expect.strategy}); "
        f"a stuck state fails after {spec.grace:.0f}s",
        file=sys.stderr,
        flush=True,
    )
    return run_gate(KubeReader(api, spec), spec, lambda: _diagnose(api, ctx))
