"""The simulated lab's stand-in for NVIDIA's DRA kubelet plugin: one ResourceSlice per GPU node.

With ``--dra`` (``gpuStack: dra``) the nodes advertise no ``nvidia.com/gpu`` (no device plugin
runs) and ``up`` publishes, for each node, the ResourceSlice NVIDIA's GPU kubelet plugin would
publish there: the chart's kubelet-plugin DaemonSet Pods are kwok Pods, which run nothing, so
nobody else would. The shape is the plugin's at sigs.k8s.io/dra-driver-nvidia-gpu v0.5.0
(tests/contract/test_dra_driver.py checks each fact there):

* driver ``gpu.nvidia.com`` (``cmd/gpu-kubelet-plugin/main.go`` ``DriverName``), one pool per
  node named after the node, ``spec.nodeName`` the node;
* one device per GPU named ``gpu-<minor>`` (``deviceinfo.go`` ``GpuInfo.CanonicalName``), with
  the attributes ``type`` ``gpu``, ``uuid``, ``productName``, ``driverVersion`` and
  ``cudaDriverVersion`` (``deviceinfo.go`` ``GpuInfo.Attributes``) and the capacity ``memory``
  (``partitions.go`` ``fullGpuCapacity``). The attributes the capture cannot say (``brand``,
  ``architecture``, ``cudaComputeCapability``, PCI bus and root) are left out: the device class's
  selector reads only ``type``, and the lab's check only ``uuid``.

The UUIDs are the capture's (``nvidia-smi-L.txt``), in index order, so the smoke Pod's simulated
log (the same capture's listing) names the devices the slice offers. Every slice carries the
label and annotation :data:`gpulab.core.names.SIMULATED_ANNOTATION` ``"true"``: published by the
sim, not measured.

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from gpulab.core import names

#: NVIDIA's GPU kubelet plugin's driver name (``cmd/gpu-kubelet-plugin/main.go`` at v0.5.0).
DRIVER: Final = "gpu.nvidia.com"
#: The ``type`` attribute of a full GPU (``GpuDeviceType``, ``cmd/gpu-kubelet-plugin/types.go``).
GPU_TYPE: Final = "gpu"
_LISTING: Final = re.compile(
    r"^GPU (?P<minor>\d+): (?P<product>.+) \(UUID: (?P<uuid>GPU-[0-9A-Fa-f-]+)\)\s*$"
)


def listed_gpus(listing: str) -> list[tuple[int, str, str]]:
    """``(minor, productName, uuid)`` of each physical GPU line of an ``nvidia-smi -L`` listing
    (``GPU 0: NVIDIA H200 (UUID: GPU-...)``), in order; MIG lines are skipped."""
    found = (_LISTING.match(line) for line in listing.splitlines())
    return [(int(m["minor"]), m["product"], m["uuid"]) for m in found if m]


def semver(version: str) -> str:
    """A driver or CUDA version as the plugin publishes it (a semantic version, leading zeros
    dropped: ``580.159.04`` -> ``580.159.4``, ``13.0`` -> ``13.0.0``).

    Raises:
        ValueError: not one to three dot-separated numbers.
    """
    parts = version.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{version!r} is not a version of one to three numbers")
    return ".".join(str(int(p)) for p in [*parts, "0", "0"][:3])


def resource_slice(
    node: str,
    gpus: Sequence[tuple[int, str, str]],
    driver_version: str,
    cuda_version: str,
    memory_mib: int | None,
) -> dict[str, Any]:
    """The ``resource.k8s.io/v1`` ResourceSlice of ``node``'s ``gpus`` (:func:`listed_gpus`),
    labelled and annotated simulated (module docstring).

    Raises:
        ValueError: ``gpus`` is empty, or a version is not numeric.
    """
    if not gpus:
        raise ValueError(f"node {node} has no GPU to publish")
    versions = {"driverVersion": semver(driver_version), "cudaDriverVersion": semver(cuda_version)}
    devices = []
    for minor, product, uuid in gpus:
        attributes: dict[str, Any] = {
            "type": {"string": GPU_TYPE},
            "uuid": {"string": uuid},
            "productName": {"string": product},
            **{k: {"version": v} for k, v in versions.items()},
        }
        device: dict[str, Any] = {"name": f"gpu-{minor}", "attributes": attributes}
        if memory_mib is not None:
            device["capacity"] = {"memory": {"value": f"{memory_mib}Mi"}}
        devices.append(device)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{DRIVER}-sim",
            "labels": {names.SIMULATED_ANNOTATION: "true"},
            "annotations": {names.SIMULATED_ANNOTATION: "true"},
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }
