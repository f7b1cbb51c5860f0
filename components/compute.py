"""ComputeCheck component: a CUDA kernel on each of the lab's GPUs, and the proof that it computed.

The smoke Pod's ``nvidia-smi`` needs only the control device and the driver's management
library; CUDA needs more of what the node's runtime injects (``/dev/nvidia-uvm``, the CUDA
driver library, a kernel launch). So after the smoke check:

* Pod ``gpu-compute`` (the smoke Pod's namespace): one container per GPU the smoke Pod asks
  for (``gpus``, the same count: ``smokeGpus``, ``all`` resolved), ``vectoradd-0`` ...
  ``vectoradd-<gpus-1>``, each NVIDIA's vectorAdd sample in the configured pinned image
  (default ``nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0``, the GPU Operator docs'
  sample) running ``nvidia-smi -L`` (the GPUs it sees) and then ``/cuda-samples/vectorAdd``
  (gpulab.kube.compute.COMPUTE_SCRIPT), with ``limits: nvidia.com/gpu: 1`` (the resource the smoke
  Pod asks for), ``restartPolicy: Never``. The containers of one Pod run at once, and the
  kubelet's device manager gives each its own devices, so with whole GPUs and no
  time-slicing N containers are N distinct GPUs. Created = accepted by the API server
  (``pulumi.com/waitFor``, as the smoke Pod); replaced delete-first (same name).
* The check (``python -m gpulab.kube compute``): waits for phase ``Succeeded`` and requires
  a ``Test PASSED`` line in each container's log (gpulab.kube.compute), and that each
  container listed exactly the GPU it was given, no two the same, all among the host's
  (gpulab.kube.gpu_isolation); a ``Failed`` Pod, a container whose log lacks it, or one that saw
  GPUs it was not given fails the update, naming the container(s) with their log tail or
  GPUs and the diagnosis. ``gpus`` (output ``computeGpus``) is how many containers passed.

In the simulated lab kwok completes the Pod and serves every container a vectorAdd log
whose first line says it is simulated (variants/sim/ctl): the outputs list the compute keys
as simulated.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.command import GpuPodArgs, check_result, pod_check, run_once_pod
from gpulab.core import names
from gpulab.kube import pod_specs
from gpulab.kube.results import ComputeResult

POD_NAME = names.COMPUTE_POD
POD_NAMESPACE = names.WORKLOAD_NAMESPACE
#: ``gpuStack: dra``: the compute Pod's ResourceClaimTemplate, in the Pod's namespace.
CLAIM_TEMPLATE = f"{names.COMPUTE_POD}-gpus"


class ComputeCheck(pulumi.ComponentResource):
    """The compute Pod and its check (see module docstring). Type token
    ``gpulab:compute:ComputeCheck``. Inputs: :class:`components.command.GpuPodArgs` (``gpus``:
    the containers, one ``resource`` each; the lab passes the smoke Pod's with the compute image).

    Outputs: ``phase`` (``"Succeeded"``), ``result`` (``"passed"``: the check fails the update
    otherwise), ``gpus`` (int: containers whose log said ``Test PASSED``, one GPU each; all of
    them, or the update failed), ``gpu_uuids`` (``{container: {"gpus": [UUID], "mig": [UUID]}}``:
    what each listed), ``node``, ``image``, ``log_simulated`` (bool: a log was the
    sim lab's), ``measured_at`` (when the check read them: UTC ISO 8601); registered with the Pod's
    ``podSpec`` (restart policy, image, limits) for the policy pack to read at preview.
    """

    def __init__(
        self,
        name: str,
        args: GpuPodArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:compute:ComputeCheck", name, None, opts)
        namespace = args.namespace or POD_NAMESPACE
        self.claim_template: k8s.apiextensions.CustomResource | None = None
        if args.dra_class:
            # DRA: one request of one GPU per vectorAdd container, from this template.
            self.claim_template = k8s.apiextensions.CustomResource(
                f"{name}-claim-template",
                api_version="resource.k8s.io/v1",
                kind="ResourceClaimTemplate",
                metadata={"name": CLAIM_TEMPLATE, "namespace": namespace},
                spec=pod_specs.compute_claim_template(args.dra_class, args.gpus),
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
        template = CLAIM_TEMPLATE if self.claim_template else None
        spec = pod_specs.compute(args.image, args.gpus, args.runtime_class, args.resource, template)
        extra = [*args.diagnosis_args(), *args.isolation_args()]
        # Replaced when the check's inputs change (a new Pod, never the old one re-read).
        inputs = args.inputs("compute", (POD_NAMESPACE, POD_NAME), extra)
        self.pod = run_once_pod(
            f"{name}-pod",
            (namespace, POD_NAME),
            spec,
            after=[self.claim_template] if self.claim_template else [],
            simulated=args.simulated,
            provider=provider,
            parent=self,
            inputs=inputs,
        )
        self.check = pod_check(
            f"{name}-check",
            "compute",
            self.pod,
            (args.namespace or POD_NAMESPACE, POD_NAME),
            args.kubeconfig,
            timeout_seconds=args.timeout_seconds,
            extra=extra,
            parent=self,
            inputs=inputs,
        )
        facts = check_result(self.check.stdout, ComputeResult)
        self.phase = facts.apply(lambda f: f.compute_phase)
        self.result = facts.apply(lambda f: f.compute_result)
        self.gpus = facts.apply(lambda f: f.compute_gpus)
        self.node = facts.apply(lambda f: f.compute_node)
        self.log_simulated = facts.apply(lambda f: f.compute_log_simulated)
        self.gpu_uuids = facts.apply(lambda f: f.compute_gpu_uuids)
        self.measured_at = facts.apply(lambda f: f.measured_at)
        self.image = pulumi.Output.from_input(args.image)
        self.register_outputs(
            {
                "phase": self.phase,
                "result": self.result,
                "gpus": self.gpus,
                "node": self.node,
                "logSimulated": self.log_simulated,
                "gpuUuids": self.gpu_uuids,
                "measuredAt": self.measured_at,
                "image": self.image,
                "podSpec": spec,
            }
        )
