"""The lab's namespaces: created and deleted by the lab, or adopted (patched, then given back).

A namespace the lab creates is a ``Namespace`` resource carrying the lab's marker
(``app.kubernetes.io/managed-by: gpu-lab``, gpulab.core.names.LAB_LABELS); destroy deletes it and
everything in it. A namespace named in ``adoptExisting`` (gpulab.config.adopt) is someone else's:
the lab makes a ``NamespacePatch`` instead, the kind pulumi-kubernetes provides "to modify existing
Kubernetes resources" it does not create (pulumi-kubernetes v4.25.0, the Patch resources'
description in sdk/python/pulumi_kubernetes/core/v1/NamespacePatch.py). The patch applies only the
labels the lab needs, under a field manager of its own, without the lab's marker, and never
creates or deletes the object: on destroy the provider relinquishes that manager's fields with an
empty apply (provider/pkg/await/await.go ``Deletion`` for a Patch resource calls
provider/pkg/ssa/actions.go ``Relinquish``), so the namespace stays, with what its owner put in
it and without the labels the lab added. ``retain_on_delete`` would also leave the namespace, but
as the lab's: relabelled by its apply and recorded as created by the stack.
"""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
import pulumi_kubernetes as k8s

from gpulab.core import names


def lab_namespace(
    resource_name: str,
    namespace: str,
    labels: Mapping[str, str],
    adopted: bool,
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Namespace | k8s.core.v1.NamespacePatch:
    """Namespace ``namespace`` with ``labels``: a ``Namespace`` marked as the lab's
    (``app.kubernetes.io/managed-by: gpu-lab`` added), or with ``adopted`` a ``NamespacePatch``
    of ``labels`` alone (module docstring). Either has ``metadata["name"]`` as an output."""
    if adopted:
        return k8s.core.v1.NamespacePatch(
            resource_name,
            metadata={"name": namespace, **({"labels": dict(labels)} if labels else {})},
            opts=opts,
        )
    return k8s.core.v1.Namespace(
        resource_name,
        metadata={"name": namespace, "labels": {**labels, names.LAB_LABELS[0]: names.PROJECT}},
        opts=opts,
    )
