"""DevicePluginChart component: NVIDIA's device plugin chart installed alone (``gpuStack: device-plugin``).

Many GPU clusters run NVIDIA's standalone ``nvidia-device-plugin`` chart with GPU Feature
Discovery instead of the GPU Operator: the nodes already have NVIDIA's container toolkit (k3s,
kind nodes made GPU-ready, clusters somebody else runs). Children:

* Namespace ``nvidia-device-plugin`` labelled ``pod-security.kubernetes.io/enforce=privileged``
  (the plugin and GFD mount host paths; GFD runs privileged: the chart's ``gfd.securityContext``).
* ``helm.v3.Release`` ``nvidia-device-plugin``: chart ``nvidia-device-plugin`` from NVIDIA's
  repository at a pinned version, or from a local chart directory (offline), with
  :func:`helm_values`. ``skip_await``: readiness is the gate's (components/fleet.py, the
  per-node check with the chart's DaemonSet and GFD's labels required), which names what blocks
  it where a Helm wait would only time out.

The gate is not here: the Lab hands this component's release to
:class:`components.fleet.FoundGpuStack`, which waits for the release's DaemonSet and GFD's labels
on every GPU node, then checks each node. Destroy uninstalls the release (NFD's post-delete hook
prunes the labels it made); Helm leaves the NFD subchart's CRDs, which the existing variant's
census lists as leftovers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.gpu_operator import privileged_namespace
from gpulab.config import time_slicing
from gpulab.config.device_plugin import CHART, NAMESPACE, RELEASE, DevicePluginChart
from gpulab.config.lab import OperatorConfig
from gpulab.core import names


def helm_values(
    chart: DevicePluginChart, op: OperatorConfig, runtime_class: str | None, device_list: str | None
) -> dict[str, Any]:
    """The chart values the lab sets (everything else is the chart's default), each a key of
    NVIDIA/k8s-device-plugin v0.19.0 and v0.20.0 ``deployments/helm/nvidia-device-plugin/values.yaml``
    (tests/contract/test_device_plugin_chart.py):

    ``gfd.enabled: true`` (GPU Feature Discovery: the node labels the gate reads), ``nfd.enabled``
    (``nfd``; the subchart that turns GFD's feature file into labels), ``migStrategy``,
    ``runtimeClassName`` (None: the node's default runtime), ``deviceListStrategy`` (the variant's:
    None leaves the chart's, envvar), ``image`` and ``nfd.image`` when pinned in config, and the
    device plugin's config through the chart's own mechanism: ``config.map`` with one config,
    ``default``, which ``config.default`` names (time-slicing), or ``config.name`` for an existing
    ConfigMap (``sharingConfigMap``).
    """
    values: dict[str, Any] = {
        "gfd": {"enabled": True},
        "nfd": {"enabled": op.nfd},
        "migStrategy": op.mig_strategy,
    }
    if runtime_class:
        values["runtimeClassName"] = runtime_class
    if device_list:
        values["deviceListStrategy"] = device_list
    if chart.image is not None:
        values["image"] = chart.image.helm_values()
    if chart.nfd_image is not None:
        values["nfd"]["image"] = chart.nfd_image.helm_values()
    if op.sharing_config_map:
        cm_name, cm_key = op.sharing_config_map
        values["config"] = {"name": cm_name, **({"default": cm_key} if cm_key else {})}
    sharing = op.time_slicing
    if sharing.enabled:
        values["config"] = {
            "map": {time_slicing.CONFIG_KEY: sharing.device_plugin_config()},
            "default": time_slicing.CONFIG_KEY,
        }
    return values


@dataclass(frozen=True)
class DevicePluginArgs:
    """Inputs: ``chart`` (gpulab.config.device_plugin.DevicePluginChart), ``operator`` (the
    shared GPU settings it reads: ``nfd``, ``mig_strategy``, time-slicing, ``sharingConfigMap``,
    ``timeout_seconds``), ``runtime_class`` (the GPU Pods' RuntimeClass, None: the node's
    default), ``device_list`` (the variant's DEVICE_LIST_STRATEGY, None: the chart's),
    ``release_after`` (the census: before anything), ``adopted_namespaces`` (``adoptExisting``'s:
    the chart's namespace is patched, not created, when it is one of them)."""

    chart: DevicePluginChart
    operator: OperatorConfig
    runtime_class: str | None = None
    device_list: str | None = None
    release_after: tuple[pulumi.Resource, ...] = ()
    adopted_namespaces: frozenset[str] = frozenset()


class DevicePluginChartRelease(pulumi.ComponentResource):
    """NVIDIA's device plugin chart (see module docstring). Type token
    ``gpulab:device_plugin:DevicePluginChartRelease``.

    Outputs: ``chart_version`` (the local chart's Chart.yaml version, else the pinned one),
    ``chart_source`` (``local:<path>`` or the repository), ``values`` (what the lab set).
    ``release``: the Helm release (the gate depends on it).
    """

    def __init__(
        self,
        name: str,
        args: DevicePluginArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:device_plugin:DevicePluginChartRelease", name, None, opts)
        chart, op = args.chart, args.operator
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider)
        # The plugin and GFD mount host paths; GFD runs privileged.
        self.namespace = privileged_namespace(
            f"{name}-namespace",
            NAMESPACE,
            pulumi.ResourceOptions.merge(
                k8s_opts, pulumi.ResourceOptions(depends_on=list(args.release_after) or None)
            ),
            NAMESPACE in args.adopted_namespaces,
        )
        self.values = helm_values(chart, op, args.runtime_class, args.device_list)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE,
            chart=chart.path or CHART,
            version=None if chart.path else chart.version,
            repository_opts=None if chart.path else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
            namespace=self.namespace.metadata["name"],
            values=self.values,
            timeout=op.timeout_seconds,
            cleanup_on_fail=True,
            # The lab's marker on a release (gpulab.kube.takeover reads it before the next run).
            description=names.RELEASE_DESCRIPTION,
            # Readiness is the gate's: it waits for the DaemonSet's Pods and GFD's labels on every
            # GPU node and names what blocks them.
            skip_await=True,
            opts=k8s_opts,
        )
        self.release_name = RELEASE
        self.chart_version = pulumi.Output.from_input(chart.local_version() or chart.version)
        self.chart_source = pulumi.Output.from_input(chart.source)
        self.register_outputs(
            {"chartVersion": self.chart_version, "chartSource": self.chart_source, "values": self.values}
        )
