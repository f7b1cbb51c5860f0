"""What a pod is to the lab (operator, toolkit, device plugin, validator, ...) and where its
role sits in the dependency chain (the rank :func:`~gpulab.diagnose.diagnose_cluster` sorts by)."""

from __future__ import annotations

from typing import Final

from gpulab.core.names import DEVICE_PLUGIN_DS, TOOLKIT_DS
from gpulab.diagnose.fields import _get, _name
from gpulab.diagnose.record import Json

# (role, prefix) in match order: longer, more specific prefixes first.
_ROLE_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("validator", "nvidia-operator-validator"),
    # The workload Pods the validator starts (cuda-validation, plugin-validation).
    ("validator", "nvidia-cuda-validator"),
    ("validator", "nvidia-device-plugin-validator"),
    ("device-plugin", DEVICE_PLUGIN_DS),
    ("toolkit", TOOLKIT_DS),
    ("dcgm-exporter", "nvidia-dcgm-exporter"),
    ("dcgm-exporter", "nvidia-dcgm"),
    ("operator", "gpu-operator-node-feature-discovery"),
    ("operator", "gpu-operator"),
    ("operand", "gpu-feature-discovery"),
    ("operand", "nvidia-"),
)
_ROLE_RANK: Final = {
    "node": 0,
    "operator": 10,
    "daemonset": 20,
    "validator-driver": 25,
    "toolkit": 30,
    "validator-toolkit": 35,
    "device-plugin": 40,
    "operand": 45,
    "validator": 50,
    "allocatable": 60,
    "scheduling": 70,
    "workload": 80,
}
_NON_BLOCKING_RANK: Final = 1000


def _init_rank(role: str, container: str) -> int:
    """The rank of a pod's unfinished init container: the validator's driver and toolkit steps
    sit early in the chain (everything waits on them), its other steps after the plugin."""
    if role == "validator":
        return {
            "driver-validation": _ROLE_RANK["validator-driver"],
            "toolkit-validation": _ROLE_RANK["validator-toolkit"],
        }.get(container, _ROLE_RANK["validator"])
    return _ROLE_RANK.get(role, _ROLE_RANK["operand"])


def _role_of_name(name: str, app: str | None = None) -> str:
    for role, prefix in _ROLE_PREFIXES:
        if app == prefix or name == prefix or name.startswith(prefix + "-"):
            return role
        if prefix.endswith("-") and name.startswith(prefix):
            return role
    return "workload"


def _role(pod: Json) -> str:
    labels = _get(pod, "metadata", "labels") or {}
    app = labels.get("app") or labels.get("app.kubernetes.io/name")
    if labels.get("app.kubernetes.io/component") == "gpu-operator":
        return "operator"
    if app == "node-feature-discovery":
        return "operator"
    role = _role_of_name(_name(pod), app)
    if role == "workload" and app:
        role = _role_of_name(str(app))
    return role
