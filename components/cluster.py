"""What every cluster component gives the rest of the lab, and the shape most of them share.

A variant's component (``variants/<name>/component.py``) yields a :class:`ClusterOutputs`:
a kubeconfig and the server version for the Kubernetes provider and the checks, the
resource whose completion means the API server answers, what the Helm release must be
installed after, and any outputs only that variant has.

:class:`CommandCluster` is the common case: one ``command:local:Command`` that runs
``python -m variants.<name>.ctl up ...`` on create (printing ``{"kubeconfig", "kubernetesVersion",
...}`` as JSON on stdout) and ``... down ...`` on destroy. The cluster is a named thing, so a
replacement (a change under ``triggers``) deletes the old one first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.command import PYTHON, lab_command, parse_json_stdout
from gpulab.kube.client import KUBECONFIG_ENV


@dataclass(frozen=True)
class PreRelease:
    """A GPU stack's check before its release, run by the cluster-identity command in the
    same process once the cluster is verified (``identity record --then``).

    Attributes:
        argv: the check's module and arguments (a module of gpulab.kube.identity.PRE_RELEASE).
            A change of them is a change of the command's ``create``: an in-place update
            that re-runs both with the identity recorded before (never ``triggers``, which
            would replace the command and record the identity afresh).
        timeout: seconds the check may take (CRD upgrades included), besides the identity's.
    """

    argv: Sequence[str]
    timeout: int


class ClusterOutputs:
    """Attributes a cluster component exposes.

    Attributes:
        kind: the variant's name (``"minikube"``, ``"sim"``, ...).
        kubeconfig: flattened kubeconfig text (secret).
        kubernetes_version: the server's gitVersion, e.g. ``"v1.36.3"``.
        ready: the resource whose completion means the API server answers.
        release_after: resources the operator's Helm release must depend on (and outlive
            on destroy); empty for most variants.
        extra_outputs: stack outputs only this variant has (output key -> value).
    """

    kind: str
    kubeconfig: pulumi.Output[str]
    kubernetes_version: pulumi.Output[str]
    ready: pulumi.Resource
    release_after: list[pulumi.Resource]
    extra_outputs: dict[str, pulumi.Output[Any]]


class CommandCluster(pulumi.ComponentResource, ClusterOutputs):
    """A cluster made by one ``<ctl> up`` command and deleted by ``<ctl> down``.

    Args:
        type_token: the component's ``gpulab:<variant>:<Type>``.
        name: the component's name; the command is ``f"{name}-cluster"``.
        ctl: the variant's helper module (``"variants.kind.ctl"``).
        where: arguments of both ``up`` and ``down`` (e.g. ``--name N --workdir W``), first.
        up: arguments after ``up``; down: arguments after ``down``.
        triggers: values whose change rebuilds the cluster (delete first: same name).
        timeout: seconds for up and for down.
        opts: the component's options.

    Raises (at ``up``): the command's error, whose message names the cause and the fix.
    """

    def __init__(
        self,
        type_token: str,
        name: str,
        *,
        ctl: str,
        up: Sequence[pulumi.Input[str]],
        down: Sequence[pulumi.Input[str]] = (),
        triggers: Sequence[Any],
        timeout: int,
        where: Sequence[pulumi.Input[str]] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(type_token, name, None, opts)
        argv = [PYTHON, "-m", ctl]
        self.cluster = lab_command(
            f"{name}-cluster",
            [*argv, "up", *where, *up],
            delete=[*argv, "down", *where, *down],
            triggers=triggers,
            timeout=timeout,
            delete_before_replace=True,
            secret_stdout=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.info = parse_json_stdout(self.cluster.stdout, f"{ctl} up")
        self.kubeconfig = pulumi.Output.secret(self.info.apply(lambda i: i["kubeconfig"]))
        self.kubernetes_version = self.fact("kubernetesVersion")
        self.ready: pulumi.Resource = self.cluster
        self.release_after = []
        self.extra_outputs = {}

    def fact(self, key: str) -> pulumi.Output[Any]:
        """A non-secret field of what ``up`` printed (``"node"``, ``"installed"``, ...)."""
        return pulumi.Output.unsecret(self.info.apply(lambda i: i[key]))

    def finish(self, outputs: Mapping[str, pulumi.Input[Any]]) -> None:
        """Register the component's outputs: kubeconfig, version and the variant's own."""
        self.register_outputs(
            {"kubeconfig": self.kubeconfig, "kubernetesVersion": self.kubernetes_version, **outputs}
        )


def identity_command(
    cluster: ClusterOutputs,
    owned: bool,
    opts: pulumi.ResourceOptions | None = None,
    then: PreRelease | None = None,
) -> Any:
    """The command that records the identity of the cluster the stack is built on
    (``python -m gpulab.kube.identity record``, gpulab.kube.identity): it runs once the cluster answers,
    and the Kubernetes provider depends on it. Its stdout is the JSON ``{"server",
    "caSha256", "kubeSystemUid", "createdAt"}``. With ``then`` (the GPU stack's
    :class:`PreRelease`) it runs that check next, in the same process, and fails with it; a
    change of ``then``'s arguments re-runs both as an update.

    It runs again as an in-place update whenever the kubeconfig changes, given the identity
    it recorded before (pulumi-command's ``PULUMI_COMMAND_STDOUT``): a kubeconfig that now
    reaches another cluster, or the recorded one at another API server endpoint, fails it,
    naming both, before the provider (which a new endpoint would replace, and every object
    with it) or any object changes. A cluster the lab made anew (``owned``, and the cluster
    resource was replaced: its id changed) is recorded afresh instead.
    """
    ready = cluster.ready
    rebuilt = [getattr(ready, "id", None)] if owned and getattr(ready, "id", None) is not None else []
    record = [PYTHON, "-m", "gpulab.kube.identity", "record", "--stack", pulumi.get_stack()]
    return lab_command(
        "cluster-identity",
        [*record, "--then", *then.argv] if then else record,
        environment=pulumi.Output.secret({KUBECONFIG_ENV: cluster.kubeconfig}),
        triggers=rebuilt,
        # The pre-release check may upgrade CRDs (gpulab.kube.crd_check --apply).
        timeout=120 + (then.timeout if then else 0),
        previous_stdout=True,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[ready])),
    )
