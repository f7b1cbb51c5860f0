"""GpuOperator component: NVIDIA's GPU Operator with the host's driver, and a readiness gate.

Children:

* Namespace ``gpu-operator`` labelled ``pod-security.kubernetes.io/enforce=privileged``
  (the operands mount host paths and run privileged).
* ``helm.v3.Release`` ``gpu-operator``: chart ``gpu-operator`` from NVIDIA's repository at
  a pinned version, or from a local chart directory (offline). ``driver.enabled=false``:
  the host already has the driver (the chapter's premise); toolkit, device plugin, DCGM
  exporter, NFD and CDI follow config.
* Where no operator process runs (the simulated lab, or an existing cluster with
  ``simulatedOperands``), stand-ins for what the running operator would create,
  each annotated ``gpulab.dev/simulated: "true"``: the device-plugin DaemonSet (name,
  labels and node selector the operator gives it) and ClusterPolicy ``status.state``.
* The gate (``python3 -m gpulab.kube gate``): the Helm wait covers only the chart's own
  objects; the operands appear later, created by the operator. The gate waits for
  ClusterPolicy ``cluster-policy`` to be ``ready``, the device-plugin DaemonSet to be
  ready and the nodes to advertise what ``expect`` says (``nvidia.com/gpu``, or the MIG
  resources), and fails within ``gpuGraceSeconds`` of a state that will not recover
  (gpulab.kube.gate): the smoke Pod, which depends on it, is then never created.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.cluster import PreRelease
from components.command import check_result, kube_command
from components.namespace import lab_namespace
from gpulab.config import mig, time_slicing
from gpulab.config.lab import OperatorConfig
from gpulab.config.mig import Expected
from gpulab.config.variant import VariantSpec
from gpulab.core import names
from gpulab.kube.results import GateResult

NAMESPACE = names.OPERATOR_NAMESPACE
RELEASE = names.OPERATOR_RELEASE
DEVICE_PLUGIN_DS = names.DEVICE_PLUGIN_DS
SIMULATED_ANNOTATION = names.SIMULATED_ANNOTATION
#: The device plugin image the chart v26.7.0 values name (devicePlugin.repository/image/version).
DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def helm_values(op: OperatorConfig, variant: VariantSpec) -> dict[str, Any]:
    """The chart values the lab sets (everything else is the chart's default).

    ``driver.enabled`` is always false: the host provides the driver. The ``variant``'s record
    fits them to its node runtime: the toolkit's environment when it is on
    (``VariantSpec.toolkit_env``: k3s points it at k3s's containerd), and the device plugin's
    ``DEVICE_LIST_STRATEGY`` its node runtime honours (``VariantSpec.device_list_strategy``:
    ``envvar`` on minikube, kind and k3s); ``k3sNriPlugin`` turns on the operator's NRI plugin. With
    ``time_slicing_replicas > 1`` the device plugin gets a time-slicing config, so
    allocatable becomes physical GPUs x replicas. An operand image pinned in config
    (``op.operand_images``) sets ``<operand>.repository/image/version``.
    """
    values: dict[str, Any] = {
        # The host provides the NVIDIA driver; the operator must not install one.
        "driver": {"enabled": False},
        "toolkit": {"enabled": op.toolkit},
        "devicePlugin": {"enabled": op.device_plugin},
        "dcgmExporter": {"enabled": op.dcgm_exporter},
        "nfd": {"enabled": op.nfd},
        "cdi": {"enabled": op.cdi},
        # The device plugin's and GFD's MIG strategy (gpulab.config.mig): set always, since the
        # chart's own default is single, not the lab's none.
        "mig": {"strategy": op.mig_strategy},
    }
    if op.toolkit and variant.toolkit_env:
        # The node runtime's containerd where it is the distribution's own (k3s).
        values["toolkit"]["env"] = [{"name": k, "value": v} for k, v in variant.toolkit_env]
    if op.nri_plugin:
        # GPUs injected by the operator's NRI plugin (containerd >= 2.1), no runtime class.
        values["cdi"]["nriPluginEnabled"] = True
    strategy = variant.device_list_strategy(op.nri_plugin)
    if strategy:
        # How allocated GPUs reach the container, as the node's runtime reads them
        # (VariantSpec.device_list_reason). The ClusterPolicy sets devicePlugin.env after its CDI
        # transform (NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go), so this wins.
        values["devicePlugin"]["env"] = [{"name": names.DEVICE_LIST_STRATEGY_ENV, "value": strategy}]
    for pinned in op.operand_images:
        values.setdefault(pinned.operand, {}).update(pinned.helm_values())
    if op.sharing_config_map:
        # An existing ConfigMap names the device plugin's config; the chart makes none
        # (create false) and the pre-release check proves it exists (gpulab.kube.compat).
        cm_name, cm_key = op.sharing_config_map
        values["devicePlugin"]["config"] = {
            "name": cm_name,
            "create": False,
            **({"default": cm_key} if cm_key else {}),
        }
    sharing = op.time_slicing
    if sharing.enabled:
        # The chart makes the ConfigMap and the ClusterPolicy names it (gpulab.config.time_slicing).
        values["devicePlugin"]["config"] = {
            "name": time_slicing.CONFIG_MAP,
            "create": True,
            "default": time_slicing.CONFIG_KEY,
            "data": {time_slicing.CONFIG_KEY: sharing.device_plugin_config()},
        }
    return values


def privileged_namespace(
    resource_name: str, namespace: str, opts: pulumi.ResourceOptions, adopted: bool = False
) -> k8s.core.v1.Namespace | k8s.core.v1.NamespacePatch:
    """Namespace ``namespace`` labelled ``pod-security.kubernetes.io/enforce=privileged`` (its
    Pods mount host paths and run privileged: the operator's operands, the device plugin
    chart's GFD): the lab's (``app.kubernetes.io/managed-by``), or with ``adopted`` someone
    else's, patched and given back on destroy (components.namespace.lab_namespace)."""
    return lab_namespace(
        resource_name, namespace, {"pod-security.kubernetes.io/enforce": "privileged"}, adopted, opts
    )


def gate_mig_args(expect: Expected) -> list[str]:
    """The gate's MIG arguments: ``--mig-strategy S`` and, under ``mixed``, one
    ``--expected-mig PROFILE=COUNT`` per expected MIG resource."""
    if expect.strategy == "none":
        return []
    out = ["--mig-strategy", expect.strategy]
    for resource, count in sorted((expect.mig or {}).items()):
        out += ["--expected-mig", f"{resource.removeprefix(mig.MIG_RESOURCE_PREFIX)}={count}"]
    return out


def chart_source(op: OperatorConfig) -> str:
    """``"local:<path>"`` or the repository URL, as exported in ``chartSource``."""
    return f"local:{op.chart_path}" if op.chart_path else op.chart_repo


def crd_check_args(op: OperatorConfig, owns_cluster: bool, values_json: str = "{}") -> list[str]:
    """The pre-release check's module and arguments (``gpulab.kube.crd_check``, run by the
    cluster-identity command: ``identity record --then ...``): for a local chart at
    ``op.chart_path`` ``--chart``, ``--nfd`` with NFD on and ``--apply`` (upgrade stale CRDs,
    create absent ones) only on a cluster the lab owns; always ``--values`` (the release's
    values as JSON, whose ConfigMap references are checked)."""
    local = bool(op.chart_path)
    return [
        "gpulab.kube.crd_check",
        *(["--chart", str(op.chart_path)] if local else []),
        *(["--nfd"] if op.nfd and local else []),
        *(["--apply"] if owns_cluster and local else []),
        "--values",
        values_json,
    ]


def pre_release_check(op: OperatorConfig, variant: VariantSpec, owns_cluster: bool) -> PreRelease:
    """The operator's pre-release check (module docstring of gpulab.kube.crd_check): CRDs, the
    chart's kubeVersion and the APIs its templates need, and the ConfigMaps its values name;
    run by the cluster-identity command in its process once the cluster is verified
    (``components.cluster.identity_command``); it re-runs when the chart path or the values
    change (its arguments), as an update of that command.

    Helm installs a chart's crds/ only where absent and never upgrades them: CRDs left by
    another chart version are compared first, and upgraded (on a cluster the lab owns) or
    stopped at with the fix. A repository chart is not on disk before Helm pulls it, so only
    a local chart's CRDs, kubeVersion and APIs are checked; the ConfigMaps always.
    """
    values_json = json.dumps(helm_values(op, variant), sort_keys=True)
    return PreRelease(crd_check_args(op, owns_cluster, values_json), op.timeout_seconds)


def operator_components(op: OperatorConfig, variant: VariantSpec) -> dict[str, Any]:
    """The ``operatorComponents`` output: each operand on or off (``driver`` always off), the
    device list strategy the variant sets (None: the chart's choice) and the time-slicing
    settings (``timeSlicingReplicas``: int >= 1, read by gpulab.core.outputs.LabOutputs)."""
    return {
        "driver": False,
        "toolkit": op.toolkit,
        "devicePlugin": op.device_plugin,
        "dcgmExporter": op.dcgm_exporter,
        "nfd": op.nfd,
        "cdi": op.cdi,
        # How allocated GPUs reach a container (None: the chart's choice).
        "deviceListStrategy": variant.device_list_strategy(op.nri_plugin),
        "timeSlicingReplicas": op.time_slicing_replicas,
        "timeSlicingRename": op.time_slicing_rename,
        "timeSlicingFailRequestsGreaterThanOne": op.time_slicing_fail_requests_greater_than_one,
    }


@dataclass(frozen=True)
class GpuOperatorArgs:
    """Inputs.

    Attributes:
        operator: chart settings (gpulab.config.lab.OperatorConfig).
        variant: the record of the cluster variant the chart goes into
            (gpulab.config.variant.VariantSpec).
        kubeconfig: the cluster's kubeconfig (secret), for the gate.
        device_plugin_owner: ``"operator"`` or ``"minikube-addon"``; decides which
            DaemonSet the gate waits for.
        simulate_operands: create the simulated stand-ins (sim lab only).
        expect: what the nodes must advertise (gpulab.config.mig.Expected: ``nvidia.com/gpu`` =
            physical GPUs x time-slicing replicas, or the MIG resources); the gate waits for
            it and the diagnosis compares with it.
        grace_seconds: ``gpuGraceSeconds``: how long the gate lets a stuck state last.
        profile: the cluster's profile name, named in the diagnosis' fixes.
        release_after: resources that must exist before the release is installed and
            outlive it on destroy (an existing cluster's CRD census and clean-up).
        owns_cluster: the lab creates and deletes the cluster (``VariantSpec.owns_cluster``):
            the chart's CRDs of another version may be upgraded there.
        adopted_namespaces: namespaces named in ``adoptExisting`` (gpulab.config.adopt): the
            operator's is patched, not created, when it is one of them.
    """

    operator: OperatorConfig
    variant: VariantSpec
    kubeconfig: pulumi.Input[str]
    device_plugin_owner: str = "operator"
    simulate_operands: bool = False
    expect: Expected = field(default_factory=Expected)
    grace_seconds: int = 60
    profile: str = names.DEFAULT_PROFILE
    release_after: Sequence[pulumi.Resource] = ()
    owns_cluster: bool = True
    adopted_namespaces: frozenset[str] = frozenset()


def gate_args(args: GpuOperatorArgs) -> list[str]:
    """The readiness gate's arguments (``python -m gpulab.kube gate ...``), built in this one
    place: the device plugin's namespace and DaemonSet (kube-system's where minikube's addon
    owns it), the timeout, ``--no-cluster-policy`` when no operator plugin runs, the expected
    count, the grace, MIG (:func:`gate_mig_args`), a renamed resource and the profile."""
    op, expect = args.operator, args.expect
    owner_is_addon = args.device_plugin_owner == "minikube-addon"
    return [
        "gate",
        "--device-plugin-namespace",
        "kube-system" if owner_is_addon else NAMESPACE,
        "--device-plugin-daemonset",
        DEVICE_PLUGIN_DS,
        "--timeout",
        str(op.timeout_seconds),
        *(["--no-cluster-policy"] if not op.device_plugin and owner_is_addon else []),
        *(["--expected-gpus", str(expect.gpus)] if expect.gpus is not None else []),
        "--grace",
        str(args.grace_seconds),
        *gate_mig_args(expect),
        *(["--gpu-resource", expect.resource] if expect.resource != names.GPU_RESOURCE else []),
        "--profile",
        args.profile,
        "--node-command",
        args.variant.node(args.profile),
        # No operator process runs in the simulated lab: the gate writes its ClusterPolicy status.
        *(["--simulate-clusterpolicy", "ready"] if args.simulate_operands else []),
    ]


class GpuOperator(pulumi.ComponentResource):
    """The GPU Operator and its readiness gate (see module docstring).

    Outputs: ``chart_version``, ``chart_source``, ``components`` (dict of bools, and
    ``timeSlicingReplicas``: int),
    ``allocatable_gpus`` / ``capacity_gpus`` (int|None), ``cluster_policy_state``,
    ``device_plugin_pods`` (list[dict]), ``mig_resources`` (``{"nvidia.com/mig-1g.18gb": 7}``,
    ``{}`` without MIG), ``server_version``, ``measured_at`` (when the gate read them: UTC
    ISO 8601).
    """

    def __init__(
        self,
        name: str,
        args: GpuOperatorArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:gpu_operator:GpuOperator", name, None, opts)
        op = args.operator
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = privileged_namespace(
            f"{name}-namespace", NAMESPACE, k8s_opts, NAMESPACE in args.adopted_namespaces
        )
        # The pre-release check (pre_release_check) ran in the cluster-identity command, which
        # the provider depends on.
        self.release = self._release(name, args, k8s_opts, list(args.release_after))
        gate_after: list[pulumi.Resource] = [self.release]
        if args.simulate_operands:
            plugin_image = next(
                (i.ref for i in op.operand_images if i.operand == "devicePlugin"), DEVICE_PLUGIN_IMAGE
            )
            gate_after += self._simulated_operands(name, k8s_opts, plugin_image)
        self.gate = kube_command(
            f"{name}-gate",
            gate_args(args),
            args.kubeconfig,
            # Re-run the gate whenever the release is upgraded.
            triggers=[self.release.status.apply(lambda s: s.revision if s else None), op.chart_version],
            timeout=op.timeout_seconds + 60,
            # The gate observes what the release's operator creates: a side-effect order.
            opts=pulumi.ResourceOptions(parent=self, depends_on=gate_after),
        )
        self._outputs(op, args.variant, check_result(self.gate.stdout, GateResult))

    def _release(
        self,
        name: str,
        args: GpuOperatorArgs,
        k8s_opts: pulumi.ResourceOptions,
        after: list[pulumi.Resource],
    ) -> k8s.helm.v3.Release:
        """The chart's Helm release (values: :func:`helm_values`), after ``after``."""
        op = args.operator
        return k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE,
            chart=op.chart_path or names.OPERATOR_CHART,
            version=None if op.chart_path else op.chart_version,
            repository_opts=None if op.chart_path else k8s.helm.v3.RepositoryOptsArgs(repo=op.chart_repo),
            namespace=self.namespace.metadata["name"],
            values=helm_values(op, args.variant),
            timeout=op.timeout_seconds,
            cleanup_on_fail=True,
            # The lab's marker on a release (gpulab.kube.takeover reads it before the next run).
            description=names.RELEASE_DESCRIPTION,
            # Readiness is the gate's job, not Helm's: a Helm wait covers only the chart's own
            # objects, while the operands appear later; the gate waits for ClusterPolicy ready
            # and the device plugin, and diagnoses what blocks them (helm would only time out).
            skip_await=True,
            # Side-effect order only: the census must see the cluster before the chart's CRDs
            # exist, and the CRD clean-up must run after the release is uninstalled.
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=after or None)),
        )

    def _outputs(self, op: OperatorConfig, variant: VariantSpec, facts: pulumi.Output[GateResult]) -> None:
        """The component's outputs: the chart's settings and what the gate read (``facts``)."""
        self.chart_version = pulumi.Output.from_input(op.chart_version)
        self.chart_source = pulumi.Output.from_input(chart_source(op))
        self.components = pulumi.Output.from_input(operator_components(op, variant))
        self.allocatable_gpus = facts.apply(lambda f: f.allocatable_gpus)
        self.capacity_gpus = facts.apply(lambda f: f.capacity_gpus)
        self.cluster_policy_state = facts.apply(lambda f: f.cluster_policy_state)
        self.device_plugin_pods = facts.apply(lambda f: f.device_plugin_pods)
        self.mig_resources = facts.apply(lambda f: f.mig_resources)
        self.server_version = facts.apply(lambda f: f.kubernetes_version)
        self.measured_at = facts.apply(lambda f: f.measured_at)
        self.register_outputs(
            {
                "chartVersion": self.chart_version,
                "chartSource": self.chart_source,
                "components": self.components,
                "allocatableGpus": self.allocatable_gpus,
                "capacityGpus": self.capacity_gpus,
                "clusterPolicyState": self.cluster_policy_state,
                "devicePluginPods": self.device_plugin_pods,
                "migResources": self.mig_resources,
                "measuredAt": self.measured_at,
            }
        )

    def _simulated_operands(
        self,
        name: str,
        k8s_opts: pulumi.ResourceOptions,
        plugin_image: str = DEVICE_PLUGIN_IMAGE,
    ) -> list[pulumi.Resource]:
        """Stand-ins for the operator's own work; no operator process runs in the sim lab."""
        labels = {"app": DEVICE_PLUGIN_DS}
        marked = {**labels, names.LAB_LABELS[0]: names.PROJECT}
        note = {SIMULATED_ANNOTATION: "true", "gpulab.dev/simulates": "gpu-operator state-device-plugin"}
        ds = k8s.apps.v1.DaemonSet(
            f"{name}-sim-device-plugin",
            metadata={
                "name": DEVICE_PLUGIN_DS,
                "namespace": NAMESPACE,
                "labels": marked,
                "annotations": note,
            },
            spec={
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels, "annotations": note},
                    "spec": {
                        "nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"},
                        "tolerations": [
                            {"key": names.GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
                        ],
                        "priorityClassName": "system-node-critical",
                        "containers": [{"name": "nvidia-device-plugin", "image": plugin_image}],
                    },
                },
            },
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[self.release])),
        )
        # The ClusterPolicy's status is the gate's to write first (``--simulate-clusterpolicy``),
        # in its own process: a command of its own cost a process start.
        return [ds]
