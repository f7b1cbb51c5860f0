"""Whether the device plugin's GPU sharing config was applied: a sentence for the gate's diagnosis.

Time-slicing reaches the device plugin in three steps (GPU Operator docs, "Time-Slicing GPUs
in Kubernetes"; chart values ``devicePlugin.config.{name,create,default,data}``): the chart
makes the ConfigMap ``<name>`` in the operator's namespace, the ClusterPolicy names it in
``spec.devicePlugin.config`` (``name``, ``default``: the key the nodes use), and the device
plugin reads the key's ``sharing.timeSlicing.resources[{name, replicas}]``
(NVIDIA/k8s-device-plugin README, "Shared Access to GPUs with CUDA Time-Slicing"), after which
GPU Feature Discovery labels the node ``nvidia.com/gpu.replicas`` and
``nvidia.com/gpu.sharing-strategy`` (``none``, ``time-slicing`` or ``mps``). When allocatable is
not physical GPUs x replicas, this says which step is missing.

Pure: no I/O, no Pulumi.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from gpulab.core import yamlio

Json = Mapping[str, Any]


def config_ref(policy: Json | None) -> tuple[str, str] | None:
    """``(name, default)`` of the ClusterPolicy's ``spec.devicePlugin.config``; None when it
    names no ConfigMap (no sharing config applied)."""
    ref = (((policy or {}).get("spec") or {}).get("devicePlugin") or {}).get("config") or {}
    name = ref.get("name") if isinstance(ref, Mapping) else None
    return (str(name), str(ref.get("default") or "")) if name else None


def time_slicing(text: str) -> dict[str, int] | str:
    """The ``{resource: replicas}`` of one device-plugin config (YAML text, ``version: v1``);
    a string saying why when it has none or does not parse."""
    try:
        doc = yamlio.load(text)
    except yaml.YAMLError as exc:
        return f"does not parse as YAML ({str(exc).splitlines()[0]})"
    resources = (
        (((doc or {}).get("sharing") or {}).get("timeSlicing") or {}).get("resources")
        if isinstance(doc, Mapping)
        else None
    )
    if not isinstance(resources, list) or not resources:
        return "has no sharing.timeSlicing.resources"
    return {str(r.get("name")): int(r.get("replicas") or 0) for r in resources if isinstance(r, Mapping)}


def renamed(text: str) -> bool:
    """True when one device-plugin config (YAML text) sets ``sharing.timeSlicing.renameByDefault``
    (the shared GPUs are then ``nvidia.com/gpu.shared``); False when unset or unparsable."""
    try:
        doc = yamlio.load(text)
    except yaml.YAMLError:
        return False
    ts = ((doc.get("sharing") or {}).get("timeSlicing") or {}) if isinstance(doc, Mapping) else {}
    return isinstance(ts, Mapping) and ts.get("renameByDefault") is True


def diagnosis(policy: Json | None, config_map: Json | None, nodes: Sequence[Json], namespace: str) -> str:
    """One sentence: the ClusterPolicy's reference, the ConfigMap's presence and its default
    key's time-slicing, the nodes' GFD sharing labels. ``config_map``: the ConfigMap the
    ClusterPolicy names, as JSON (None: absent or not read)."""
    labels = "; ".join(
        f"node {(n.get('metadata') or {}).get('name')}: nvidia.com/gpu.replicas="
        f"{((n.get('metadata') or {}).get('labels') or {}).get('nvidia.com/gpu.replicas', '(unset)')}, "
        f"nvidia.com/gpu.sharing-strategy="
        f"{((n.get('metadata') or {}).get('labels') or {}).get('nvidia.com/gpu.sharing-strategy', '(unset)')}"
        for n in nodes
    )
    ref = config_ref(policy)
    if ref is None:
        why = "ClusterPolicy spec.devicePlugin.config names no ConfigMap"
        return f"sharing config: not applied ({why}); {labels}"
    name, default = ref
    where = f"ConfigMap {namespace}/{name}"
    if config_map is None:
        missing = f"ClusterPolicy names {where} (default {default!r}), which does not exist"
        return f"sharing config: {missing}; {labels}"
    data = config_map.get("data") or {}
    if default not in data:
        keys = ", ".join(sorted(data)) or "none"
        return f"sharing config: {where} has no key {default!r} (keys: {keys}); {labels}"
    found = time_slicing(str(data[default]))
    shown = (
        ", ".join(f"{r} x{n}" for r, n in sorted(found.items()))
        + (" (renameByDefault: advertised as <name>.shared)" if renamed(str(data[default])) else "")
        if isinstance(found, dict)
        else f"not set: the key {found}"
    )
    return f"sharing config: {where} key {default!r}: time-slicing {shown}; {labels}"
