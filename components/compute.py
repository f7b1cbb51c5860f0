"""ComputeCheck component: a CUDA kernel on the lab's GPU, and the proof that it computed.

The smoke Pod's ``nvidia-smi`` needs only the control device and the driver's management
library; CUDA needs more of what the node's runtime injects (``/dev/nvidia-uvm``, the CUDA
driver library, a kernel launch). So after the smoke check:

* Pod ``gpu-compute`` (the smoke Pod's namespace): NVIDIA's vectorAdd sample in the
  configured pinned image (default ``nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0``,
  the GPU Operator docs' sample), ``limits: nvidia.com/gpu: 1`` (the resource the smoke Pod
  asks for), ``restartPolicy: Never``. Created = accepted by the API server
  (``pulumi.com/waitFor``, as the smoke Pod); replaced delete-first (same name).
* The check (``python -m gpulab.kube compute``): waits for phase ``Succeeded`` and requires
  a ``Test PASSED`` line in the log (gpulab.kube_compute); a ``Failed`` Pod or a log without
  it fails the update with the log tail and the diagnosis.

In the simulated lab kwok completes the Pod and serves a vectorAdd log whose first line
says it is simulated (variants/sim/ctl): the outputs list the compute keys as simulated.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.command import diagnosis_args, parse_json_stdout, pod_check, run_once_pod
from gpulab import names

POD_NAME = names.COMPUTE_POD
POD_NAMESPACE = names.WORKLOAD_NAMESPACE


@dataclass(frozen=True)
class ComputeArgs:
    """Inputs.

    Attributes:
        image: the vectorAdd image, pinned (config ``computeImage``).
        kubeconfig: the cluster's kubeconfig (secret), for the check.
        resource: the extended resource requested, the one the smoke Pod asks for
            (``nvidia.com/gpu``).
        timeout_seconds: seconds for the Pod to reach ``Succeeded`` (image pull included).
        simulated: the sim lab (kwok completes the Pod; the annotation says so).
        runtime_class: the Pod's ``runtimeClassName`` (as the smoke Pod's), None for the
            node's default runtime.
        host_max_cuda: the host's newest CUDA, and ``profile``: named in a failure's diagnosis.
    """

    image: str
    kubeconfig: pulumi.Input[str]
    resource: str = names.GPU_RESOURCE
    timeout_seconds: int = 300
    simulated: bool = False
    runtime_class: str | None = None
    host_max_cuda: str | None = None
    profile: str = names.DEFAULT_PROFILE


def pod_spec(
    image: str, resource: str = names.GPU_RESOURCE, runtime_class: str | None = None
) -> dict[str, object]:
    """The compute Pod's spec: one GPU, run once, the image's own entrypoint (vectorAdd)."""
    spec: dict[str, object] = {
        "restartPolicy": "Never",
        "containers": [{"name": "vectoradd", "image": image, "resources": {"limits": {resource: "1"}}}],
    }
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return spec


class ComputeCheck(pulumi.ComponentResource):
    """The compute Pod and its check (see module docstring). Type token
    ``gpulab:compute:ComputeCheck``.

    Outputs: ``phase`` (``"Succeeded"``), ``result`` (``"passed"``: the check fails the update
    otherwise), ``node``, ``image``, ``log_simulated`` (bool: the log was the sim lab's),
    ``measured_at`` (when the check read them: UTC ISO 8601); registered with the Pod's
    ``podSpec`` (restart policy, image, limits) for the policy pack to read at preview.
    """

    def __init__(
        self,
        name: str,
        args: ComputeArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:compute:ComputeCheck", name, None, opts)
        spec = pod_spec(args.image, args.resource, args.runtime_class)
        self.pod = run_once_pod(
            f"{name}-pod",
            (POD_NAMESPACE, POD_NAME),
            spec,
            simulated=args.simulated,
            provider=provider,
            parent=self,
        )
        self.check = pod_check(
            f"{name}-check",
            "compute",
            self.pod,
            (POD_NAMESPACE, POD_NAME),
            args.kubeconfig,
            timeout_seconds=args.timeout_seconds,
            extra=diagnosis_args(args.host_max_cuda, args.profile),
            parent=self,
        )
        facts = parse_json_stdout(self.check.stdout, "gpulab.kube compute")
        self.phase = facts.apply(lambda f: f.get("computePhase"))
        self.result = facts.apply(lambda f: f.get("computeResult"))
        self.node = facts.apply(lambda f: f.get("computeNode"))
        self.log_simulated = facts.apply(lambda f: f.get("computeLogSimulated"))
        self.measured_at = facts.apply(lambda f: f.get("measuredAt"))
        self.image = pulumi.Output.from_input(args.image)
        self.register_outputs(
            {
                "phase": self.phase,
                "result": self.result,
                "node": self.node,
                "logSimulated": self.log_simulated,
                "measuredAt": self.measured_at,
                "image": self.image,
                "podSpec": spec,
            }
        )
