"""Calling the pack's policies the way the engine calls them (pulumi-policy's own argument
classes, the pack's adapters), and the resources and outputs the tests feed them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, unknown_checking_proxy

from gpulab.core import outputs as out
from gpulab.core.argv import encode
from policy import validators

ROOT = Path(__file__).resolve().parents[3]
UNK = UNKNOWN_STRING_VALUE
STACK_URN = "urn:pulumi:sim::gpu-lab::pulumi:pulumi:Stack::gpu-lab-sim"
NVIDIA = "https://helm.ngc.nvidia.com/nvidia"
SMOKE_OK = "nvidia/cuda:12.4.1-base-ubuntu22.04"
SMOKE_131 = "nvidia/cuda:13.1.0-base-ubuntu24.04"
COMPUTE_OK = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"


# --- harness ------------------------------------------------------------------------
def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


class Outcome:
    """What a validator did: violation messages, or not applicable with a reason."""

    def __init__(self) -> None:
        self.violations: list[tuple[str, str | None]] = []
        self.not_applicable: str | None = None

    def report(self, message: str, urn: str | None = None) -> None:
        self.violations.append((message, urn))

    @property
    def passed(self) -> bool:
        return not self.violations and self.not_applicable is None

    @property
    def text(self) -> str:
        return "\n".join(m for m, _ in self.violations)


def check_resource(
    name: str, rtype: str, props: dict[str, Any], config: dict[str, Any] | None = None
) -> Outcome:
    """Run resource policy ``name`` as the engine does (props behind the SDK's proxy)."""
    spec = validators.spec(name)
    args = ResourceValidationArgs(
        rtype, unknown_checking_proxy(props), f"urn:test::{name}", "r", _opts(), None, config
    )
    outcome = Outcome()
    try:
        validators.validate_resource(spec, args, outcome.report)
    except _NotApplicableError as exc:
        outcome.not_applicable = exc.reason or ""
    return outcome


def res(rtype: str, props: dict[str, Any], name: str = "r", urn: str | None = None) -> PolicyResource:
    return PolicyResource(
        rtype, unknown_checking_proxy(props), urn or f"urn:test::{name}", name, _opts(), None, None, [], {}
    )


def check_stack(name: str, resources: list[PolicyResource], config: dict[str, Any] | None = None) -> Outcome:
    spec = validators.spec(name)
    args = StackValidationArgs(resources, config)
    outcome = Outcome()
    try:
        validators.validate_stack(spec, args, outcome.report)
    except _NotApplicableError as exc:
        outcome.not_applicable = exc.reason or ""
    return outcome


def unverified_lines() -> list[str]:
    outcome = Outcome()
    validators.validate_unverified(StackValidationArgs([]), outcome.report)
    return [m for m, _ in outcome.violations]


def release(**over: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": "v26.7.0",
        "namespace": "gpu-operator",
        "repositoryOpts": {"repo": NVIDIA},
        "values": {
            "driver": {"enabled": False},
            "toolkit": {"enabled": True},
            "devicePlugin": {"enabled": True},
        },
    }
    props.update(over)
    return props


def smoke_pod(image: str = SMOKE_OK, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "cuda",
        "image": image,
        "command": ["nvidia-smi"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    body: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-smoke"}, "spec": body}


def ctl_start(cpus: int = 4, memory: int = 8192, gpus: str | None = "all") -> dict[str, Any]:
    """The minikube-start LocalCommand's inputs, as variants/minikube/component.py builds them."""
    create = ["python", "-m", "variants.minikube.ctl", "up", "--profile", "gpu-lab", "--cpus", str(cpus)]
    create += ["--memory-mib", str(memory), "--kubernetes-version", "v1.34.0"]
    if gpus:
        create += ["--gpus", gpus]
    delete = ["python", "-m", "variants.minikube.ctl", "down", "--profile", "gpu-lab"]
    return {"create": encode(create), "delete": encode(delete)}


def addon(state: str) -> dict[str, Any]:
    create = ["python", "-m", "variants.minikube.ctl", "addon", "--profile", "gpu-lab", "--state", state]
    return {"create": encode(create)}


def good_outputs(**over: Any) -> dict[str, Any]:
    """Stack exports of a healthy GPU lab (not simulated)."""
    o: dict[str, Any] = {
        out.CLUSTER_KIND: "minikube",
        out.SIMULATED: False,
        out.SIMULATED_FIELDS: [],
        out.HOST_GPU_COUNT: 1,
        out.HOST_GPU_MODELS: ["NVIDIA H200"],
        out.HOST_DRIVER_VERSION: "580.159.04",
        out.HOST_MAX_CUDA: "13.0",
        out.HOST_PROBE_SOURCE: "nvidia-smi",
        out.ALLOCATABLE_GPUS: 1,
        out.CAPACITY_GPUS: 1,
        out.CLUSTER_POLICY_STATE: "ready",
        out.DEVICE_PLUGIN_PODS: [{"name": "p", "phase": "Running", "ready": True, "restarts": 0}],
        out.KUBERNETES_VERSION: "v1.34.0",
        out.SMOKE_PHASE: "Succeeded",
        out.SMOKE_DRIVER_VERSION: "580.159.04",
        out.SMOKE_CUDA_VERSION: "13.0",
        out.SMOKE_EVENTS: ["Scheduled", "Pulling", "Pulled", "Created", "Started"],
        out.SMOKE_IMAGE: SMOKE_OK,
        out.COMPUTE_RESULT: "passed",
        out.COMPUTE_PHASE: "Succeeded",
        out.COMPUTE_IMAGE: COMPUTE_OK,
    }
    o.update(over)
    return o


def stack(outputs: dict[str, Any]) -> PolicyResource:
    return res(validators.T_STACK, outputs, "gpu-lab-sim", STACK_URN)


def host_probe(
    source: str = "capture:h200-1gpu", driver: str | None = "580.159.04", max_cuda: str | None = "13.0"
):
    props: dict[str, Any] = {"source": source, "gpuCount": 1, "simulated": source.startswith("capture")}
    if driver:
        props["driverVersion"] = driver
    if max_cuda:
        props["maxCuda"] = max_cuda
    return res(validators.T_HOST_PROBE, props, "host")


#: The checklist items, in pack order.
ITEMS = (
    "device-plugin-stable",
    "allocatable-matches-gpus",
    "driver-version-matches",
    "events-scheduled-and-pulled",
    "baseline-card-complete",
    "compute-works",
)
