"""The DRA checks (``gpuStack: dra``): the gate on ResourceSlices, and the smoke Pod's claim.

Dynamic Resource Allocation (``resource.k8s.io/v1``, Kubernetes v1.36.3 staging/src/k8s.io/api/
resource/v1/types.go) is read as the API serves it:

* ``dra-gate`` (:func:`gate`): waits until the DeviceClass (``gpu.nvidia.com``, NVIDIA's chart)
  exists and every GPU node (label ``nvidia.com/gpu.present=true``) has a ResourceSlice of the
  driver (``spec.driver``, ``spec.nodeName``) listing whole GPUs (attribute ``type`` ``gpu``)
  each with its ``uuid``; fails at the timeout naming the nodes without one.
* the claim (:func:`claim_facts`, run by the smoke check with ``--dra-claim``): the Pod's
  ``status.resourceClaimStatuses`` names the ResourceClaim made from its template; that claim's
  ``status.allocation.devices.results`` (``driver``, ``pool``, ``device``) are looked up in the
  slices for their ``uuid``; ``status.reservedFor`` must name the Pod. :func:`compare` then
  holds the UUIDs the container listed (``nvidia-smi -L``) against the allocated ones: exactly
  equal, or the check fails.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.core import names
from gpulab.kube.client import GateError
from gpulab.kube.results import DraGateResult

GROUP: Final = "resource.k8s.io"
VERSION: Final = "v1"
#: The label of a GPU node (NFD/GFD, the GPU Operator; the chart's kubelet-plugin affinity).
GPU_NODE_LABEL: Final = "nvidia.com/gpu.present=true"


def _string(device: Mapping[str, Any], attribute: str) -> str | None:
    """A device's string attribute (``attributes[name].string``), None when absent."""
    value = (device.get("attributes") or {}).get(attribute) or {}
    return value.get("string")


def slice_rows(slices: Iterable[Mapping[str, Any]], driver: str) -> dict[str, dict[str, Any]]:
    """Per node, what ``driver``'s ResourceSlices publish: ``{node: {"pool", "devices": [{"name",
    "uuid", "productName"}], "simulated"}}``; whole GPUs only (attribute ``type`` ``gpu``), devices
    sorted by name. A slice without ``spec.nodeName`` (not node-local) is skipped."""
    rows: dict[str, dict[str, Any]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node = spec.get("nodeName")
        if spec.get("driver") != driver or not node:
            continue
        meta = s.get("metadata") or {}
        row = rows.setdefault(
            node, {"node": node, "pool": (spec.get("pool") or {}).get("name"), "devices": []}
        )
        row["simulated"] = (meta.get("labels") or {}).get(names.SIMULATED_ANNOTATION) == "true"
        for d in spec.get("devices") or []:
            if _string(d, "type") == "gpu":
                row["devices"].append(
                    {
                        "name": d.get("name"),
                        "uuid": _string(d, "uuid"),
                        "productName": _string(d, "productName"),
                    }
                )
    for row in rows.values():
        row["devices"].sort(key=lambda d: str(d["name"]))
    return rows


def missing(rows: Mapping[str, Mapping[str, Any]], gpu_nodes: Sequence[str]) -> list[str]:
    """The GPU nodes without a published GPU that has a UUID, each with why."""
    out = []
    for node in gpu_nodes:
        devices = (rows.get(node) or {}).get("devices") or []
        if not devices:
            out.append(f"{node}: no ResourceSlice lists a GPU")
        elif any(not d.get("uuid") for d in devices):
            out.append(f"{node}: a GPU without a uuid attribute")
    return out


def gate(api: Any, driver: str, device_class: str, timeout: float, interval: float = 1.0) -> DraGateResult:
    """Wait until ``device_class`` exists and every GPU node has ``driver``'s ResourceSlice.

    Returns:
        the :class:`~gpulab.kube.results.DraGateResult`: ``dra_slices`` (a row of
        :func:`slice_rows` per GPU node), ``allocatable_gpus`` (devices published), the device
        class, the API server's version and when.

    Raises:
        GateError: at ``timeout`` seconds, naming the DeviceClass or the nodes still without.
    """
    from kubernetes import client

    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    while True:
        classes = custom.list_cluster_custom_object(GROUP, VERSION, "deviceclasses")["items"]
        have_class = any((c.get("metadata") or {}).get("name") == device_class for c in classes)
        gpu_nodes = sorted(n.metadata.name for n in core.list_node(label_selector=GPU_NODE_LABEL).items)
        rows = slice_rows(
            custom.list_cluster_custom_object(GROUP, VERSION, "resourceslices")["items"], driver
        )
        lacking = missing(rows, gpu_nodes) if gpu_nodes else ["no node is labelled " + GPU_NODE_LABEL]
        if have_class and not lacking:
            break
        if time.monotonic() > deadline:
            why = ([] if have_class else [f"DeviceClass {device_class} does not exist"]) + lacking
            raise GateError(
                f"DRA not ready after {timeout:.0f}s: {'; '.join(why)}\n  fix: check NVIDIA's DRA driver "
                "(kubectl get pods -n dra-driver-nvidia-gpu; its kubelet plugin publishes the slices) "
                "and kubectl get resourceslices"
            )
        time.sleep(interval)
    published = [rows[n] for n in gpu_nodes]
    return DraGateResult(
        dra_slices=published,
        allocatable_gpus=sum(len(r["devices"]) for r in published),
        device_class=device_class,
        kubernetes_version=client.VersionApi(api).get_code().git_version,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def allocated(
    claim: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]], driver: str
) -> list[dict[str, Any]]:
    """The claim's allocated devices (``status.allocation.devices.results``) with the ``uuid`` the
    slice of their pool lists: ``[{"request", "driver", "pool", "device", "uuid"}]``.

    Raises:
        GateError: the claim is not allocated, or a result names a device no slice lists.
    """
    name = (claim.get("metadata") or {}).get("name")
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get(
        "results"
    ) or []
    if not results:
        raise GateError(f"ResourceClaim {name} has no status.allocation: the scheduler allocated nothing")
    by_pool = {r.get("pool"): {d["name"]: d.get("uuid") for d in r["devices"]} for r in rows.values()}
    out = []
    for r in results:
        uuid = by_pool.get(r.get("pool"), {}).get(r.get("device")) if r.get("driver") == driver else None
        if uuid is None:
            raise GateError(
                f"ResourceClaim {name} was allocated {r.get('driver')}/{r.get('pool')}/{r.get('device')}, "
                "which no ResourceSlice of the driver lists with a uuid"
            )
        out.append({k: r.get(k) for k in ("request", "driver", "pool", "device")} | {"uuid": uuid})
    return out


