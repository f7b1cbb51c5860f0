"""Objects of a cluster the lab does not own that the lab would take over: found before any change.

Why: on create, pulumi-kubernetes (v4.25.0, server-side apply, the provider's default) never
sends a create; it sends an apply PATCH under its own field manager, so an object of the same
name that is already there is updated in place, "upserted" (provider/pkg/await/await.go,
``Creation``: "we currently always upsert the object"). ``force`` is false unless the object
carries the ``pulumi.com/patchForce`` annotation or ``PULUMI_K8S_ENABLE_PATCH_FORCE`` is set
(same file, ``patchForce``), so only a field another manager set to another value conflicts;
every field nobody else set (the lab's labels on someone's namespace) is simply added. The
object is then the stack's, and ``Deletion`` (same file) deletes it with everything in it.
Helm guards its own release names (pkg/action/install.go: a name in use is refused) and the
objects its chart renders (pkg/action/validate.go: an object without the release's ownership
metadata is refused), in helm v3.18.6, the one pulumi-kubernetes v4.25.0 builds in
(provider/go.mod); what Helm does not guard are the objects the lab creates itself, and the
release name is checked here so that the refusal comes before anything is created.

:func:`conflicts` (pure) takes what the plan would create (:class:`Planned`), what the cluster
holds under those names, and ``adoptExisting`` (gpulab.config.adopt), and returns one failed
finding per object in the way, every one at once, each naming the object, its owner's marks
(:func:`owner_marks`) and the choices. :func:`read` reads those objects from a live cluster.

The lab's marker: label ``app.kubernetes.io/managed-by`` or ``app.kubernetes.io/part-of`` with
the value ``gpu-lab`` (:data:`gpulab.core.names.LAB_LABELS`) on an object, and the description
:data:`gpulab.core.names.RELEASE_DESCRIPTION` on a Helm release the lab installed. A release in
a namespace that carries the lab's marker is the lab's too: the lab made that namespace for its
release, and the releases it installed before it wrote the description have none.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpulab.core import names
from gpulab.core.findings import Finding, Status

#: The preflight check's id.
CHECK: Final = "foreign-object"
#: A Helm release: stored by Helm 3 as Secrets ``sh.helm.release.v1.<name>.v<revision>``
#: labelled ``owner=helm,name=<name>`` in the release's namespace (helm pkg/storage/driver/secrets.go).
RELEASE_KIND: Final = "HelmRelease"
_HELM_MARKS: Final = ("meta.helm.sh/release-name", "meta.helm.sh/release-namespace")

Json = Mapping[str, Any]


@dataclass(frozen=True)
class Planned:
    """One named object the lab's plan creates on the cluster.

    Attributes:
        kind: ``Namespace``, ``Pod``, ``ConfigMap``, ``DaemonSet`` or :data:`RELEASE_KIND`.
        name: its name.
        namespace: its namespace; None for a cluster-scoped kind.
        fixes: the choices other than adopting it, each a sentence with its command (another
            name where the lab's name is a setting, ``gpuStack: found``, ...).
    """

    kind: str
    name: str
    namespace: str | None = None
    fixes: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        """``Kind/name`` or ``Kind/namespace/name``: how findings, ``adoptExisting`` and the
        census name it."""
        return "/".join(p for p in (self.kind, self.namespace, self.name) if p)


def is_labs(obj: Json) -> bool:
    """True when ``obj`` (a Kubernetes object as JSON) carries the lab's marker label."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return any(labels.get(key) == names.PROJECT for key in names.LAB_LABELS)


def release_info(secret: Json) -> Json:
    """The release record Helm stored in ``secret`` (its ``data.release``: base64 of the
    base64 of gzipped JSON, helm pkg/storage/driver/util.go ``encodeRelease``); ``{}`` when it
    does not decode."""
    raw = str((secret.get("data") or {}).get("release") or "")
    try:
        blob = base64.b64decode(base64.b64decode(raw))
        if blob[:2] == b"\x1f\x8b":
            blob = gzip.decompress(blob)
        doc = json.loads(blob)
    except (binascii.Error, ValueError, OSError):
        return {}
    return doc if isinstance(doc, Mapping) else {}


def release_is_labs(secrets: Sequence[Json]) -> bool:
    """True when the newest revision of a release (its Helm ``secrets``) was installed or
    upgraded by the lab: its description is :data:`gpulab.core.names.RELEASE_DESCRIPTION`."""
    if not secrets:
        return False

    def revision(s: Json) -> int:
        v = str(((s.get("metadata") or {}).get("labels") or {}).get("version") or "0")
        return int(v) if v.isdigit() else 0

    newest = max(secrets, key=revision)
    return (release_info(newest).get("info") or {}).get("description") == names.RELEASE_DESCRIPTION


def owner_marks(obj: Json) -> list[str]:
    """What says whose ``obj`` is: its ``app.kubernetes.io/managed-by``/``part-of`` labels,
    Helm's release annotations and the field managers of ``metadata.managedFields``; for a
    release's Secret, Helm's ``status`` and ``version`` labels and the release's description."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    marks = [f"label {k}={labels[k]}" for k in names.LAB_LABELS if k in labels]
    marks += [f"annotation {k}={annotations[k]}" for k in _HELM_MARKS if k in annotations]
    if labels.get("owner") == "helm":
        marks += [f"helm {k}={labels[k]}" for k in ("status", "version") if k in labels]
        described = (release_info(obj).get("info") or {}).get("description")
        if described:
            marks.append(f"helm description {described!r}")
    managers = sorted({str(f.get("manager")) for f in meta.get("managedFields") or [] if f.get("manager")})
    if managers:
        marks.append(f"field managers {', '.join(managers)}")
    return marks or ["no owner's marks"]


def _adopt_fix(p: Planned, stack: str) -> str:
    return (
        f"let the lab use it as it is (recorded in the adoptedObjects output and on the card; the lab "
        f"only patches its Pod Security label and destroy leaves it and what is in it): "
        f"scripts/pulumi config set --stack {stack} gpu-lab:adoptExisting {p.ref}"
    )


def _conflict(p: Planned, found: Json | Sequence[Json], stack: str) -> Finding:
    objs = [found] if isinstance(found, Mapping) else list(found)
    where = f" in namespace {p.namespace}" if p.namespace else ""
    marks = "; ".join(m for o in objs for m in owner_marks(o))
    choices = list(p.fixes)
    if p.kind == "Namespace":
        choices.append(_adopt_fix(p, stack))
    return Finding(
        CHECK,
        Status.FAIL,
        f"{p.kind} {p.name}{where} exists and is not the lab's (owner's marks: {marks}); the lab "
        "would take it over and destroy would delete it",
        "nothing of that name on the cluster, or only what the lab made",
        "choose one: " + "; or ".join(choices),
        subject=p.ref,
    )


def conflicts(
    planned: Iterable[Planned],
    lookup: Callable[[Planned], Json | Sequence[Json] | None],
    adopted: Iterable[str],
    stack: str = "<stack>",
) -> list[Finding]:
    """One failed finding per planned object that exists and is not the lab's, and per
    ``adoptExisting`` item that cannot be adopted; ``[]`` when the plan takes nothing over.

    ``planned``: a namespace before the objects in it. ``lookup(p)``: the object as JSON, for
    :data:`RELEASE_KIND` the release's Helm Secrets (empty: no release), None when absent.
    ``adopted``: ``Namespace/<name>`` items (gpulab.config.adopt): such a namespace is used as
    it is when it exists and is not the lab's; one that is absent, is the lab's own (adopting
    it would delete it: the lab would swap its Namespace for a patch) or is none the plan
    creates is refused, naming the fix.
    ``stack``: named in the fixes' commands.
    """
    adopt = set(adopted)
    failed: list[Finding] = []
    refs: set[str] = set()
    labs_namespaces: set[str] = set()
    for p in planned:
        refs.add(p.ref)
        found = lookup(p)
        if p.kind == "Namespace" and isinstance(found, Mapping) and is_labs(found):
            labs_namespaces.add(p.name)
        if p.kind == RELEASE_KIND and p.namespace in labs_namespaces:
            continue  # the lab's namespace, made for this release (module docstring)
        if p.ref in adopt:
            if found is None or (isinstance(found, Mapping) and is_labs(found)):
                state = "does not exist" if found is None else "is the lab's own (it carries the lab's label)"
                failed.append(
                    Finding(
                        CHECK,
                        Status.FAIL,
                        f"gpu-lab:adoptExisting names {p.ref}, which {state}: there is nothing of "
                        "someone else's to adopt",
                        fix=f"remove {p.ref} from gpu-lab:adoptExisting "
                        f"(scripts/pulumi config set --stack {stack} gpu-lab:adoptExisting ...)",
                        subject=p.ref,
                    )
                )
            continue
        if not found:
            continue
        if not (is_labs(found) if isinstance(found, Mapping) else release_is_labs(found)):
            failed.append(_conflict(p, found, stack))
    for ref in sorted(adopt - refs):
        failed.append(
            Finding(
                CHECK,
                Status.FAIL,
                f"gpu-lab:adoptExisting names {ref}, which this lab would not create (it creates "
                f"{', '.join(sorted(r for r in refs if r.startswith('Namespace/'))) or 'no namespace'})",
                fix=f"remove {ref} from gpu-lab:adoptExisting",
                subject=ref,
            )
        )
    return failed


def read(api: Any, p: Planned) -> Json | list[Json] | None:
    """``p`` as the cluster ``api`` (a kubernetes ``ApiClient``) holds it: the object as JSON, a
    release's Helm Secrets (a list, empty when there is no such release), None when absent.

    Raises:
        kubernetes.client.rest.ApiException: a read failed other than with 404.
        ValueError: ``p.kind`` is none of :class:`Planned`'s kinds.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    ns = p.namespace or ""
    if p.kind == RELEASE_KIND:
        found = core.list_namespaced_secret(ns, label_selector=f"owner=helm,name={p.name}")
        return [api.sanitize_for_serialization(s) for s in found.items]
    readers: dict[str, Callable[[], Any]] = {
        "Namespace": lambda: core.read_namespace(p.name),
        "Pod": lambda: core.read_namespaced_pod(p.name, ns),
        "ConfigMap": lambda: core.read_namespaced_config_map(p.name, ns),
        "DaemonSet": lambda: apps.read_namespaced_daemon_set(p.name, ns),
    }
    if p.kind not in readers:
        raise ValueError(f"no reader for kind {p.kind!r}")
    try:
        obj: Json = api.sanitize_for_serialization(readers[p.kind]())
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return obj
