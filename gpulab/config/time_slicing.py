"""Time-slicing as config: how many replicas per GPU, the shared resource's name, and the
device plugin's config the lab gives the GPU Operator.

The device plugin's sharing options (NVIDIA/k8s-device-plugin README, "With CUDA
Time-Slicing", config ``version: v1``)::

    sharing:
      timeSlicing:
        renameByDefault: <bool>
        failRequestsGreaterThanOne: <bool>
        resources:
        - name: nvidia.com/gpu
          replicas: <n>

* ``replicas``: each GPU is advertised ``n`` times (allocatable = GPUs x n);
* ``renameByDefault: true``: the resource is advertised as ``nvidia.com/gpu.shared`` instead
  of ``nvidia.com/gpu`` (and GPU Feature Discovery leaves ``-SHARED`` off the product label,
  the name already says it); a Pod must then ask for ``nvidia.com/gpu.shared``;
* ``failRequestsGreaterThanOne: true``: a container asking for more than one shared GPU fails
  admission (``UnexpectedAdmissionError``: "maximum request size for shared resources is 1"),
  since N replicas need not be N GPUs. NVIDIA recommends it; its default is false.

Config keys (:data:`SCHEMA`, part of :data:`gpulab.config.lab.SCHEMA`): ``timeSlicingReplicas``
(:attr:`gpulab.config.lab.OperatorConfig.time_slicing_replicas`), ``timeSlicingRename``,
``timeSlicingFailRequestsGreaterThanOne``. Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

import yaml

from gpulab.config import schema
from gpulab.core.names import GPU_RESOURCE, SHARED_GPU_RESOURCE, WHOLE_GPU_RESOURCES

#: key -> (kind, default) of this module's keys, as Pulumi.yaml declares them
#: (gpulab.config.schema); part of :data:`gpulab.config.lab.SCHEMA`.
SCHEMA: Final[dict[str, tuple[str, object]]] = schema.section(
    "timeSlicingRename",
    "timeSlicingFailRequestsGreaterThanOne",
    "sharingConfigMap",
)

#: The ConfigMap the chart makes (``devicePlugin.config.name``) and its key the nodes use
#: (``devicePlugin.config.default``).
CONFIG_MAP: Final = "time-slicing-config"
CONFIG_KEY: Final = "any"


_DNS_SUBDOMAIN_RE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: A ConfigMap key (kubernetes apimachinery IsConfigMapKey: ``[-._a-zA-Z0-9]+``).
_CONFIG_KEY_RE: Final = re.compile(r"^[-._a-zA-Z0-9]+$")


def parse_config_map(
    value: str, replicas: int, problems: list[str], namespace: str
) -> tuple[str, str] | None:
    """``sharingConfigMap`` (``NAME`` or ``NAME:KEY``): an existing ConfigMap in the operator's
    namespace holding the device plugin's config, which the ClusterPolicy then names
    (``devicePlugin.config.name``, ``devicePlugin.config.default`` = ``KEY``) instead of the
    one the lab makes; ``(name, key)`` (key ``""``: none given), None when unset. Appends to
    ``problems`` a name that is not a DNS subdomain or a key that is not a ConfigMap key, and
    the key set together with ``timeSlicingReplicas`` >= 2 (the lab would make its own)."""
    if not value:
        return None
    name, _, key = value.partition(":")
    if len(name) > 253 or not _DNS_SUBDOMAIN_RE.match(name):
        problems.append(
            f"{namespace}:sharingConfigMap={value!r}: {name!r} is not a ConfigMap name (lower-case "
            "DNS subdomain, e.g. device-plugin-config)"
        )
    if key and not _CONFIG_KEY_RE.match(key):
        problems.append(
            f"{namespace}:sharingConfigMap={value!r}: {key!r} is not a ConfigMap key ([-._a-zA-Z0-9]+)"
        )
    if replicas > 1:
        problems.append(
            f"{namespace}:sharingConfigMap and timeSlicingReplicas={replicas} both give the device plugin a "
            "config: set one (scripts/pulumi config rm gpu-lab:sharingConfigMap, or "
            "scripts/pulumi config set gpu-lab:timeSlicingReplicas 1)"
        )
    return name, key


def other_resource(resource: str) -> str:
    """The other whole-GPU name: ``nvidia.com/gpu`` <-> ``nvidia.com/gpu.shared``. Where the
    nodes advertise it instead of ``resource``, the rename was applied unlike the config says.

    Raises:
        ValueError: ``resource`` is not a whole-GPU name (a MIG resource has no other name).
    """
    if resource not in WHOLE_GPU_RESOURCES:
        raise ValueError(f"{resource!r} is not one of {', '.join(WHOLE_GPU_RESOURCES)}")
    return next(r for r in WHOLE_GPU_RESOURCES if r != resource)


@dataclass(frozen=True)
class TimeSlicing:
    """The lab's time-slicing settings.

    Attributes:
        replicas: ``timeSlicingReplicas``: advertised replicas per GPU (>= 1; 1: no sharing).
        rename: ``timeSlicingRename``: ``renameByDefault`` (the resource becomes
            ``nvidia.com/gpu.shared``).
        fail_requests_greater_than_one: ``timeSlicingFailRequestsGreaterThanOne``.
    """

    replicas: int = 1
    rename: bool = False
    fail_requests_greater_than_one: bool = False

    @property
    def enabled(self) -> bool:
        """True when the GPUs are shared (``replicas > 1``)."""
        return self.replicas > 1

    @property
    def resource(self) -> str:
        """The whole-GPU resource the nodes advertise: ``nvidia.com/gpu.shared`` when shared and
        renamed, else ``nvidia.com/gpu``."""
        return SHARED_GPU_RESOURCE if self.enabled and self.rename else GPU_RESOURCE

    def device_plugin_config(self) -> str:
        """The device plugin's config (YAML text, ``version: v1``) for the ConfigMap's
        :data:`CONFIG_KEY`; only the options set are written (the plugin's defaults are false)."""
        ts: dict[str, object] = {}
        if self.rename:
            ts["renameByDefault"] = True
        if self.fail_requests_greater_than_one:
            ts["failRequestsGreaterThanOne"] = True
        ts["resources"] = [{"name": GPU_RESOURCE, "replicas": self.replicas}]
        return yaml.safe_dump({"version": "v1", "sharing": {"timeSlicing": ts}}, sort_keys=False)


def check(
    ts: TimeSlicing,
    smoke_gpus: int,
    problems: list[str],
    namespace: str,
    device_plugin_owner: str = "operator",
) -> None:
    """Append to ``problems`` what contradicts: a sharing option without sharing, a smoke Pod
    that would ask for more than one shared GPU where the plugin refuses it, and sharing with
    minikube's addon as the device plugin (it never reads the ClusterPolicy's config).

    ``smoke_gpus``: ``smokeGpus`` parsed (0 is ``all``, which is 1 under time-slicing:
    :func:`gpulab.config.gpus.smoke_gpu_count`); ``device_plugin_owner``: ``devicePluginOwner``.
    """
    if ts.enabled and device_plugin_owner == "minikube-addon":
        problems.append(
            f"{namespace}:timeSlicingReplicas={ts.replicas} with devicePluginOwner=minikube-addon: "
            "minikube's nvidia-device-plugin addon does not read the operator's sharing config, so "
            "the GPUs would not be shared; set devicePluginOwner operator (and devicePlugin true) or "
            "timeSlicingReplicas 1"
        )
    for key, on in (
        ("timeSlicingRename", ts.rename),
        ("timeSlicingFailRequestsGreaterThanOne", ts.fail_requests_greater_than_one),
    ):
        if on and not ts.enabled:
            problems.append(
                f"{namespace}:{key}=true with timeSlicingReplicas={ts.replicas}: it is a time-slicing "
                f"option and nothing is shared; set {namespace}:timeSlicingReplicas to 2 or more, or "
                f"{key} false"
            )
    if ts.enabled and ts.fail_requests_greater_than_one and smoke_gpus > 1:
        problems.append(
            f"{namespace}:smokeGpus={smoke_gpus} with timeSlicingFailRequestsGreaterThanOne=true: the "
            "device plugin refuses a container more than one shared GPU (UnexpectedAdmissionError: "
            "'maximum request size for shared resources is 1'); set smokeGpus 1 (or all)"
        )
