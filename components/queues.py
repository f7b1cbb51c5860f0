"""QueueLayer component: Kueue (``queues: true``), a quota from what the gate measured, and its proof.

Children:

* Namespace ``kueue-system`` (the lab's).
* A command whose delete, after the release's, sweeps the chart's aggregated ClusterRoles that
  kube-controller-manager writes back (gpulab.kube.queues.sweep).
* ``helm.v3.Release`` ``kueue``: Kueue's chart at the pinned version (or a local chart
  directory, offline) with gpulab.config.queues.chart_values; its CRDs are templates of the chart
  (templates/crd/), so uninstalling the release removes them. ``skip_await``: readiness is the
  controller's (below).
* Where the variant runs Kueue's controller itself (``VariantSpec.queue_controller``: the sim, a
  process of its cluster), the command that starts it and waits until the API server reaches its
  webhooks, and stops it on destroy (after the queue objects are gone: they depend on it).
* ResourceFlavor ``gpu-lab-gpu`` (the GPU nodes: ``nvidia.com/gpu.present=true``), ClusterQueue
  ``gpu-lab`` whose ``nominalQuota`` of the GPU resource is the gate's measured allocatable (an
  output, never a typed-in number), LocalQueue ``gpu-lab`` in the lab's namespace.
* The proof (``python -m gpulab.kube queues``, gpulab/kube/queues.py), after the last GPU Pod.

Destroy runs it backwards: the queue objects (Kueue's controller removes their finalizers), the
controller, the release with its CRDs, the namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from components.command import PYTHON, check_result, kube_command, lab_command
from components.namespace import lab_namespace
from gpulab.config.queues import (
    CHART,
    CLUSTER_QUEUE,
    FLAVOR,
    GROUP,
    LOCAL_QUEUE,
    MEASURED_ANNOTATION,
    NAMESPACE,
    RELEASE,
    VERSION,
    QueueSettings,
    chart_values,
    cluster_queue_spec,
)
from gpulab.kube.client import KUBECONFIG_ENV
from gpulab.kube.dra import GPU_NODE_LABEL
from gpulab.kube.results import QueueProofResult


@dataclass(frozen=True)
class QueueArgs:
    """Inputs: ``settings`` (gpulab.config.queues.QueueSettings), ``kubeconfig`` (the checks',
    secret), ``resource`` (the GPU resource the node advertises: ``gpuResource``), ``quota`` (the
    gate's measured allocatable of it), ``namespace`` (the lab's, for the LocalQueue and the
    proof), ``image`` (the proof Jobs'), ``controller`` (the variant's start and stop argv for
    Kueue's controller, or None: the chart's Deployment runs it), ``simulated`` (the Jobs' Pods
    are kwok's), ``timeout_seconds``, ``after`` (the proof runs after these: the last GPU Pod's
    check)."""

    settings: QueueSettings
    kubeconfig: pulumi.Input[str]
    resource: str
    quota: pulumi.Input[int]
    namespace: str
    image: str
    controller: tuple[list[str], list[str]] | None
    simulated: bool
    timeout_seconds: int = 600
    after: Sequence[pulumi.Resource] = ()


def _custom(
    name: str, kind: str, metadata: dict[str, Any], spec: pulumi.Input[Any], opts: pulumi.ResourceOptions
) -> Any:
    return k8s.apiextensions.CustomResource(
        name, api_version=f"{GROUP}/{VERSION}", kind=kind, metadata=metadata, spec=spec, opts=opts
    )


class QueueLayer(pulumi.ComponentResource):
    """Kueue, the lab's queue and its proof (see module docstring). Type token ``gpulab:queues:QueueLayer``.

    Outputs: ``facts`` (the ``queues`` stack output: the proof's facts with the chart's version and
    source and where the controller ran), ``measured_at``; ``proof`` the proof command.
    """

    def __init__(
        self, name: str, args: QueueArgs, provider: k8s.Provider, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpulab:queues:QueueLayer", name, None, opts)
        s = args.settings
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = lab_namespace(f"{name}-namespace", NAMESPACE, {}, False, k8s_opts)
        self.sweep = self._sweep(name, args.kubeconfig)
        self.release = self._release(name, args, k8s_opts)
        ready = self._controller(name, args)
        self.controller = ready
        # Kueue's webhooks admit these: created once the controller answers, deleted before it stops.
        after_ready = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[ready]))
        self.flavor = _custom(
            f"{name}-flavor",
            "ResourceFlavor",
            {"name": FLAVOR},
            {"nodeLabels": dict([GPU_NODE_LABEL.split("=", 1)])},
            after_ready,
        )
        self.cluster_queue = _custom(
            f"{name}-cluster-queue",
            "ClusterQueue",
            {
                "name": CLUSTER_QUEUE,
                "annotations": {MEASURED_ANNOTATION: pulumi.Output.from_input(args.quota).apply(str)},
            },
            pulumi.Output.from_input(args.quota).apply(
                lambda q: cluster_queue_spec(FLAVOR, args.resource, int(q))
            ),
            pulumi.ResourceOptions.merge(
                after_ready, pulumi.ResourceOptions(depends_on=[ready, self.flavor])
            ),
        )
        self.local_queue = _custom(
            f"{name}-local-queue",
            "LocalQueue",
            {"name": LOCAL_QUEUE, "namespace": args.namespace},
            {"clusterQueue": CLUSTER_QUEUE},
            pulumi.ResourceOptions.merge(
                after_ready, pulumi.ResourceOptions(depends_on=[ready, self.cluster_queue])
            ),
        )
        quota = pulumi.Output.from_input(args.quota)
        self.proof = kube_command(
            f"{name}-proof",
            _proof_argv(args, quota),
            args.kubeconfig,
            # Re-proven when the quota (the gate's measurement) or the queue changes.
            triggers=[quota, self.cluster_queue.id],
            timeout=args.timeout_seconds + 120,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.local_queue, *args.after]),
        )
        proof = check_result(self.proof.stdout, QueueProofResult)
        where = "a process of the simulated lab" if args.controller is not None else "the chart's Deployment"
        self.facts = proof.apply(
            lambda p: {
                **p.to_json(),
                "chartVersion": s.local_version() or s.version,
                "chartSource": s.source,
                "controller": where,
                "podsSimulated": args.simulated,
            }
        )
        self.measured_at = proof.apply(lambda p: p.measured_at)
        self.register_outputs({"queues": self.facts})

    def _sweep(self, name: str, kubeconfig: pulumi.Input[str]) -> local.Command:
        """Destroyed after the release (which depends on it): the aggregated ClusterRoles that
        kube-controller-manager writes back after helm uninstall (gpulab.kube.queues.sweep)."""
        return lab_command(
            f"{name}-sweep",
            [PYTHON, "-m", "gpulab.kube", "queues-census"],
            delete=[PYTHON, "-m", "gpulab.kube", "queues-sweep"],
            environment=pulumi.Output.secret({KUBECONFIG_ENV: kubeconfig}),
            timeout=120,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _release(self, name: str, args: QueueArgs, k8s_opts: pulumi.ResourceOptions) -> k8s.helm.v3.Release:
        """Kueue's chart (the pinned version, or a local chart directory), after the sweep."""
        s = args.settings
        return k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE,
            chart=s.path or CHART,
            version=None if s.path else s.version,
            repository_opts=None if s.path else k8s.helm.v3.RepositoryOptsArgs(repo=s.repo),
            namespace=self.namespace.metadata["name"],
            values=chart_values(controller_in_chart=args.controller is None),
            timeout=args.timeout_seconds,
            cleanup_on_fail=True,
            skip_await=True,  # the controller's readiness is the webhook answering (below)
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.sweep])),
        )

    def _controller(self, name: str, args: QueueArgs) -> pulumi.Resource:
        """What says Kueue's controller is ready: the variant's command that starts it (and stops
        it on destroy), else the release (the chart's Deployment runs it)."""
        if args.controller is None:
            return self.release
        start, stop = args.controller
        return lab_command(
            f"{name}-controller",
            start,
            delete=stop,
            # Another chart revision (its config, its webhooks) restarts the controller.
            triggers=[self.release.status.apply(lambda st: st.revision if st else None)],
            timeout=args.timeout_seconds,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )


def _proof_argv(args: QueueArgs, quota: pulumi.Output[Any]) -> list[pulumi.Input[str]]:
    """The proof's arguments after ``python -m gpulab.kube`` (gpulab.kube.cli's ``queues``)."""
    return [
        "queues",
        "--namespace",
        args.namespace,
        "--local-queue",
        LOCAL_QUEUE,
        "--cluster-queue",
        CLUSTER_QUEUE,
        "--resource",
        args.resource,
        "--quota",
        quota.apply(str),
        "--image",
        args.image,
        "--timeout",
        str(args.timeout_seconds),
    ]