def _reserved_for(doc: Mapping[str, Any], uid: str) -> bool:
    """The claim is allocated and reserved for the Pod of ``uid``."""
    status = doc.get("status") or {}
    return bool(status.get("allocation")) and any(
        r.get("uid") == uid for r in status.get("reservedFor") or []
    )


def _owned_by(doc: Mapping[str, Any], uid: str) -> bool:
    """The claim was made for the Pod of ``uid`` (its controller ownerReference)."""
    return any(o.get("uid") == uid for o in (doc.get("metadata") or {}).get("ownerReferences") or [])


def observe_claim(api: Any, namespace: str, pod: str, gate: str, timeout: float) -> dict[str, Any]:
    """The Pod's ResourceClaim at the moment it is allocated and reserved for the Pod.

    The resourceclaim controller removes a done Pod from ``reservedFor``, deallocates the claim
    and deletes a claim made from a template (Kubernetes v1.36.3
    pkg/controller/resourceclaim/controller.go, ``isPodDone``), so a claim read after the Pod
    succeeded shows nothing. The smoke Pod is therefore made with the scheduling gate ``gate``:
    this lists the claims, removes the gate (only then can the scheduler allocate) and watches
    from the list's resourceVersion until the Pod's own claim is allocated and reserved for it.

    Raises:
        GateError: nothing allocated and reserved within ``timeout`` seconds (with the Pod's
            PodScheduled condition, where the scheduler says why).
    """
    from kubernetes import client, watch

    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    uid = core.read_namespaced_pod(pod, namespace).metadata.uid
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims")
    for doc in listed.get("items") or []:
        if _owned_by(doc, uid) and _reserved_for(doc, uid):
            return dict(doc)
    gates = core.read_namespaced_pod(pod, namespace).spec.scheduling_gates or []
    if any(g.name == gate for g in gates):
        remaining = [{"name": g.name} for g in gates if g.name != gate]
        core.patch_namespaced_pod(
            pod, namespace, [{"op": "replace", "path": "/spec/schedulingGates", "value": remaining}]
        )
    w = watch.Watch()
    rv = (listed.get("metadata") or {}).get("resourceVersion")
    for event in w.stream(
        custom.list_namespaced_custom_object,
        GROUP,
        VERSION,
        namespace,
        "resourceclaims",
        resource_version=rv,
        timeout_seconds=max(1, int(timeout)),
    ):
        doc = event.get("object") or {}
        if _owned_by(doc, uid) and _reserved_for(doc, uid):
            w.stop()
            return dict(doc)
    conditions = core.read_namespaced_pod(pod, namespace).status.conditions or []
    why = [f"{c.type}={c.status} {c.reason or ''} {c.message or ''}".strip() for c in conditions]
    raise GateError(
        f"no ResourceClaim of Pod {namespace}/{pod} was allocated and reserved for it within {timeout:.0f}s "
        f"({'; '.join(why) or 'no conditions'})\n  fix: kubectl describe pod {pod} -n {namespace} (the "
        "scheduler names the claim it cannot allocate) and kubectl get resourceslices"
    )


