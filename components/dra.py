"""DraDriver component: NVIDIA's DRA driver (``gpuStack: dra``), GPUs through ResourceClaims.

Children:

* Namespace ``dra-driver-nvidia-gpu`` labelled ``pod-security.kubernetes.io/enforce=privileged``
  (the chart's kubelet plugin runs privileged: values.yaml ``kubeletPlugin.containers.gpus``).
* ``helm.v3.Release`` ``dra-driver-nvidia-gpu``: NVIDIA's chart at a pinned version (or a local
  chart directory, offline) with :func:`helm_values`; ``skip_await``: readiness is the gate's.
* The gate (``python -m gpulab.kube dra-gate``, gpulab/kube/dra.py): the chart's DeviceClass
  ``gpu.nvidia.com`` and a ResourceSlice of driver ``gpu.nvidia.com`` on every GPU node,
  listing each GPU with its UUID.

In the simulated lab the chart's kubelet-plugin Pods are kwok Pods (they run nothing); the sim
publishes the slices itself (variants/sim/ctl/dra.py), labelled simulated, and the real
scheduler of the sim's control plane allocates the claims. Destroy uninstalls the release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.command import check_result, kube_command
from components.gpu_operator import privileged_namespace
from gpulab.config.dra import CHART, DEVICE_CLASS, DRIVER, NAMESPACE, RELEASE, DraChart
from gpulab.kube.dra import GROUP, VERSION
from gpulab.kube.results import DraGateResult


def helm_values(chart: DraChart) -> dict[str, Any]:
    """The chart values the lab sets (everything else is the chart's default), each a key of
    sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0 ``deployments/helm/dra-driver-nvidia-gpu/values.yaml``
    (tests/contract/test_dra_driver.py): ``resources.gpus.enabled`` with
    ``gpuResourcesEnabledOverride`` (no device plugin in this mode: templates/validation.yaml),
    ``resources.computeDomains.enabled: false``, ``nvidiaDriverRoot`` (``draDriverRoot``), and
    ``resourceApiVersion: resource.k8s.io/v1``: the API the lab's checks read (gpulab.kube.dra),
    named rather than detected, because the chart's detection reads Helm's capabilities, which a
    render without the cluster (a preview) does not have."""
    return {
        "resourceApiVersion": f"{GROUP}/{VERSION}",
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "nvidiaDriverRoot": chart.driver_root,
    }


@dataclass(frozen=True)
class DraArgs:
    """Inputs: ``chart`` (gpulab.config.dra.DraChart), ``kubeconfig`` (the checks', secret),
    ``timeout_seconds`` (the release and the gate), ``release_after`` (before anything)."""

    chart: DraChart
    kubeconfig: pulumi.Input[str]
    timeout_seconds: int = 600
    release_after: tuple[pulumi.Resource, ...] = ()


class DraDriver(pulumi.ComponentResource):
    """NVIDIA's DRA driver and its gate (see module docstring). Type token
    ``gpulab:dra:DraDriver``.

    Outputs, named as the GPU Operator's (program/lab.py reads either): ``chart_version``,
    ``chart_source``, ``components`` (what the lab set), ``allocatable_gpus`` (the GPUs the
    slices publish), ``server_version``, ``measured_at``, ``slices`` (the gate's ``draSlices``),
    ``gpu_stack``; ``capacity_gpus``, ``cluster_policy_state``, ``device_plugin_pods`` and
    ``mig_resources`` are None (no device plugin, no operator). ``gate``: the gate command.
    """

    def __init__(
        self, name: str, args: DraArgs, provider: k8s.Provider, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpulab:dra:DraDriver", name, None, opts)
        chart = args.chart
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider)
        self.namespace = privileged_namespace(
            f"{name}-namespace",
            NAMESPACE,
            pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=list(args.release_after) or None)
            ),
        )
        self.values = helm_values(chart)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE,
            chart=chart.path or CHART,
            version=None if chart.path else chart.version,
            repository_opts=None if chart.path else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
            namespace=self.namespace.metadata["name"],
            values=self.values,
            timeout=args.timeout_seconds,
            cleanup_on_fail=True,
            skip_await=True,  # readiness is the gate's: it names the nodes without a slice
            opts=k8s_opts,
        )
        self.gate = kube_command(
            f"{name}-gate",
            [
                "dra-gate",
                "--driver",
                DRIVER,
                "--device-class",
                DEVICE_CLASS,
                "--timeout",
                str(args.timeout_seconds),
            ],
            args.kubeconfig,
            triggers=[self.release.status.apply(lambda s: s.revision if s else None)],
            timeout=args.timeout_seconds + 120,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )
        facts = check_result(self.gate.stdout, DraGateResult)
        self.chart_version = pulumi.Output.from_input(chart.local_version() or chart.version)
        self.chart_source = pulumi.Output.from_input(chart.source)
        self.components = pulumi.Output.from_input({"draDriverChart": True, "dcgmExporter": False})
        self.allocatable_gpus = facts.apply(lambda f: f.allocatable_gpus)
        none = pulumi.Output.from_input(None)
        self.capacity_gpus = self.cluster_policy_state = self.device_plugin_pods = self.mig_resources = none
        self.server_version = facts.apply(lambda f: f.kubernetes_version)
        self.measured_at = facts.apply(lambda f: f.measured_at)
        self.slices = facts.apply(lambda f: f.dra_slices)
        self.gpu_stack = facts.apply(
            lambda f: {
                "mode": "dra",
                "release": f"{NAMESPACE}/{RELEASE}",
                "deviceClass": f.device_class,
                "driver": DRIVER,
            }
        )
        self.register_outputs(
            {
                "chartVersion": self.chart_version,
                "allocatableGpus": self.allocatable_gpus,
                "slices": self.slices,
            }
        )
