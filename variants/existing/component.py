"""ExistingCluster component: a cluster the lab does not own, reached through a kubeconfig.

No cluster lifecycle: nothing here creates or deletes the cluster. At program time the
kubeconfig file is read (never written) and the chosen context is minified and flattened
into a self-contained kubeconfig, exposed as a secret for the Kubernetes provider, the
gate and the smoke check (variants.existing.ctl.load_kubeconfig).

Children:

* ``{name}-census`` (``variants.existing.ctl census``, read-only): before the chart goes in,
  the server version, the GPU nodes and which of the chart's CRDs exist already. It
  fails early, naming the context, when the API server does not answer.
* ``{name}-crd-cleanup`` (only with ``remove_crds``): its delete runs
  ``variants.existing.ctl remove-crds`` for the chart's CRDs except those the census found
  before the lab. The Helm release depends on it, so on destroy the release is uninstalled
  first and the CRDs go after it.

Both read the kubeconfig by path and context when they run (no credential on a command
line, and a rotated token still works at destroy time).

``leftovers``: what destroy leaves in the cluster, as ``customresourcedefinition/<name>``
(Helm never deletes a chart's CRDs): every CRD of the chart, or with ``remove_crds`` only
those that existed before the lab; and ``namespace/<name>`` for each adopted namespace.
``foreignObjects``: the census' UIDs of the adopted namespaces and what is in them, compared
after destroy (variants.existing.leftovers.untouched). ``gpuLabelsBefore``: the nodes' ``nvidia.com/`` labels
before the chart, so the leftover census after destroy (``variants.existing.ctl leftovers``)
can tell the labels the operator set from those that were there already.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi

from components.cluster import ClusterOutputs
from components.command import PYTHON, lab_command, parse_json_stdout
from gpulab.config import adopt
from gpulab.core import outputs as out
from variants.existing import ctl as existing_ctl


@dataclass(frozen=True)
class ExistingArgs:
    """Inputs.

    Attributes:
        kubeconfig_path: absolute path of the kubeconfig file (validated by config).
        context: the context in it (resolved, validated).
        crds: CRD names the chart installs (variants.existing.ctl.operator_crds).
        remove_crds: delete the chart's CRDs on destroy (those the lab created).
        timeout_seconds: for the census and for the CRD removal.
        adopted: ``adoptExisting``'s ``Namespace/<name>`` items (gpulab.config.adopt): the
            census counts what is in them by UID, and destroy leaves them (``leftovers``).
    """

    kubeconfig_path: str
    context: str
    crds: Sequence[str] = field(default_factory=tuple)
    remove_crds: bool = False
    timeout_seconds: int = 300
    adopted: Sequence[str] = field(default_factory=tuple)


class ExistingCluster(pulumi.ComponentResource, ClusterOutputs):
    """An existing cluster (see module docstring).

    Outputs: ``kubeconfig`` (secret str), ``kubernetes_version`` (str), ``context`` (str),
    ``gpu_nodes`` (list of ``{"name", "allocatable", "capacity"}`` before the operator ran),
    ``leftovers`` (list[str]), ``gpu_labels_before`` (``{node: {key: value}}``: the nodes'
    ``nvidia.com/`` labels before the chart, the census' ``gpuLabels``). ``release_after``:
    the resources the Helm release must depend on (the census, and the CRD clean-up when on).
    """

    kind = "existing"

    def __init__(self, name: str, args: ExistingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpulab:existing:ExistingCluster", name, None, opts)
        text, context = existing_ctl.load_kubeconfig(args.kubeconfig_path, args.context)
        ctl = [PYTHON, "-m", "variants.existing.ctl"]
        where = ["--kubeconfig-path", args.kubeconfig_path, "--context", context]
        crd_flags = [f"--crd={c}" for c in args.crds]
        adopted = sorted(adopt.namespaces(tuple(args.adopted)))
        self.census = lab_command(
            f"{name}-census",
            [*ctl, "census", *where, *crd_flags, *[f"--adopt={ns}" for ns in adopted]],
            timeout=args.timeout_seconds,
            opts=pulumi.ResourceOptions(parent=self),
        )
        info = parse_json_stdout(self.census.stdout, "existing_ctl census")
        preexisting: pulumi.Output[list[str]] = info.apply(lambda i: list(i.get("preexistingCrds") or []))
        # Destroy leaves an adopted namespace: it was never the lab's.
        kept = [f"namespace/{ns}" for ns in adopted]
        self.release_after: list[pulumi.Resource] = [self.census]
        if args.remove_crds:

            def keep_flags(keep: list[str]) -> list[str]:
                return [f"--keep={c}" for c in keep]

            self.crd_cleanup = lab_command(
                f"{name}-crd-cleanup",
                preexisting.apply(lambda keep: [*ctl, "crd-plan", *crd_flags, *keep_flags(keep)]),
                delete=preexisting.apply(
                    lambda keep: [
                        *ctl,
                        "remove-crds",
                        *where,
                        *crd_flags,
                        *keep_flags(keep),
                        "--timeout",
                        str(args.timeout_seconds),
                    ]
                ),
                timeout=args.timeout_seconds + 60,
                opts=pulumi.ResourceOptions(parent=self),
            )
            # Deleted after the release (which depends on it), so the CRDs outlive their users.
            self.release_after = [self.crd_cleanup]
            self.leftovers: pulumi.Output[list[str]] = preexisting.apply(
                lambda keep: [existing_ctl.resource_of(c) for c in args.crds if c in keep] + kept
            )
        else:
            self.leftovers = pulumi.Output.from_input([existing_ctl.resource_of(c) for c in args.crds] + kept)
        self.kubeconfig = pulumi.Output.secret(text)
        self.kubernetes_version = info.apply(lambda i: i["kubernetesVersion"])
        self.context = pulumi.Output.from_input(context)
        self.gpu_nodes = info.apply(lambda i: i.get("gpuNodes"))
        self.gpu_labels_before = info.apply(lambda i: i.get("gpuLabels") or {})
        self.foreign_objects = info.apply(lambda i: i.get("foreignObjects") or {})
        self.ready = self.census
        self.extra_outputs = {
            out.LEFTOVERS: self.leftovers,
            out.GPU_LABELS_BEFORE: self.gpu_labels_before,
            out.ADOPTED_OBJECTS: pulumi.Output.from_input(list(args.adopted)),
            out.FOREIGN_OBJECTS: self.foreign_objects,
        }
        self.register_outputs(
            {
                "kubeconfig": self.kubeconfig,
                "kubernetesVersion": self.kubernetes_version,
                "context": self.context,
                "gpuNodes": self.gpu_nodes,
                "leftovers": self.leftovers,
                "gpuLabelsBefore": self.gpu_labels_before,
                "foreignObjects": self.foreign_objects,
            }
        )