def claim_facts(
    api: Any, namespace: str, pod: Mapping[str, Any], observed: Mapping[str, Any], driver: str, claim: str
) -> dict[str, Any]:
    """The Pod's claim ``claim`` (its ``spec.resourceClaims`` entry) as :func:`observe_claim` saw it.

    Returns:
        ``{"claim": name, "podClaim": claim, "devices": [:func:`allocated` rows], "reservedFor":
        [Pod names], "reservedForPod": True}``.

    Raises:
        GateError: the Pod's ``status.resourceClaimStatuses`` names no claim for ``claim``, or
            another than the one observed; the claim names a device no slice lists.
    """
    from kubernetes import client

    custom = client.CustomObjectsApi(api)
    pod_name = (pod.get("metadata") or {}).get("name")
    statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
    made = next((s.get("resourceClaimName") for s in statuses if s.get("name") == claim), None)
    seen = (observed.get("metadata") or {}).get("name")
    if not made or made != seen:
        raise GateError(
            f"Pod {namespace}/{pod_name} status.resourceClaimStatuses {statuses} does not name the claim "
            f"{seen} allocated for its {claim!r}"
        )
    rows = slice_rows(custom.list_cluster_custom_object(GROUP, VERSION, "resourceslices")["items"], driver)
    devices = allocated(observed, rows, driver)
    reserved = [r.get("name") for r in (observed.get("status") or {}).get("reservedFor") or []]
    return {
        "claim": made,
        "podClaim": claim,
        "devices": devices,
        "reservedFor": reserved,
        "reservedForPod": True,
    }


def compare(seen: Sequence[str] | None, facts: Mapping[str, Any]) -> str:
    """``"match"`` when the UUIDs the container listed are exactly the allocated devices'.

    Raises:
        GateError: it listed none, or another set (naming both).
    """
    want = sorted(d["uuid"] for d in facts["devices"])
    if not seen:
        raise GateError(
            f"the smoke Pod listed no GPU (nvidia-smi -L); its claim {facts['claim']} holds {want}"
        )
    if sorted(seen) != want:
        raise GateError(
            f"the smoke Pod saw {sorted(seen)} but its claim {facts['claim']} was allocated {want}: the "
            "container does not see exactly the devices DRA allocated"
        )
    return "match"


def smoke_claim(
    api: Any,
    namespace: str,
    pod: str,
    observed: Mapping[str, Any],
    driver: str,
    claim: str,
    seen: Sequence[str] | None,
) -> dict[str, Any]:
    """The smoke Pod's claim (:func:`claim_facts`, from the ``observed`` claim) with
    ``"uuidsMatch": "match"`` once the UUIDs it listed (``seen``) are exactly the allocated ones
    (:func:`compare`).

    Raises:
        GateError: as :func:`claim_facts` and :func:`compare`.
    """
    from kubernetes import client

    from gpulab.kube.client import sanitize

    doc = sanitize(client.CoreV1Api(api).read_namespaced_pod(pod, namespace), api)
    facts = claim_facts(api, namespace, doc, observed, driver, claim)
    return facts | {"uuidsMatch": compare(seen, facts)}
