"""SmokeTest component: the chapter's first GPU Pod, and the proof that it ran.

* Pod ``gpu-smoke`` (namespace ``default``): ``nvidia-smi && nvidia-smi -L`` in the
  configured CUDA base image, ``limits: nvidia.com/gpu: N``, ``restartPolicy: Never``. A
  run-to-completion Pod is never "Ready", so ``pulumi.com/waitFor`` makes "created"
  mean "accepted by the API server"; replaced delete-first (same name), and the delete
  waits until the old Pod is gone.
* The check (``python3 -m gpulab.kube smoke``): waits for phase ``Succeeded`` (a Pod has
  no ``complete`` condition), reads the log's nvidia-smi header (driver and CUDA
  versions), the UUIDs of the GPUs it saw (``nvidia-smi -L``) and the Pod's events.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.command import GpuPodArgs, check_result, pod_check, run_once_pod
from gpulab.core import names
from gpulab.kube import pod_specs
from gpulab.kube.results import SmokeResult

POD_NAME = names.SMOKE_POD
POD_NAMESPACE = names.WORKLOAD_NAMESPACE
#: ``gpuStack: dra``: the smoke Pod's ResourceClaimTemplate, in the Pod's namespace.
CLAIM_TEMPLATE = f"{names.SMOKE_POD}-gpus"


class SmokeTest(pulumi.ComponentResource):
    """The smoke Pod and its check (see module docstring). Inputs:
    :class:`components.command.GpuPodArgs` (``gpus``: the Pod's limit of ``resource``).

    Outputs: ``phase``, ``driver_version``, ``cuda_version`` (None on old drivers),
    ``gpus`` (how many it requested), ``gpu_uuids`` (the GPUs it saw, None when its log lists
    none),
    ``events`` (list of event reasons), ``node``, ``image``, ``measured_at`` (when the check
    read them: UTC ISO 8601).
    """

    def __init__(
        self,
        name: str,
        args: GpuPodArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:smoke:SmokeTest", name, None, opts)
        extra = args.diagnosis_args()
        namespace = args.namespace or POD_NAMESPACE
        self.claim_template: k8s.apiextensions.CustomResource | None = None
        if args.dra_class:
            # DRA: the GPUs come from a claim the control plane makes from this template.
            extra = [
                *extra,
                "--dra-claim",
                pod_specs.CLAIM,
                "--dra-driver",
                args.dra_driver or args.dra_class,
            ]
            self.claim_template = k8s.apiextensions.CustomResource(
                f"{name}-claim-template",
                api_version="resource.k8s.io/v1",
                kind="ResourceClaimTemplate",
                metadata={"name": CLAIM_TEMPLATE, "namespace": namespace},
                spec=pod_specs.claim_template(args.dra_class, args.gpus),
                opts=pulumi.ResourceOptions(parent=self, provider=provider),
            )
        inputs = args.inputs("smoke", (POD_NAMESPACE, POD_NAME), extra)
        # The template's name is a constant, so the Pod's spec is known at preview (the policy
        # pack reads it); the Pod is made after the template (after=), which it names.
        template = CLAIM_TEMPLATE if self.claim_template else None
        spec = pod_specs.smoke(args.image, args.gpus, args.runtime_class, args.resource, template)
        # Created = accepted by the API server; the check waits for Succeeded. Replaced when
        # the check's inputs change (a new Pod, never the old one re-read).
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
            "smoke",
            self.pod,
            (args.namespace or POD_NAMESPACE, POD_NAME),
            args.kubeconfig,
            timeout_seconds=args.timeout_seconds,
            extra=extra,
            parent=self,
            inputs=inputs,
        )
        #: What the check printed, typed (gpulab.kube.results.SmokeResult).
        self.result = check_result(self.check.stdout, SmokeResult)
        self.phase = self.result.apply(lambda r: r.smoke_phase)
        self.driver_version = self.result.apply(lambda r: r.smoke_driver_version)
        self.cuda_version = self.result.apply(lambda r: r.smoke_cuda_version)
        self.events = self.result.apply(lambda r: r.smoke_events)
        self.node = self.result.apply(lambda r: r.smoke_node)
        self.gpus = pulumi.Output.from_input(args.gpus)
        self.gpu_uuids = self.result.apply(lambda r: r.smoke_gpu_uuids)
        self.image = pulumi.Output.from_input(args.image)
        self.measured_at = self.result.apply(lambda r: r.measured_at)
        #: DRA: the claim as allocated and reserved, and whether the Pod saw exactly it (None
        #: for the counted resource).
        self.claim = self.result.apply(lambda r: r.smoke_claim)
        self.register_outputs(
            {
                "phase": self.phase,
                "driverVersion": self.driver_version,
                "cudaVersion": self.cuda_version,
                "events": self.events,
                "node": self.node,
                "gpus": self.gpus,
                "gpuUuids": self.gpu_uuids,
                "image": self.image,
                "measuredAt": self.measured_at,
            }
        )
