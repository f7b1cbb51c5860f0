"""FoundGpuStack component: a GPU stack somebody else installed, verified on every GPU node.

``gpuStack: found`` (``existing``, ``sim``): in place of the GPU Operator and its gate
(components/gpu_operator.py), with the same outputs. ``gpuStack: device-plugin`` uses it too,
after the lab installed NVIDIA's device plugin chart (components/device_plugin.py, given as
``FoundStackArgs.installed``): then the gate also waits for the chart's device-plugin Pod and
GPU Feature Discovery's labels on every GPU node (``--installed-in``), and the chart's version
and source are the outputs'. Children:

* ``{name}-access`` (``python -m gpulab.kube access``): a SelfSubjectAccessReview per
  permission the lab needs (gpulab.kube.access); a missing one stops the lab here, named,
  before anything is created: every other child depends on it.
* Namespace ``labNamespace``: the only place the lab writes (its Pods); destroy deletes it.
* The gate (``python -m gpulab.kube fleet``): every GPU node gated against what its labels say,
  then a smoke and a compute Pod pinned to each node that passed, ``fleetParallelism`` at a
  time (gpulab.kube.fleet); its JSON is the node table. It installs and deletes nothing of the
  GPU stack: no Helm release, no ClusterPolicy, no operand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s
from pulumi_command import local

from components.command import check_result, kube_command
from components.device_plugin import DevicePluginChartRelease
from components.namespace import lab_namespace
from gpulab.config.device_plugin import NAMESPACE as PLUGIN_NAMESPACE
from gpulab.config.fleet import FleetSettings
from gpulab.core import names
from gpulab.kube.results import FleetResult


@dataclass(frozen=True)
class FoundStackArgs:
    """Inputs: ``fleet`` (gpulab.config.fleet.FleetSettings), ``kubeconfig`` (secret),
    ``smoke_image``, ``compute_image`` (None: no compute Pods, "not tested"), ``resource``,
    ``runtime_class``, ``timeout_seconds`` (each Pod), ``grace_seconds`` (a node's time to
    advertise), ``simulated``, ``profile``, ``node_command`` (how fixes reach a GPU node: the
    variant's), ``release_after`` (the census: before anything),
    ``dcgm_exporter`` (the lab reads the DCGM exporter found there; False: its checklist item
    is not tested, as with an operator installed without one), ``installed`` (NVIDIA's device
    plugin chart the lab installed, ``gpuStack: device-plugin``; None: the stack was found),
    ``install_timeout`` (seconds the installed chart's Pods may take to come up)."""

    fleet: FleetSettings
    kubeconfig: pulumi.Input[str]
    smoke_image: str
    compute_image: str | None
    resource: str = names.GPU_RESOURCE
    runtime_class: str | None = None
    timeout_seconds: int = 300
    grace_seconds: int = 10
    simulated: bool = False
    profile: str = names.DEFAULT_PROFILE
    node_command: str | None = None
    release_after: tuple[pulumi.Resource, ...] = ()
    dcgm_exporter: bool = False
    installed: DevicePluginChartRelease | None = None
    install_timeout: int = 600
    #: operatorComponents' settings of an installed chart (time-slicing, device list strategy).
    chart_components: dict[str, bool | int | str | None] = field(default_factory=dict)
    #: ``adoptExisting``'s namespaces: labNamespace is patched, not created, when it is one of them.
    adopted_namespaces: frozenset[str] = frozenset()


class FoundGpuStack(pulumi.ComponentResource):
    """A found GPU stack (see module docstring). Type token ``gpulab:fleet:FoundGpuStack``.

    Outputs (GpuOperator's): ``chart_version`` / ``chart_source`` (None: no chart),
    ``components``, ``allocatable_gpus`` / ``capacity_gpus`` (summed over the GPU nodes),
    ``cluster_policy_state`` (None where no operator runs), ``device_plugin_pods``,
    ``mig_resources``, ``server_version``, ``measured_at``; and ``nodes`` (the node table),
    ``nodes_summary``, ``expected_gpus`` (summed expectations), ``gpu_stack`` (how it was found).
    ``gate``: the fleet command (the smoke Pod depends on it).
    """

    def __init__(
        self,
        name: str,
        args: FoundStackArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:fleet:FoundGpuStack", name, None, opts)
        fleet, installed = args.fleet, args.installed
        self.access = kube_command(
            f"{name}-access",
            ["access", "--namespace", fleet.namespace],
            args.kubeconfig,
            triggers=[fleet.namespace],
            timeout=120,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.release_after) or None),
        )
        self.namespace = lab_namespace(
            f"{name}-namespace",
            fleet.namespace,
            {},
            fleet.namespace in args.adopted_namespaces,
            pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[self.access]),
        )
        self.gate = self._gate(name, args)
        facts = check_result(self.gate.stdout, FleetResult)
        self.chart_version = installed.chart_version if installed else pulumi.Output.from_input(None)
        self.chart_source = installed.chart_source if installed else pulumi.Output.from_input(None)
        # What the checklist asks of the operand set: a found stack installs nothing, and its
        # DCGM exporter is read only when the config says so (gpulab.core.outputs component_off);
        # NVIDIA's device plugin chart has no DCGM exporter.
        # A found stack's time-slicing is what GFD's labels say (the lab configured none): the
        # checklist's allocatable-matches-gpus multiplies the physical GPUs by it.
        self.components = (
            pulumi.Output.from_input(
                {"devicePluginChart": True, "gfd": True, "dcgmExporter": False, **args.chart_components}
            )
            if installed
            else facts.apply(
                lambda f: {
                    "found": True,
                    "dcgmExporter": args.dcgm_exporter,
                    "timeSlicingReplicas": f.time_slicing_replicas or 1,
                }
            )
        )
        self.allocatable_gpus = facts.apply(lambda f: f.allocatable_gpus)
        self.capacity_gpus = facts.apply(lambda f: f.capacity_gpus)
        self.cluster_policy_state = facts.apply(lambda f: f.cluster_policy_state)
        self.device_plugin_pods = facts.apply(lambda f: f.device_plugin_pods)
        self.mig_resources = facts.apply(lambda f: f.mig_resources)
        self.server_version = facts.apply(lambda f: f.kubernetes_version)
        self.measured_at = facts.apply(lambda f: f.measured_at)
        self.nodes = facts.apply(lambda f: f.nodes)
        self.nodes_summary = facts.apply(lambda f: f.nodes_summary)
        self.expected_gpus = facts.apply(lambda f: f.expected_gpus)
        self.gpu_stack = facts.apply(
            lambda f: {
                "mode": fleet.stack,
                "namespace": fleet.namespace,
                "devicePlugin": f.device_plugin_found or [],
                "clusterPolicyState": f.cluster_policy_state,
                **({"release": f"{PLUGIN_NAMESPACE}/{installed.release_name}"} if installed else {}),
            }
        )
        self.register_outputs(
            {
                "allocatableGpus": self.allocatable_gpus,
                "capacityGpus": self.capacity_gpus,
                "nodes": self.nodes,
                "nodesSummary": self.nodes_summary,
                "measuredAt": self.measured_at,
            }
        )

    def _gate(self, name: str, args: FoundStackArgs) -> local.Command:
        """The fleet command (``python -m gpulab.kube fleet``): every GPU node gated, then its
        smoke and compute Pods; after the namespace (and the installed chart's release)."""
        fleet, installed = args.fleet, args.installed
        return kube_command(
            f"{name}-gate",
            _gate_argv(args),
            args.kubeconfig,
            # Re-measured by make verify (ops.verify replaces the gate); re-run when the
            # installed chart's release is upgraded.
            triggers=[
                fleet.namespace,
                *([installed.release.status.apply(lambda s: s.revision if s else None)] if installed else []),
            ],
            timeout=args.timeout_seconds * 2 + 600 + (args.install_timeout if installed else 0),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.namespace, *([installed.release] if installed else [])]
            ),
        )


def _gate_argv(args: FoundStackArgs) -> list[str]:
    """The fleet command's arguments after ``python -m gpulab.kube`` (gpulab.kube.cli.fleet_args)."""
    fleet = args.fleet
    install_args = (
        ["--installed-in", PLUGIN_NAMESPACE, "--wait", str(args.install_timeout)] if args.installed else []
    )
    return [
        "fleet",
        "--namespace",
        fleet.namespace,
        "--smoke-image",
        args.smoke_image,
        *(["--compute-image", args.compute_image] if args.compute_image else []),
        "--resource",
        args.resource,
        *(["--runtime-class", args.runtime_class] if args.runtime_class else []),
        "--parallelism",
        str(fleet.parallelism),
        "--timeout",
        str(args.timeout_seconds),
        "--grace",
        str(args.grace_seconds),
        *fleet.pool_args(),
        *(["--simulated"] if args.simulated else []),
        "--profile",
        args.profile,
        *(["--node-command", args.node_command] if args.node_command else []),
        *install_args,
    ]
