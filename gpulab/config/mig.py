"""MIG (Multi-Instance GPU): the strategies, the resources they make, and what the lab expects.

The GPU Operator's ``mig.strategy`` Helm value (ClusterPolicy ``spec.mig.strategy``, enum
``none | single | mixed`` in the chart's CRD) is handed to the device plugin and to GPU
Feature Discovery (NVIDIA/k8s-device-plugin ``docs/customizing.md``, ``MIG_STRATEGY``;
``internal/lm/mig-strategy.go`` for the labels):

============ =================================================================================
``none``     every GPU is one ``nvidia.com/gpu``, MIG or not. A Pod given a MIG-enabled GPU
             this way cannot run CUDA on it (NVIDIA/gpu-operator#637: ``nvidia.com/gpu: 2``
             advertised next to ``nvidia.com/mig-1g.10gb: 6``, "the nvidia.com/gpu request
             fails to inject GPU").
``single``   every MIG device is one ``nvidia.com/gpu``; all GPUs must have MIG enabled with
             one profile, otherwise GFD labels the node ``nvidia.com/gpu.product=<model>-MIG-
             INVALID`` and ``nvidia.com/gpu.count=0``. The operator's chart default.
``mixed``    each profile is its own resource ``nvidia.com/mig-<profile>`` (e.g.
             ``nvidia.com/mig-1g.18gb``); GPUs without MIG stay ``nvidia.com/gpu``. A node
             whose GPUs all have MIG shows ``nvidia.com/gpu: 0`` beside the MIG resources
             (davidB/kubectl-view-allocations#258, an H100 in mixed mode).
============ =================================================================================

Time-slicing (the lab's config names ``nvidia.com/gpu`` only) multiplies ``nvidia.com/gpu``;
the MIG resources of ``mixed`` are not replicated by it.

What the lab knows of the MIG devices: ``expectedMigDevices`` (config, e.g. ``"1g.18gb=7"``),
else the host probe's ``nvidia-smi -L`` listing (:attr:`gpulab.host.probe.HostFacts.mig_devices`),
else nothing (the gate then only asks for some MIG resource > 0).

Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpulab.core.findings import Finding, Status
from gpulab.core.names import GPU_RESOURCE

STRATEGIES: Final = ("none", "single", "mixed")
#: Prefix of the resources the ``mixed`` strategy makes: ``nvidia.com/mig-<profile>``.
MIG_RESOURCE_PREFIX: Final = "nvidia.com/mig-"
#: A MIG profile as the device plugin names its resource: ``<slices>g.<memory>gb``.
PROFILE: Final = re.compile(r"^[1-8]g\.\d{1,4}gb$")
#: A resource a Pod may ask for: ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` (time-slicing's
#: rename) or ``nvidia.com/mig-<profile>``.
RESOURCE: Final = re.compile(r"^nvidia\.com/(gpu|gpu\.shared|mig-[1-8]g\.\d{1,4}gb)$")

__all__ = [
    "MIG_RESOURCE_PREFIX",
    "STRATEGIES",
    "Expected",
    "Plan",
    "devices_by_profile",
    "format_devices",
    "mig_findings",
    "mig_totals",
    "parse_devices",
    "plan",
    "resource_of",
]


def resource_of(profile: str) -> str:
    """``"1g.18gb"`` -> ``"nvidia.com/mig-1g.18gb"`` (the ``mixed`` strategy's resource)."""
    return MIG_RESOURCE_PREFIX + profile


def parse_devices(text: str) -> dict[str, int]:
    """Parse ``"1g.18gb=7,2g.35gb=1"`` (a profile and a count, comma-separated) into
    ``{"1g.18gb": 7, "2g.35gb": 1}``; ``""`` gives ``{}``.

    Raises:
        ValueError: an entry that is not ``<profile>=<count>``, a profile not
            ``<slices>g.<memory>gb``, a count < 1, or a profile given twice (the message
            quotes the entry).
    """
    out: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        profile, sep, count = entry.partition("=")
        profile = profile.strip().removeprefix(MIG_RESOURCE_PREFIX)
        if not sep or not PROFILE.match(profile) or not count.strip().isdigit() or int(count) < 1:
            raise ValueError(
                f"{entry!r} is not <profile>=<count> with a profile like 1g.18gb and a count >= 1"
            )
        if profile in out:
            raise ValueError(f"profile {profile} is given twice")
        out[profile] = int(count)
    return out


def format_devices(devices: Mapping[str, int]) -> str:
    """The inverse of :func:`parse_devices`: ``{"1g.18gb": 7}`` -> ``"1g.18gb=7"`` (sorted)."""
    return ",".join(f"{p}={n}" for p, n in sorted(devices.items()))


def devices_by_profile(mig_devices: Sequence[Any]) -> dict[str, int]:
    """MIG devices (:class:`gpulab.host.nvsmi.MigDevice`, anything with ``.profile``) counted per
    profile: ``{"1g.18gb": 7}``."""
    counts: dict[str, int] = {}
    for d in mig_devices:
        counts[d.profile] = counts.get(d.profile, 0) + 1
    return counts


def mig_totals(nodes: Sequence[Mapping[str, Any]], field_name: str = "allocatable") -> dict[str, int]:
    """``status.<field_name>`` ``nvidia.com/mig-*`` summed over nodes (JSON dicts):
    ``{"nvidia.com/mig-1g.18gb": 7}``; ``{}`` when no node has one."""
    totals: dict[str, int] = {}
    for n in nodes:
        for key, value in ((n.get("status") or {}).get(field_name) or {}).items():
            if key.startswith(MIG_RESOURCE_PREFIX):
                totals[key] = totals.get(key, 0) + int(str(value))
    return totals


@dataclass(frozen=True)
class Expected:
    """What the nodes should advertise, summed.

    Attributes:
        strategy: ``none``, ``single`` or ``mixed``.
        gpus: ``nvidia.com/gpu`` expected (physical GPUs x replicas; ``single``: MIG devices
            x replicas; ``mixed``: the GPUs without MIG x replicas); None when unknown.
        mig: ``mixed`` only: ``{resource: count}`` expected, e.g.
            ``{"nvidia.com/mig-1g.18gb": 7}``; None when unknown (or not ``mixed``).
        resource: the name ``gpus`` counts: ``nvidia.com/gpu``, or ``nvidia.com/gpu.shared``
            under time-slicing with ``renameByDefault`` (gpulab.config.time_slicing).
    """

    strategy: str = "none"
    gpus: int | None = None
    mig: Mapping[str, int] | None = None
    resource: str = GPU_RESOURCE

    @property
    def wants_mig(self) -> bool:
        """True under ``mixed``: the MIG resources are what the gate waits for."""
        return self.strategy == "mixed"

    def mig_resources(self) -> dict[str, int] | None:
        """The ``expectedMigResources`` output: what MIG makes the nodes advertise, ``mixed``:
        ``{"nvidia.com/mig-1g.18gb": 7}``, ``single``: ``{"nvidia.com/gpu": 7}``; None without
        MIG (``none``) or when unknown."""
        if self.strategy == "mixed":
            return dict(self.mig) if self.mig else None
        if self.strategy == "single" and self.gpus is not None:
            return {self.resource: self.gpus}
        return None

    def describe(self) -> str:
        """One phrase for messages, e.g. ``"nvidia.com/mig-1g.18gb=7"`` or
        ``"nvidia.com/gpu=1"``."""
        parts = []
        if self.wants_mig:
            parts.append(
                ", ".join(f"{r}={n}" for r, n in sorted(self.mig.items()))
                if self.mig
                else "some nvidia.com/mig-* > 0"
            )
            if self.gpus:
                parts.append(f"{self.resource}={self.gpus}")
        else:
            parts.append(f"{self.resource}={self.gpus}" if self.gpus is not None else f"{self.resource} > 0")
        return "; ".join(parts)


@dataclass(frozen=True)
class Plan:
    """The lab's MIG plan: what to expect, what the smoke Pod asks for, what is wrong.

    Attributes:
        expected: :class:`Expected`.
        smoke_resource: the resource the smoke Pod requests (``nvidia.com/gpu`` or a
            ``nvidia.com/mig-<profile>``).
        devices: MIG devices per profile the plan is based on (``{}`` when none known).
        devices_source: ``"config:expectedMigDevices"``, ``"host probe"`` or ``""``.
        problems: ``(cause, fix)`` per contradiction; preflight fails on them.
    """

    expected: Expected
    smoke_resource: str = GPU_RESOURCE
    devices: Mapping[str, int] = field(default_factory=dict)
    devices_source: str = ""
    problems: tuple[tuple[str, str], ...] = ()


def plan(
    strategy: str,
    physical: int | None,
    replicas: int,
    *,
    gpu_mig_modes: Sequence[str | None] = (),
    configured: Mapping[str, int] | None = None,
    probed: Mapping[str, int] | None = None,
    smoke_resource: str = "",
    gpu_resource: str = GPU_RESOURCE,
) -> Plan:
    """The MIG plan from config and host facts.

    Args:
        strategy: ``migStrategy``.
        physical: physical GPUs (None: unknown).
        replicas: time-slicing replicas (>= 1).
        gpu_mig_modes: per GPU, ``"Enabled"``, ``"Disabled"`` or None (host probe).
        configured: ``expectedMigDevices`` parsed (``{}``/None: not set).
        probed: the host probe's MIG devices per profile (None: not listed).
        smoke_resource: ``smokeResource`` (``""``: ``gpu_resource``, under ``mixed`` the
            smallest expected profile's resource).
        gpu_resource: the whole-GPU resource the device plugin registers (``nvidia.com/gpu``,
            or ``nvidia.com/gpu.shared`` with time-slicing's rename: gpulab.config.time_slicing).
    """
    devices: Mapping[str, int] = configured or probed or {}
    source = "config:expectedMigDevices" if configured else ("host probe" if probed else "")
    problems: list[tuple[str, str]] = []
    enabled = sum(1 for m in gpu_mig_modes if m == "Enabled")
    known_modes = bool(gpu_mig_modes) and all(m is not None for m in gpu_mig_modes)
    if strategy == "single":
        total = sum(devices.values()) if devices else None
        if len(devices) > 1:
            problems.append(
                (
                    f"migStrategy single with MIG profiles {format_devices(devices)}: the device plugin "
                    "allows one profile per node (k8s-device-plugin: 'more than one MIG device type "
                    "present on node') and advertises 0",
                    "scripts/pulumi config set gpu-lab:migStrategy mixed",
                )
            )
        gpus = total * replicas if total is not None else (None if enabled else _times(physical, replicas))
        expected = Expected("single", gpus, resource=gpu_resource)
    elif strategy == "mixed":
        plain = (len(gpu_mig_modes) - enabled) if known_modes else None
        expected = Expected(
            "mixed",
            plain * replicas if plain is not None else None,
            {resource_of(p): n for p, n in devices.items()} or None,
            gpu_resource,
        )
    else:
        expected = Expected("none", _times(physical, replicas), resource=gpu_resource)
    resource = smoke_resource or gpu_resource
    if strategy == "mixed" and not smoke_resource:
        smallest = sorted(devices, key=_profile_order)[:1]
        if smallest:
            resource = resource_of(smallest[0])
        elif not (known_modes and enabled < len(gpu_mig_modes)):
            problems.append(
                (
                    "migStrategy mixed and no MIG device known (no expectedMigDevices, no nvidia-smi -L "
                    "listing): the smoke Pod needs a resource that exists",
                    "scripts/pulumi config set gpu-lab:expectedMigDevices 1g.18gb=7 (what nvidia-smi -L "
                    "lists), or gpu-lab:smokeResource nvidia.com/mig-<profile>",
                )
            )
    if strategy != "mixed" and resource != gpu_resource:
        problems.append(
            (
                f"smokeResource {resource} exists only with migStrategy mixed (got {strategy})"
                if resource.startswith(MIG_RESOURCE_PREFIX)
                else f"smokeResource {resource} is not advertised: with migStrategy {strategy}"
                + (" and timeSlicingRename" if gpu_resource != GPU_RESOURCE else "")
                + f" the nodes have {gpu_resource}; the smoke Pod would stay Pending",
                f"scripts/pulumi config set gpu-lab:smokeResource {gpu_resource}",
            )
        )
    if strategy == "mixed" and resource != gpu_resource and expected.mig and resource not in expected.mig:
        problems.append(
            (
                f"smokeResource {resource} is not among the expected MIG resources "
                f"({', '.join(sorted(expected.mig))}, from {source}): the smoke Pod would stay Pending",
                f"scripts/pulumi config set gpu-lab:smokeResource {sorted(expected.mig)[0]}",
            )
        )
    return Plan(expected, resource, dict(devices), source, tuple(problems))


def _times(n: int | None, replicas: int) -> int | None:
    return n * replicas if n is not None else None


def _profile_order(profile: str) -> tuple[int, int]:
    slices, _, memory = profile.partition("g.")
    return int(slices), int(memory.removesuffix("gb") or 0)


def mig_findings(
    gpus: Sequence[Any], strategy: str, mig_devices: Sequence[Any] | None = None
) -> list[Finding]:
    """One finding per GPU (id ``mig-mode``, subject ``gpu <index>``): its MIG mode against
    ``migStrategy``; then a failed ``mig-strategy`` finding when the GPUs together do not fit
    ``single``.

    ``gpus``: :class:`gpulab.host.nvsmi.GpuInfo` (``index``, ``name``, ``mig_mode``,
    ``mig_mode_pending``); ``mig_devices``: :class:`gpulab.host.nvsmi.MigDevice` (``gpu_index``,
    ``profile``), None when not listed.

    Fails: MIG enabled with ``none`` (the whole GPU would be handed out and CUDA cannot use
    it: NVIDIA/gpu-operator#637); with ``single``, MIG enabled on some GPUs only, or a
    MIG-enabled GPU without MIG devices (GFD: "at least one MIG device is enabled but empty").
    """
    found: list[Finding] = []
    by_gpu: dict[int, list[str]] = {}
    for d in mig_devices or ():
        by_gpu.setdefault(int(d.gpu_index), []).append(str(d.profile))
    for g in gpus:
        mode, pending = g.mig_mode, g.mig_mode_pending
        subject = f"gpu {g.index}"
        shown = mode or "not supported or unknown"
        note = f" (pending {pending} after a GPU reset)" if pending and pending != mode else ""
        listed = by_gpu.get(int(g.index))
        devices = (
            f"; MIG devices: {format_devices({p: listed.count(p) for p in set(listed)})}"
            if listed
            else ("; no MIG device created" if mode == "Enabled" and mig_devices is not None else "")
        )
        observed = f"GPU {g.index} ({g.name}): MIG mode {shown}{note}, migStrategy {strategy}{devices}"
        if mode == "Enabled" and strategy == "none":
            found.append(
                Finding(
                    "mig-mode",
                    Status.FAIL,
                    observed + ": the device plugin would hand out the whole MIG-enabled GPU as "
                    f"{GPU_RESOURCE}, and CUDA cannot use it that way (NVIDIA/gpu-operator#637)",
                    expected="migStrategy single or mixed for a GPU with MIG enabled",
                    fix="scripts/pulumi config set gpu-lab:migStrategy mixed (or single when every GPU "
                    f"has MIG with one profile); or turn MIG off: sudo nvidia-smi -i {g.index} -mig 0 "
                    "and reset the GPU",
                    subject=subject,
                )
            )
        elif mode == "Enabled" and mig_devices is not None and not listed and strategy == "single":
            found.append(
                Finding(
                    "mig-mode",
                    Status.FAIL,
                    observed + ": with migStrategy single the device plugin then advertises 0 GPUs "
                    "(GFD: 'at least one MIG device is enabled but empty')",
                    expected="MIG devices on every MIG-enabled GPU",
                    fix=f"create MIG devices: sudo nvidia-smi mig -i {g.index} -cgi 1g.18gb -C (profiles: "
                    f"nvidia-smi mig -i {g.index} -lgip), or let the MIG manager do it "
                    "(kubectl label node <node> nvidia.com/mig.config=all-1g.18gb)",
                    subject=subject,
                )
            )
        else:
            found.append(Finding("mig-mode", Status.PASS, observed, subject=subject))
    modes = {g.mig_mode for g in gpus}
    if strategy == "single" and "Enabled" in modes and modes - {"Enabled"}:
        found.append(
            Finding(
                "mig-strategy",
                Status.FAIL,
                "migStrategy single with MIG enabled on some GPUs only: the device plugin refuses the mix "
                "(k8s-device-plugin: 'devices with MIG enabled and disable detected') and advertises 0",
                expected="all GPUs with MIG enabled under migStrategy single",
                fix="scripts/pulumi config set gpu-lab:migStrategy mixed",
            )
        )
    return found
