"""A guest's manners: the permissions the lab needs on a cluster it does not own, asked first.

``python -m gpulab.kube access --namespace NS`` asks the API server, one
SelfSubjectAccessReview per permission (``authorization.k8s.io/v1``: "can I do this?",
answered for the caller's own credentials, no extra permission needed), for every
permission of :func:`required`, and fails naming each one that is missing, with why the lab
needs it and the fix, before anything is created (every resource of a found GPU stack's lab
depends on this command).

What the lab needs, and nothing more (``deploy/rbac/gpu-lab-guest.yaml`` grants exactly
this; tests/unit/kube/test_access.py keeps the two the same):

* read-only outside its namespace: nodes (the GPU nodes and their labels), Pods in every
  namespace (the device plugin's, found by label), ClusterPolicies (the operator's state,
  where installed), namespace ``kube-system`` (the cluster's identity, gpulab.kube.identity);
* cluster-wide, one write: create its own namespace, and get and delete that one only;
* in its namespace: create, get, list, watch and delete Pods, read their logs and events.

Exit codes: 0 every permission granted (prints ``{"allowed": [...], "namespace"}``), 1 one or
more missing (each named on stderr).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpulab.kube.client import GateError
from gpulab.kube.results import AccessResult

#: Where the guest RBAC file lives in the repository (applied by the cluster's admin).
RBAC_FILE: Final = "deploy/rbac/gpu-lab-guest.yaml"


@dataclass(frozen=True)
class Permission:
    """One ``verb`` on ``resource`` (``pods``, ``pods/log``) of API ``group`` ("" core), in
    ``namespace`` ("" cluster-wide), on object ``name`` ("" any); ``why`` the lab needs it."""

    verb: str
    resource: str
    group: str = ""
    namespace: str = ""
    name: str = ""
    why: str = ""

    def describe(self) -> str:
        """``"create pods in namespace gpu-lab"``, ``"list nodes (cluster-wide)"``."""
        what = f"{self.resource}/{self.name}" if self.name else self.resource
        what = f"{what}.{self.group}" if self.group else what
        where = f"in namespace {self.namespace}" if self.namespace else "(cluster-wide)"
        return f"{self.verb} {what} {where}"


def required(namespace: str) -> list[Permission]:
    """Every permission the lab with a found GPU stack needs (module docstring)."""
    read_nodes = [
        Permission(v, "nodes", why="the GPU nodes, their labels and allocatable") for v in ("get", "list")
    ]
    return [
        *read_nodes,
        Permission(
            "list",
            "pods",
            why="the device plugin's Pods (found by label) and the GPUs other Pods hold, any namespace",
        ),
        Permission(
            "list",
            "customresourcedefinitions",
            "apiextensions.k8s.io",
            why="the census: which CRDs were there before the lab",
        ),
        Permission("get", "clusterpolicies", "nvidia.com", name="cluster-policy", why="the operator's state"),
        Permission(
            "get", "namespaces", name="kube-system", why="the cluster's identity (its kube-system UID)"
        ),
        Permission("create", "namespaces", why=f"the lab's own namespace {namespace}"),
        Permission("get", "namespaces", name=namespace, why="its own namespace"),
        Permission("delete", "namespaces", name=namespace, why="make destroy removes its own namespace"),
        *(
            Permission(v, "pods", namespace=namespace, why="the per-node smoke and compute Pods")
            for v in ("create", "get", "list", "watch", "delete")
        ),
        Permission(
            "get", "pods/log", namespace=namespace, why="what the Pods printed (nvidia-smi, vectorAdd)"
        ),
        Permission("list", "events", namespace=namespace, why="the Pods' events (Scheduled, Pulled)"),
    ]


#: ``allowed(permission) -> bool``: one SelfSubjectAccessReview.
Ask = Callable[[Permission], bool]


def missing(ask: Ask, perms: Sequence[Permission]) -> list[Permission]:
    """The permissions ``ask`` says the caller lacks, in order."""
    return [p for p in perms if not ask(p)]


def ssar(api: Any) -> Ask:
    """:data:`Ask` through the API: a SelfSubjectAccessReview per question."""
    from kubernetes import client

    authz = client.AuthorizationV1Api(api)

    def ask(p: Permission) -> bool:
        attrs = client.V1ResourceAttributes(
            verb=p.verb,
            resource=p.resource.split("/")[0],
            subresource=p.resource.split("/")[1] if "/" in p.resource else None,
            group=p.group,
            namespace=p.namespace or None,
            name=p.name or None,
        )
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs)
        )
        answer = authz.create_self_subject_access_review(review)
        return bool(answer.status and answer.status.allowed)

    return ask


def check(ask: Ask, namespace: str) -> AccessResult:
    """Every permission of :func:`required` granted, or a GateError naming each missing one.

    Raises:
        GateError: ``"missing permission(s) ..."``, one line per permission with why, and the fix.
    """
    perms = required(namespace)
    lacking = missing(ask, perms)
    if lacking:
        lines = [f"  - {p.describe()}: {p.why}" for p in lacking]
        raise GateError(
            f"the lab lacks {len(lacking)} of the {len(perms)} permissions it needs on this cluster "
            "(nothing was created):\n"
            + "\n".join(lines)
            + f"\n  fix: ask the cluster's admin to apply {RBAC_FILE} (read-only outside namespace "
            f"{namespace}; edit its namespace first if labNamespace is not gpu-lab), or use a context "
            "that has these permissions"
        )
    return AccessResult(namespace=namespace, allowed=[p.describe() for p in perms])
