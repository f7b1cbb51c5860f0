"""What destroy left in an existing cluster: the leftover census.

Destroy removes what the stack created (the release, the smoke Pod, the operator's
namespace) but not what Helm and the operator leave by design: the chart's CRDs (Helm keeps
``crds/``), and the node labels the operator's stack sets (``nvidia.com/gpu.present``,
``nvidia.com/gpu.product``, ``nvidia.com/gpu.deploy.*``, ... : NVIDIA/gpu-operator#1391).
A namespace can also hang in ``Terminating`` when objects in it wait on finalizers.

:func:`census` (pure) lists them as one JSON document::

    {"crds": [...],                  # the chart's CRDs still present
     "namespace": None | {"name", "phase", "reason", "detail", "fix"},   # still there
     "labels": {node: [key, ...]},   # nvidia.com/ labels not on the node before the lab
     "labelsBaseline": bool,         # whether the before-picture was known
     "leftovers": [...]}             # all of them as resource strings (see below)

With namespaces adopted (``adoptExisting``), the objects the lab did not create are counted
by UID: :func:`foreign_objects` before the lab (the ``foreignObjects`` output: the adopted
namespaces and every object of :data:`FOREIGN_KINDS` in them, ``{"Kind/ns/name": uid}``), and
again after destroy; ``"untouched"`` says which of them are gone or were replaced (another UID
under the same name)::

     "untouched": {"checked": int, "missing": [...], "replaced": [...]}

Resource strings: ``customresourcedefinition/<name>`` (as the ``leftovers`` output lists
them), ``namespace/<name>``, ``node/<name> label <key>``. :func:`read` takes the census of
a live cluster; ``python -m variants.existing.ctl leftovers`` prints it with the
``no-leftovers`` checklist item (:mod:`gpulab.verdict.items.leftovers`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gpulab.core.names import OPERATOR_NAMESPACE
from gpulab.core.rawapi import read_json
from gpulab.diagnose import diagnose_namespace

#: Node labels of the operator's stack (GFD, the operator's node labelling, NFD rules).
LABEL_PREFIX: Final = "nvidia.com/"

Json = Mapping[str, Any]

#: The kinds counted in an adopted namespace: (kind, client API class, its list method).
FOREIGN_KINDS: Final = (
    ("ConfigMap", "CoreV1Api", "list_namespaced_config_map"),
    ("Secret", "CoreV1Api", "list_namespaced_secret"),
    ("ServiceAccount", "CoreV1Api", "list_namespaced_service_account"),
    ("Service", "CoreV1Api", "list_namespaced_service"),
    ("Pod", "CoreV1Api", "list_namespaced_pod"),
    ("PersistentVolumeClaim", "CoreV1Api", "list_namespaced_persistent_volume_claim"),
    ("Deployment", "AppsV1Api", "list_namespaced_deployment"),
    ("DaemonSet", "AppsV1Api", "list_namespaced_daemon_set"),
    ("StatefulSet", "AppsV1Api", "list_namespaced_stateful_set"),
    ("Role", "RbacAuthorizationV1Api", "list_namespaced_role"),
    ("RoleBinding", "RbacAuthorizationV1Api", "list_namespaced_role_binding"),
)


def crd_resource(crd: str) -> str:
    """``customresourcedefinition/<crd>``, the form the ``leftovers`` output lists."""
    return f"customresourcedefinition/{crd}"


def gpu_labels(nodes: Sequence[Json]) -> dict[str, dict[str, str]]:
    """``{node: {key: value}}`` of the ``nvidia.com/`` labels on each node (JSON dicts);
    nodes without any are left out."""
    found: dict[str, dict[str, str]] = {}
    for n in nodes:
        meta = n.get("metadata") or {}
        labels = {
            str(k): str(v) for k, v in (meta.get("labels") or {}).items() if str(k).startswith(LABEL_PREFIX)
        }
        if labels:
            found[str(meta.get("name"))] = dict(sorted(labels.items()))
    return found


def foreign_objects(api: Any, namespaces: Sequence[str]) -> dict[str, str]:
    """``{"Namespace/<ns>": uid, "<Kind>/<ns>/<name>": uid}``: each of ``namespaces`` that
    exists and every object of :data:`FOREIGN_KINDS` in it, as the cluster ``api`` (a kubernetes
    ``ApiClient``) holds them now.

    Raises:
        kubernetes.client.rest.ApiException: a read other than a namespace's 404 failed.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    found: dict[str, str] = {}
    for ns in namespaces:
        try:
            obj = read_json(client.CoreV1Api(api).read_namespace, ns)
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        found[f"Namespace/{ns}"] = str(obj["metadata"]["uid"])
        for kind, cls, method in FOREIGN_KINDS:
            listed = read_json(getattr(getattr(client, cls)(api), method), ns)
            for item in listed.get("items") or []:
                meta = item.get("metadata") or {}
                found[f"{kind}/{ns}/{meta.get('name')}"] = str(meta.get("uid"))
    return dict(sorted(found.items()))


def untouched(before: Mapping[str, str], now: Mapping[str, str]) -> dict[str, Any]:
    """Which objects of ``before`` (:func:`foreign_objects` before the lab) are still there with
    the same UID in ``now``: ``{"checked": n, "missing": [ref...], "replaced": [ref...]}``
    (replaced: the name is back under another UID, so the object the lab found was deleted)."""
    missing = sorted(ref for ref in before if ref not in now)
    replaced = sorted(ref for ref, uid in before.items() if ref in now and now[ref] != uid)
    return {"checked": len(before), "missing": missing, "replaced": replaced}


def census(
    *,
    present_crds: Sequence[str],
    chart_crds: Sequence[str],
    namespace: Json | None,
    nodes: Sequence[Json],
    labels_before: Mapping[str, Mapping[str, str]] | None,
    now_seconds: float | None = None,
    foreign_before: Mapping[str, str] | None = None,
    foreign_now: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The census document (module docstring) from what the cluster holds now.

    ``present_crds``: CRD names in the cluster; ``chart_crds``: the chart's; ``namespace``:
    the operator's namespace object, None when gone; ``nodes``: the nodes now;
    ``labels_before``: :func:`gpu_labels` of the nodes before the lab (the existing census'
    ``gpuLabels``), None when unknown (labels are then not counted: a label cannot be told
    from one that was there before); ``now_seconds``: POSIX time, for how long a namespace
    has been terminating; ``foreign_before``/``foreign_now``: :func:`foreign_objects` before the
    lab and now (``"untouched"`` is None without a record from before)."""
    present = set(present_crds)
    crds = sorted(c for c in set(chart_crds) if c in present)
    ns_doc: dict[str, Any] | None = None
    if namespace is not None:
        meta = namespace.get("metadata") or {}
        diag = diagnose_namespace(namespace, now_seconds)
        ns_doc = {
            "name": str(meta.get("name")),
            "phase": (namespace.get("status") or {}).get("phase"),
            "reason": diag.reason if diag else "",
            "detail": diag.detail if diag else "",
            "fix": diag.fix if diag else f"kubectl delete namespace {meta.get('name')}",
        }
    labels: dict[str, list[str]] = {}
    if labels_before is not None:
        for node, now in gpu_labels(nodes).items():
            before = labels_before.get(node) or {}
            new = sorted(k for k in now if k not in before)
            if new:
                labels[node] = new
    leftovers = [crd_resource(c) for c in crds]
    if ns_doc is not None:
        leftovers.append(f"namespace/{ns_doc['name']}")
    leftovers += [f"node/{node} label {key}" for node, keys in sorted(labels.items()) for key in keys]
    return {
        "crds": crds,
        "namespace": ns_doc,
        "labels": labels,
        "labelsBaseline": labels_before is not None,
        "leftovers": leftovers,
        "untouched": untouched(foreign_before, foreign_now or {}) if foreign_before else None,
    }


def read(
    api: Any,
    chart_crds: Sequence[str],
    labels_before: Mapping[str, Mapping[str, str]] | None,
    namespace: str = OPERATOR_NAMESPACE,
    foreign_before: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """:func:`census` of the cluster ``api`` (a kubernetes ``ApiClient``) reaches; with
    ``foreign_before`` (the ``foreignObjects`` output) its namespaces are counted again.

    Raises:
        kubernetes.client.rest.ApiException: a read other than the namespace's 404 failed.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api)
    crds = read_json(client.ApiextensionsV1Api(api).list_custom_resource_definition)
    present = [str(c["metadata"]["name"]) for c in crds.get("items") or []]
    try:
        ns_obj: Json | None = api.sanitize_for_serialization(core.read_namespace(namespace))
    except ApiException as exc:
        if exc.status != 404:
            raise
        ns_obj = None
    nodes = [api.sanitize_for_serialization(n) for n in core.list_node().items]
    return census(
        present_crds=present,
        chart_crds=chart_crds,
        namespace=ns_obj,
        nodes=nodes,
        labels_before=labels_before,
        now_seconds=time.time(),
        foreign_before=foreign_before,
        foreign_now=foreign_objects(api, _namespaces(foreign_before or {})),
    )


def _namespaces(refs: Mapping[str, str]) -> list[str]:
    """The namespaces of ``Namespace/<ns>`` refs."""
    return sorted(r.split("/", 1)[1] for r in refs if r.startswith("Namespace/"))
