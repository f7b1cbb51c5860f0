"""Is an existing minikube profile one this lab can reuse? Checked before ``up`` waits on it.

``minikube start -p P`` on a profile that exists keeps the profile's node container and its
stored settings: it does not add ``--gpus`` to a container created without it, and it cannot
change the memory of an existing cluster. A profile made by hand (``minikube start -p
gpu-lab`` without ``--gpus``) or by an earlier lab with other settings would then be waited on
for nothing. So ``up`` reads, before any wait:

* the node container's ``HostConfig`` (``docker container inspect P --format '{{json
  .HostConfig}}'``; minikube's docker driver names the container after the profile):
  ``DeviceRequests`` must hold a GPU request. minikube's ``--gpus=all``/``nvidia`` runs the
  node with ``docker run --gpus all`` (kubernetes/minikube ``pkg/drivers/kic/oci/oci.go``,
  ``CreateContainerNode``), which the Docker CLI turns into ``{"Driver": "", "Count": -1,
  "Capabilities": [["gpu"]]}``; ``--gpus=nvidia.com`` into the CDI request ``{"Driver":
  "cdi", "DeviceIDs": ["nvidia.com/gpu=all"]}``. The request's shape is the Docker Engine API's
  ``DeviceRequest`` (``Driver``, ``Count``, ``DeviceIDs``, ``Capabilities``: "an OR list of
  AND lists", ``Options``); ``NanoCpus`` (CPUs x 1e9) and ``Memory`` (bytes) are the
  container's limits (``--cpus``, ``--memory``);
* the profile's stored config (``minikube profile list -o json``: ``valid[].Config`` is
  minikube's ``ClusterConfig``: ``CPUs``, ``Memory`` in MB, ``GPUs``,
  ``KubernetesConfig.KubernetesVersion``).

Each check is a :class:`gpulab.core.findings.Finding`; a failed one stops ``up`` with the fix
(delete the profile, then ``make lab``). Pure: the caller runs the commands.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpulab.core.findings import Finding
from gpulab.host import preflight

__all__ = ["device_requests_have_gpu", "inspect_argv", "profile_config", "reuse_findings"]


def inspect_argv(profile: str) -> list[str]:
    """``docker container inspect`` of the profile's node container, its ``HostConfig`` as JSON."""
    return ["docker", "container", "inspect", profile, "--format", "{{json .HostConfig}}"]


def profile_config(listing: str, profile: str) -> Mapping[str, Any] | None:
    """The stored ``Config`` of ``profile`` from ``minikube profile list -o json`` output
    (``{"valid": [{"Name", "Config": {...}}], "invalid": [...]}``); None when the profile is
    not listed or the output is not that JSON (minikube prints an error when it has no
    profile at all). A listed profile without a config gives ``{}``."""
    try:
        doc = json.loads(listing)
    except ValueError:
        return None
    if not isinstance(doc, Mapping):
        return None
    for p in [*(doc.get("valid") or []), *(doc.get("invalid") or [])]:
        if isinstance(p, Mapping) and p.get("Name") == profile:
            config = p.get("Config")
            return config if isinstance(config, Mapping) else {}
    return None


def device_requests_have_gpu(requests: Sequence[Mapping[str, Any]] | None) -> bool:
    """True when a Docker ``DeviceRequest`` asks for GPUs: a capability AND-list containing
    ``gpu``, the ``nvidia`` driver, or the CDI driver with an ``nvidia.com/gpu=`` device."""
    for r in requests or []:
        caps = r.get("Capabilities") or []
        if any("gpu" in (c or []) for c in caps) or r.get("Driver") == "nvidia":
            return True
        if r.get("Driver") == "cdi" and any(
            str(d).startswith("nvidia.com/gpu") for d in r.get("DeviceIDs") or []
        ):
            return True
    return False


def _fail(check: str, message: str, profile: str) -> Finding:
    return preflight.Finding(
        check,
        False,
        message,
        f"minikube delete -p {profile} && make lab (the lab then makes the profile with --gpus=all "
        "and its config)",
    )


def reuse_findings(
    profile: str,
    want_cpus: int,
    want_memory_mib: int,
    want_kubernetes: str,
    host_config: str | None,
    config: Mapping[str, Any] | None,
) -> list[Finding]:
    """What a reused profile must have, passing ones included.

    Args:
        profile: the profile (and node container) name.
        want_cpus, want_memory_mib, want_kubernetes: what the lab asks ``minikube start`` for.
        host_config: the inspect output (:func:`inspect_argv`), None when the container could
            not be inspected (then the stored ``GPUs`` setting is checked instead).
        config: the stored profile config (:func:`profile_config`).

    Checks: ``reused-node-gpus`` (the node container has a GPU device request), then, where
    readable, ``reused-kubernetes-version`` (the same version; minikube upgrades in place but
    refuses a downgrade) and ``reused-node-resources`` (at least the CPUs and memory asked).
    """
    config = config or {}
    found: list[Finding] = []
    hc: Any = None
    if host_config is not None:
        try:
            hc = json.loads(host_config)
        except ValueError:
            hc = None
    if isinstance(hc, Mapping):
        requests = hc.get("DeviceRequests")
        if device_requests_have_gpu(requests):
            found.append(
                preflight.Finding("reused-node-gpus", True, f"node container {profile} requests GPUs")
            )
        else:
            found.append(
                _fail(
                    "reused-node-gpus",
                    f"minikube profile {profile} exists, but its node container was created without "
                    f"GPUs (HostConfig.DeviceRequests {json.dumps(requests)}): minikube start keeps that "
                    "container, so the device plugin would find no GPU",
                    profile,
                )
            )
    else:
        gpus = str(config.get("GPUs") or "")
        ok = gpus in ("all", "nvidia", "nvidia.com")
        message = (
            f"minikube profile {profile} stores GPUs={gpus or '(none)'}; "
            "its node container cannot be inspected"
        )
        found.append(
            preflight.Finding("reused-node-gpus", True, message)
            if ok
            else _fail("reused-node-gpus", message, profile)
        )
    version = (config.get("KubernetesConfig") or {}).get("KubernetesVersion")
    if version and version != want_kubernetes:
        found.append(
            _fail(
                "reused-kubernetes-version",
                f"minikube profile {profile} runs Kubernetes {version}, the lab asks for {want_kubernetes}",
                profile,
            )
        )
    cpus = config.get("CPUs") or (
        round(hc["NanoCpus"] / 1e9) if isinstance(hc, Mapping) and hc.get("NanoCpus") else None
    )
    memory = config.get("Memory") or (
        hc["Memory"] // (1024 * 1024) if isinstance(hc, Mapping) and hc.get("Memory") else None
    )
    short = [
        f"{have} {what} < {want}"
        for have, want, what in ((cpus, want_cpus, "CPUs"), (memory, want_memory_mib, "MiB"))
        if isinstance(have, int) and have < want
    ]
    if short:
        found.append(
            _fail(
                "reused-node-resources",
                f"minikube profile {profile} has {', '.join(short)} (minikube cannot resize a profile)",
                profile,
            )
        )
    return found
