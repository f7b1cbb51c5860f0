"""The queue proof (``queues: true``): Kueue's admission of Jobs against the GPU quota, observed.

``python -m gpulab.kube queues`` runs, after the compute check, in the LocalQueue the lab made
(gpulab.config.queues), and reads Kueue's own objects (``kueue.x-k8s.io/v1beta2`` Workloads, the
ClusterQueue), never infers a decision:

1. **Quota.** The ClusterQueue's ``nominalQuota`` of the GPU resource is read back and compared
   with what the gate measured (``--quota``, the gate's output the ClusterQueue was made from).
2. **Two Jobs, each asking for the whole quota** (one Pod holding all of it). One is admitted
   (Workload ``QuotaReserved`` and ``Admitted`` True) and runs; the other waits: its Workload's
   ``QuotaReserved`` is False with Kueue's reason and message (``Pending``, "couldn't assign
   flavors to pod set ...: insufficient quota ..."), until the first finishes and frees the
   quota; then it is admitted. Times are the Workloads' own (creation, condition transitions).
   At no poll may the admitted Jobs hold more than the quota.
3. **All or nothing.** A Job of ``quota + 1`` Pods of one GPU each (more than the quota,
   together) is never admitted at all: its Workload is never ``QuotaReserved`` (Kueue reserves
   a Workload's whole pod set at once), the Job stays suspended and no Pod of it is ever
   created, watched from its creation until after the quota is free again.
4. **No queue label, no queue.** A Pod without ``kueue.x-k8s.io/queue-name`` gets no Workload
   and no admission scheduling gate (``kueue.x-k8s.io/admission``): Kueue leaves it alone
   (``manageJobsWithoutQueueName`` false, the default), so it is not admitted through the
   queue (and is not held to its quota either, which the card says).

Everything it made is deleted at the end (Jobs in the foreground, so their Workloads go too),
and a failure names the Job and Kueue's words. Upstream facts: tests/contract/test_kueue.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.config.queues import GROUP, NAMESPACE, QUEUE_LABEL, VERSION
from gpulab.core import names
from gpulab.kube.client import GateError
from gpulab.kube.results import QueueCensusResult, QueueProofResult, QueueSweepResult

#: Job names of the proof (in the lab's namespace).
FIRST: Final = "queue-proof-a"
SECOND: Final = "queue-proof-b"
GANG: Final = "queue-proof-gang"
UNQUEUED: Final = "queue-proof-unqueued"
#: The scheduling gate Kueue puts on a Pod it manages until admission (``podconstants.SchedulingGateName``).
ADMISSION_GATE: Final = "kueue.x-k8s.io/admission"
#: How long each proof Job's Pod runs (a real container sleeps it; in the sim, kwok's
#: job-complete Stage waits it: :data:`RUN_TIME_ANNOTATION`).
RUN_SECONDS: Final = 8
#: Read by the sim's kwok Stage (variants/sim/stages/40-pod-complete-job.yaml); inert elsewhere.
RUN_TIME_ANNOTATION: Final = "gpulab.dev/simulated-run-time"
#: Seconds the over-quota Job is still watched once the quota is free again.
GANG_GRACE: Final = 4.0
#: The label that marks everything the proof makes (for the clean-up and the census).
PROOF_LABEL: Final = "gpulab.dev/queue-proof"


def job_manifest(
    name: str, namespace: str, local_queue: str, resource: str, per_pod: int, pods: int, image: str
) -> dict[str, Any]:
    """A ``batch/v1`` Job in ``local_queue``: ``pods`` Pods at once (parallelism = completions),
    each asking ``per_pod`` of ``resource``, each running :data:`RUN_SECONDS`; created suspended
    (Kueue unsuspends it on admission), no retries."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {QUEUE_LABEL: local_queue, PROOF_LABEL: "true", names.LAB_LABELS[0]: names.PROJECT},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "backoffLimit": 0,
            "suspend": True,
            "template": {
                "metadata": {
                    "labels": {PROOF_LABEL: "true"},
                    "annotations": {RUN_TIME_ANNOTATION: f"{RUN_SECONDS}s"},
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "work",
                            "image": image,
                            "command": ["sleep", str(RUN_SECONDS)],
                            "resources": {"limits": {resource: per_pod}, "requests": {resource: per_pod}},
                        }
                    ],
                },
            },
        },
    }


def unqueued_pod(namespace: str, image: str) -> dict[str, Any]:
    """A run-once Pod without the queue label (and without a GPU: it only shows Kueue leaves it alone)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": UNQUEUED,
            "namespace": namespace,
            "labels": {PROOF_LABEL: "true", names.LAB_LABELS[0]: names.PROJECT},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "work", "image": image, "command": ["true"]}],
        },
    }


def condition(workload: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """The Workload's ``status.conditions`` entry of type ``kind``, or None."""
    for c in ((workload or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def is_true(workload: Mapping[str, Any] | None, kind: str) -> bool:
    """The Workload's condition ``kind`` is True."""
    return (condition(workload, kind) or {}).get("status") == "True"


def owned_by(workloads: Sequence[Mapping[str, Any]], uid: str) -> Mapping[str, Any] | None:
    """The Workload whose ownerReferences name ``uid`` (Kueue makes one per Job or Pod it manages)."""
    for w in workloads:
        if any(r.get("uid") == uid for r in (w.get("metadata") or {}).get("ownerReferences") or []):
            return w
    return None


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one RFC 3339 time to another (the API's second resolution), or None."""
    if not start or not end:
        return None
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def job_row(
    name: str, role: str, gpus: int, workload: Mapping[str, Any] | None, pending: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A proof Job as the card shows it: its Workload's times and, when it waited, Kueue's reason."""
    created = (workload or {}).get("metadata", {}).get("creationTimestamp")
    admitted = (
        (condition(workload, "Admitted") or {}).get("lastTransitionTime")
        if is_true(workload, "Admitted")
        else None
    )
    finished = (
        (condition(workload, "Finished") or {}).get("lastTransitionTime")
        if is_true(workload, "Finished")
        else None
    )
    return {
        "job": name,
        "role": role,
        "gpus": gpus,
        "workload": (workload or {}).get("metadata", {}).get("name"),
        "createdAt": created,
        "admittedAt": admitted,
        "finishedAt": finished,
        "waitedSeconds": seconds_between(created, admitted),
        "pending": dict(pending) if pending else None,
    }


@dataclass(frozen=True)
class ProofSpec:
    """What the proof runs against: the lab's LocalQueue and ClusterQueue, the GPU ``resource``
    and the ``quota`` the gate measured, the Jobs' ``image``, the overall ``timeout`` (s)."""

    namespace: str
    local_queue: str
    cluster_queue: str
    resource: str
    quota: int
    image: str
    timeout: float = 300.0


class _Cluster:
    """The reads and writes the proof makes (one place, so the proof reads as its steps)."""

    def __init__(self, api: Any, namespace: str) -> None:
        from kubernetes import client

        self.ns = namespace
        self.batch = client.BatchV1Api(api)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.api = api

    def workloads(self) -> list[dict[str, Any]]:
        return list(self.custom.list_namespaced_custom_object(GROUP, VERSION, self.ns, "workloads")["items"])

    def cluster_queue(self, name: str) -> dict[str, Any]:
        return dict(self.custom.get_cluster_custom_object(GROUP, VERSION, "clusterqueues", name))

    def create_job(self, doc: Mapping[str, Any]) -> str:
        return str(self.batch.create_namespaced_job(self.ns, doc).metadata.uid)

    def job(self, name: str) -> Any:
        return self.batch.read_namespaced_job(name, self.ns)

    def pods_of(self, job: str) -> int:
        return len(self.core.list_namespaced_pod(self.ns, label_selector=f"job-name={job}").items)

    def delete_all(self) -> None:
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        body = client.V1DeleteOptions(propagation_policy="Foreground")
        for name in (FIRST, SECOND, GANG):
            try:
                self.batch.delete_namespaced_job(name, self.ns, body=body)
            except ApiException as exc:
                if exc.status != 404:
                    raise
        try:
            self.core.delete_namespaced_pod(UNQUEUED, self.ns)
        except ApiException as exc:
            if exc.status != 404:
                raise


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _say(text: str) -> None:
    import sys

    print(f"[gpulab] queues: {text}", file=sys.stderr, flush=True)


def prove(
    api: Any, spec: ProofSpec, clock: Callable[[], float] = time.monotonic, poll: float = 0.5
) -> QueueProofResult:
    """Run the proof (module docstring); returns its facts (``queues`` in the stack outputs).

    Raises:
        GateError: the ClusterQueue's quota is not the measured one; both Jobs held the quota at
            once; the second Job was never admitted; the over-quota Job was admitted or got a
            Pod; Kueue took the unlabelled Pod; or the timeout passed (naming what it waited for).
    """
    if spec.quota < 1:
        raise GateError(f"the measured quota of {spec.resource} is {spec.quota}: nothing to queue")
    k = _Cluster(api, spec.namespace)
    cq = k.cluster_queue(spec.cluster_queue)
    nominal = _nominal(cq, spec.resource)
    if nominal != spec.quota:
        raise GateError(
            f"ClusterQueue {spec.cluster_queue} has nominalQuota {nominal} of {spec.resource}, not the "
            f"{spec.quota} the gate measured"
        )
    k.delete_all()  # what an interrupted earlier proof left
    _wait_gone(k, clock, poll, spec.timeout)
    try:
        started = clock()
        uids, pod_uid = _submit(k, spec)
        seen = _watch(k, spec, uids, (clock, started), poll)
        if not seen.pending:
            raise GateError(
                f"neither {FIRST} nor {SECOND} was seen waiting for quota: both asked for the whole quota "
                f"({spec.quota} {spec.resource}), so one must wait while the other runs"
            )
        unqueued = _unqueued(k, pod_uid)
        gang_job = k.job(GANG)
        if not gang_job.spec.suspend:
            raise GateError(f"Job {GANG} is not suspended, though Kueue never admitted it")
        gang_c = condition(seen.last[GANG], "QuotaReserved") or {}
        waited = next(iter(seen.pending))
        first = next(n for n in (FIRST, SECOND) if n != waited)
        return QueueProofResult(
            measured_at=_now(),
            namespace=spec.namespace,
            local_queue=spec.local_queue,
            cluster_queue=spec.cluster_queue,
            resource=spec.resource,
            quota=nominal,
            measured_allocatable=spec.quota,
            quota_matches_allocatable=nominal == spec.quota,
            queueing_strategy=(cq.get("spec") or {}).get("queueingStrategy", "BestEffortFIFO"),
            jobs=[
                job_row(first, "admitted first", spec.quota, seen.last[first], None),
                job_row(waited, "waited, then admitted", spec.quota, seen.last[waited], seen.pending[waited]),
            ],
            gang={
                "job": GANG,
                "pods": spec.quota + 1,
                "perPod": 1,
                "total": spec.quota + 1,
                "admitted": False,
                "podsCreated": seen.gang_pods,
                "suspended": bool(gang_job.spec.suspend),
                "reason": gang_c.get("reason"),
                "message": gang_c.get("message"),
                "observedSeconds": round(clock() - started, 1),
            },
            unqueued_pod=unqueued,
        )
    finally:
        k.delete_all()
        _wait_gone(k, clock, poll, 60.0)


def _submit(k: _Cluster, spec: ProofSpec) -> tuple[dict[str, str], str]:
    """The proof's Jobs (``{name: uid}``: two of the whole quota, one of quota + 1 Pods) and the
    unlabelled Pod's uid, created."""
    uids = {
        FIRST: k.create_job(
            job_manifest(FIRST, spec.namespace, spec.local_queue, spec.resource, spec.quota, 1, spec.image)
        ),
        SECOND: k.create_job(
            job_manifest(SECOND, spec.namespace, spec.local_queue, spec.resource, spec.quota, 1, spec.image)
        ),
        GANG: k.create_job(
            job_manifest(GANG, spec.namespace, spec.local_queue, spec.resource, 1, spec.quota + 1, spec.image)
        ),
    }
    pod_uid = str(
        k.core.create_namespaced_pod(spec.namespace, unqueued_pod(spec.namespace, spec.image)).metadata.uid
    )
    _say(
        f"two Jobs of {spec.quota} {spec.resource} each, one of {spec.quota + 1} Pods x 1, "
        "one Pod without the queue label"
    )
    return uids, pod_uid


@dataclass
class _Seen:
    """What :func:`_watch` saw: each Job's last Workload (``last``), Kueue's reason for each Job
    that waited (``pending``: ``{"reason", "message", "while"}``), the over-quota Job's Pods."""

    last: dict[str, Any] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    gang_pods: int = 0


def _watch(
    k: _Cluster,
    spec: ProofSpec,
    uids: Mapping[str, str],
    timing: tuple[Callable[[], float], float],
    poll: float,
) -> _Seen:
    """Poll the Workloads until both whole-quota Jobs finished and :data:`GANG_GRACE` passed;
    ``timing``: the clock and when the proof started (its timeout counts from then).

    Raises:
        GateError: both Jobs held the quota at once, the over-quota Job was admitted or got a
            Pod, or the timeout passed.
    """
    clock, started = timing
    seen = _Seen()
    free_since: float | None = None
    while True:
        wls = k.workloads()
        seen.last = {n: owned_by(wls, u) for n, u in uids.items()}
        last = seen.last
        running = [
            n for n in (FIRST, SECOND) if is_true(last[n], "Admitted") and not is_true(last[n], "Finished")
        ]
        if len(running) > 1:
            raise GateError(
                f"Kueue admitted {FIRST} and {SECOND} at once, {2 * spec.quota} {spec.resource} "
                f"against a quota of {spec.quota}"
            )
        for n in (FIRST, SECOND):
            c = condition(last[n], "QuotaReserved")
            if n not in seen.pending and c and c.get("status") == "False" and running:
                seen.pending[n] = {
                    "reason": c.get("reason"),
                    "message": c.get("message"),
                    "while": running[0],
                }
                _say(f"{n} waits: {c.get('reason')}: {c.get('message')}")
        seen.gang_pods = max(seen.gang_pods, k.pods_of(GANG))
        if is_true(last[GANG], "QuotaReserved") or seen.gang_pods:
            raise GateError(
                f"Job {GANG} ({spec.quota + 1} Pods x 1 {spec.resource}, more than the quota "
                f"{spec.quota}) was "
                f"admitted in part: QuotaReserved={is_true(last[GANG], 'QuotaReserved')}, "
                f"{seen.gang_pods} Pod(s) created"
            )
        if all(is_true(last[n], "Finished") for n in (FIRST, SECOND)):
            free_since = free_since if free_since is not None else clock()
            if clock() - free_since >= GANG_GRACE:
                return seen
        if clock() - started > spec.timeout:
            raise GateError(_timeout_text(spec, last, seen.pending))
        time.sleep(poll)


def _nominal(cq: Mapping[str, Any], resource: str) -> int | None:
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                if r.get("name") == resource:
                    return int(r.get("nominalQuota"))
    return None


def _unqueued(k: _Cluster, uid: str) -> dict[str, Any]:
    """The unlabelled Pod: no Workload owns it, no admission gate holds it (else GateError)."""
    pod = k.core.read_namespaced_pod(UNQUEUED, k.ns)
    gates = [g.name for g in pod.spec.scheduling_gates or []]
    workload = owned_by(k.workloads(), uid)
    if workload is not None or ADMISSION_GATE in gates:
        raise GateError(
            f"Pod {UNQUEUED} has no {QUEUE_LABEL} label, yet Kueue took it: Workload "
            f"{(workload or {}).get('metadata', {}).get('name')}, scheduling gates {gates}"
        )
    return {
        "pod": UNQUEUED,
        "queueLabel": False,
        "workload": None,
        "admissionGate": False,
        "phase": pod.status.phase,
    }


def _wait_gone(k: _Cluster, clock: Callable[[], float], poll: float, timeout: float) -> None:
    """Until the proof's Jobs, Pods and their Workloads are gone (Kueue removes a Workload's
    finalizer once its Job is gone), so nothing of the proof outlives it."""
    end = clock() + timeout
    while clock() < end:
        left = [
            w
            for w in k.workloads()
            if (w.get("metadata") or {}).get("name", "").startswith(("job-queue-proof", "pod-queue-proof"))
        ]
        jobs = k.batch.list_namespaced_job(k.ns, label_selector=f"{PROOF_LABEL}=true").items
        pods = k.core.list_namespaced_pod(k.ns, label_selector=f"{PROOF_LABEL}=true").items
        if not left and not jobs and not pods:
            return
        time.sleep(poll)
    raise GateError(
        f"the queue proof's Jobs, Pods or Workloads in {k.ns} were not gone within {timeout:.0f}s"
    )


def _timeout_text(spec: ProofSpec, last: Mapping[str, Any], pending: Mapping[str, Any]) -> str:
    rows = []
    for n, w in last.items():
        c = condition(w, "QuotaReserved") or {}
        rows.append(
            f"  {n}: Workload {(w or {}).get('metadata', {}).get('name', '(none yet)')}, QuotaReserved="
            f"{c.get('status')} {c.get('reason') or ''} {c.get('message') or ''}, "
            f"Admitted={is_true(w, 'Admitted')}, "
            f"Finished={is_true(w, 'Finished')}"
        )
    return (
        f"the queue proof did not finish within {spec.timeout:.0f}s in LocalQueue "
        f"{spec.namespace}/{spec.local_queue}:\n"
        + "\n".join(rows)
        + f"\n  fix: kubectl get workloads -n {spec.namespace}; "
        f"kubectl describe clusterqueue {spec.cluster_queue}"
    )


def census(api: Any) -> QueueCensusResult:
    """What of Kueue is still in the cluster (after its layer was removed): ``{"leftovers":
    ["customresourcedefinition/<name>", "namespace/kueue-system", "<kind>/<name>", ...]}``, each a
    CRD of Kueue's group, its namespace, or a cluster-scoped object of the chart (webhook
    configurations, APIServices, ClusterRoles and their bindings, by ``kueue`` in the name).
    Empty: nothing left."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    left = [
        f"customresourcedefinition/{c.metadata.name}"
        for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        if c.spec.group == GROUP
    ]
    try:
        client.CoreV1Api(api).read_namespace(NAMESPACE)
        left.append(f"namespace/{NAMESPACE}")
    except ApiException as exc:
        if exc.status != 404:
            raise
    adm = client.AdmissionregistrationV1Api(api)
    rbac = client.RbacAuthorizationV1Api(api)
    reg = client.ApiregistrationV1Api(api)
    for kind, items in (
        ("validatingwebhookconfiguration", adm.list_validating_webhook_configuration().items),
        ("mutatingwebhookconfiguration", adm.list_mutating_webhook_configuration().items),
        ("apiservice", reg.list_api_service().items),
        ("clusterrole", rbac.list_cluster_role().items),
        ("clusterrolebinding", rbac.list_cluster_role_binding().items),
    ):
        left += [f"{kind}/{i.metadata.name}" for i in items if "kueue" in i.metadata.name]
    return QueueCensusResult(leftovers=sorted(left))


#: The chart's aggregated ClusterRoles (templates/rbac/batch_{admin,user}_role.yaml, the only two
#: with an ``aggregationRule``). Deleting one races kube-controller-manager's
#: clusterrole-aggregation controller, which writes its rules back with a server-side Apply
#: (``ClusterRoles().Apply``, pkg/controller/clusterroleaggregation, Kubernetes v1.36.3) and so
#: creates it again, without labels or aggregationRule, after ``helm uninstall`` deleted it.
AGGREGATED_ROLES: Final = ("kueue-batch-admin-role", "kueue-batch-user-role")
#: The field manager of that re-creation.
AGGREGATOR: Final = "clusterrole-aggregation-controller"


def sweep(
    api: Any, settle: float = 5.0, poll: float = 0.5, clock: Callable[[], float] = time.monotonic
) -> QueueSweepResult:
    """After the release is gone: delete :data:`AGGREGATED_ROLES` that the aggregation
    controller re-created (no ``aggregationRule``, every field its own), watching ``settle``
    seconds for a late re-creation. A role that still has its aggregationRule is the chart's
    (the release is not gone) and is left alone. Returns the names deleted."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    rbac = client.RbacAuthorizationV1Api(api)
    deleted: list[str] = []
    end = clock() + settle
    while True:
        for name in AGGREGATED_ROLES:
            try:
                role = rbac.read_cluster_role(name)
            except ApiException as exc:
                if exc.status == 404:
                    continue
                raise
            managers = {m.manager for m in role.metadata.managed_fields or []}
            if role.aggregation_rule is None and managers <= {AGGREGATOR}:
                try:
                    rbac.delete_cluster_role(name)
                    deleted.append(name)
                except ApiException as exc:
                    if exc.status != 404:
                        raise
        if clock() >= end:
            return QueueSweepResult(deleted=deleted)
        time.sleep(poll)
