"""The Lab component: the whole lab, read top down.

host probe -> the variant's cluster -> a Kubernetes provider built from its kubeconfig ->
the GPU stack (the GPU Operator, NVIDIA's device plugin or DRA driver chart, or a found one)
and its readiness gate -> the smoke test -> the compute check (a CUDA kernel,
``computeCheck``), beside it the DCGM exporter's metrics (GPU labs with ``dcgmExporter``) ->
the optional TFLOPS benchmark Pod -> the optional queue layer (``queues``). ``Lab.__init__``
is that list, one step a line, each a method named for it. Data flows through outputs
(the provider from the cluster's kubeconfig, the gate's expected count from the probe);
``depends_on`` only orders side effects (the smoke Pod after the gate, one GPU Pod at a
time after it: the compute Pod after the smoke check, the benchmark after the last). The
variant (variants/<name>/) is the only thing that differs between a minikube, kind, k3s,
existing or simulated lab.

``outputs`` holds every stack output, written through the typed model (gpulab.core.outputs.
LabOutputs.export: a value per field, by attribute name); ``__main__.py`` exports it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.benchmark import BenchmarkArgs, TflopsBenchmark
from components.cluster import PreRelease, identity_command
from components.command import GpuPodArgs, parse_json_stdout
from components.compute import ComputeCheck
from components.dcgm import DcgmArgs, DcgmMetrics
from components.device_plugin import DevicePluginArgs, DevicePluginChartRelease
from components.dra import DraArgs, DraDriver
from components.fleet import FoundGpuStack, FoundStackArgs
from components.gpu_operator import GpuOperator, GpuOperatorArgs, pre_release_check
from components.host_probe import HostProbe
from components.queues import QueueArgs, QueueLayer
from components.smoke import SmokeTest
from gpulab.config import adopt, mig, operand_images
from gpulab.config import dra as dra_config
from gpulab.config import gpus as gpu_config
from gpulab.config.lab import LabConfig
from gpulab.core import names
from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs, attribute
from gpulab.host.facts import HostFacts
from gpulab.kube import gpu_isolation, identity
from gpulab.tflops import report as tflops_report
from program.edge import mig_plan, simulated_fields
from variants.base import GpuExpectation, Variant


@dataclass(frozen=True)
class LabArgs:
    """Inputs: ``config`` (parsed, validated: gpulab.config.lab.LabConfig), the host ``facts``
    preflight read (None with ``hostProbe: off``) and the chosen ``variant`` (the registry's
    ``get(config.cluster)``, asked at the edge)."""

    config: LabConfig
    facts: HostFacts | None
    variant: Variant


class Lab(pulumi.ComponentResource):
    """One GPU lab (see module docstring). Type token ``gpulab:lab:Lab``.

    Attributes: ``probe``, ``cluster``, ``provider``, ``device_plugin`` (None unless ``gpuStack:
    device-plugin``), ``operator`` (the GPU stack: GpuOperator, FoundGpuStack or DraDriver),
    ``smoke``, ``compute`` (None unless ``computeCheck``), ``dcgm`` (None in a simulated lab or
    with ``dcgmExporter`` off), ``benchmark`` (None unless ``benchmarkPod``) and ``queues`` (None
    unless ``queues``): the children; ``run_at``: when this run built the component (UTC ISO
    8601); ``outputs``: output key -> value, every key of gpulab.core.outputs this variant has.
    """

    def __init__(self, name: str, args: LabArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpulab:lab:Lab", name, None, opts)
        # This run's time: the host was probed just before (program.edge); facts the gate
        # and the smoke check did not re-measure in this run are older (the card says so).
        self.run_at = datetime.now(UTC).isoformat(timespec="seconds")
        cfg, facts, variant = args.config, args.facts, args.variant
        self.probe = HostProbe("host", mode=cfg.effective_host_probe, facts=facts, opts=self._child())
        self.cluster = variant.create(cfg, self._child())
        expect = variant.gpu_expectation(cfg, facts)
        self._identify(variant.spec.owns_cluster, self._pre_release(cfg, variant))
        self.provider = self._kubernetes_provider(variant.spec.owns_cluster)
        self.mig_plan = self._mig_plan(cfg, facts, expect)
        self.device_plugin = self._device_plugin_chart(cfg, variant)
        self.operator = self._gpu_stack(cfg, variant)
        smoke_args = self._smoke_args(cfg, facts, expect, variant.spec.node(cfg.profile))
        self.smoke = SmokeTest(
            "smoke",
            smoke_args,
            provider=self.provider,
            # The Pod must be scheduled only after the device plugin has registered the GPUs.
            opts=self._child(self.operator.gate),
        )
        self.compute = self._compute(cfg, variant, smoke_args, _host_uuids(facts, expect.from_config))
        self.dcgm = self._dcgm(cfg)
        self.benchmark = self._benchmark(cfg)
        self.queues = self._queues(cfg, variant)
        self.outputs = self._outputs(
            cfg,
            variant,
            expect.physical if expect.from_config else None,
            expect.source,
            not expect.from_config,
        )
        self.register_outputs(self.outputs)

    def _child(self, *after: pulumi.Resource) -> pulumi.ResourceOptions:
        """A child's options: parented to the Lab, created after ``after`` (side-effect order only)."""
        return pulumi.ResourceOptions(parent=self, depends_on=list(after) or None)

    def _identify(self, owns_cluster: bool, then: PreRelease | None) -> None:
        """The cluster's identity (``identity_command``, ``identity``: its record), then the
        GPU stack's pre-release check ``then`` in the same process, and the kubeconfig every
        check gets (``check_kubeconfig``: carrying that identity; secret)."""
        # Which cluster: recorded once it answers, compared whenever the kubeconfig changes
        # (gpulab.kube.identity); every check below verifies it before it reads anything.
        self.identity_command = identity_command(self.cluster, owns_cluster, self._child(), then)
        self.identity = parse_json_stdout(self.identity_command.stdout, "gpulab.kube.identity record")
        self.check_kubeconfig: pulumi.Output[str] = pulumi.Output.secret(
            pulumi.Output.all(self.cluster.kubeconfig, self.identity).apply(
                lambda a: identity.embed(a[0], a[1])
            )
        )

    @staticmethod
    def _pre_release(cfg: LabConfig, variant: Variant) -> PreRelease | None:
        """The GPU stack's check before its release (the GPU Operator's CRDs and values:
        components.gpu_operator.pre_release_check); None for the other stacks."""
        if cfg.fleet.dra or cfg.fleet.per_node:
            return None
        return pre_release_check(cfg.operator, variant.spec, variant.spec.owns_cluster)

    def _kubernetes_provider(self, owns_cluster: bool) -> k8s.Provider:
        """The Kubernetes provider, built from the cluster's kubeconfig (data, not depends_on)."""
        return k8s.Provider(
            "k8s",
            kubeconfig=self.cluster.kubeconfig,
            # A cluster the lab owns and that was deleted by hand must not block `pulumi
            # destroy` (make destroy first confirms it is gone: ops.teardown). Never for a
            # cluster somebody else runs: unreachable there means "not now", not "gone".
            delete_unreachable=owns_cluster,
            # Nothing touches the cluster before its identity is known to be the stack's own,
            # not even the provider's own state: configured beside the identity check (0.6 s
            # sooner), a kubeconfig reaching another cluster would be recorded as the
            # provider's before the check refuses it, and `destroy` would delete there
            # (tests/e2e/test_sim_wrong_cluster.py compares the state's provider).
            opts=self._child(self.identity_command),
        )

    def _mig_plan(self, cfg: LabConfig, facts: HostFacts | None, expect: GpuExpectation) -> mig.Plan:
        """What the gate waits for and what the smoke Pod asks for (MIG: gpulab.config.mig);
        preflight's MIG line per GPU is logged (the failures stopped it already)."""
        plan = mig_plan(cfg, facts, expect.physical)
        if facts is not None:
            for line in mig.mig_findings(facts.gpus, cfg.gpu.mig_strategy, facts.mig_devices):
                pulumi.log.info(f"preflight [{line.id}] {line.observed}", resource=self.probe)
        return plan

    def _device_plugin_chart(self, cfg: LabConfig, variant: Variant) -> DevicePluginChartRelease | None:
        """NVIDIA's device plugin chart alone, with GFD (``gpuStack: device-plugin``; then gated
        and checked per node by the found stack's gate); None for the other stacks."""
        if not cfg.fleet.device_plugin:
            return None
        return DevicePluginChartRelease(
            "device-plugin",
            DevicePluginArgs(
                chart=cfg.device_plugin_chart,
                operator=cfg.operator,
                runtime_class=cfg.smoke_runtime_class,
                device_list=variant.spec.device_list_strategy(cfg.operator.nri_plugin),
                release_after=tuple(self.cluster.release_after),
                adopted_namespaces=adopt.namespaces(cfg.adopt_existing),
            ),
            provider=self.provider,
            opts=self._child(),
        )

    def _gpu_stack(self, cfg: LabConfig, variant: Variant) -> GpuOperator | FoundGpuStack | DraDriver:
        """The GPU stack and its gate, by ``gpuStack``: NVIDIA's DRA driver, a found stack (or the
        device plugin chart just installed) checked per node, else the GPU Operator."""
        if cfg.fleet.dra:
            return self._dra_driver(cfg)
        if cfg.fleet.per_node:
            return self._found_stack(cfg, variant)
        return self._gpu_operator(cfg, variant)

    def _dra_driver(self, cfg: LabConfig) -> DraDriver:
        """NVIDIA's DRA driver: GPUs through ResourceClaims; gated on a slice per GPU node."""
        return DraDriver(
            "dra",
            DraArgs(
                chart=cfg.dra_chart,
                kubeconfig=self.check_kubeconfig,
                timeout_seconds=cfg.operator.timeout_seconds,
                release_after=tuple(self.cluster.release_after),
            ),
            provider=self.provider,
            opts=self._child(),
        )

    def _gpu_operator(self, cfg: LabConfig, variant: Variant) -> GpuOperator:
        """The GPU Operator (its chart with the variant's values) and its readiness gate."""
        return GpuOperator(
            "gpu-operator",
            GpuOperatorArgs(
                operator=cfg.operator,
                variant=variant.spec,
                kubeconfig=self.check_kubeconfig,
                device_plugin_owner=cfg.device_plugin_owner,
                simulate_operands=cfg.simulated,
                expect=self.mig_plan.expected,
                grace_seconds=cfg.gpu.grace_seconds,
                profile=cfg.profile,
                release_after=self.cluster.release_after,
                owns_cluster=variant.spec.owns_cluster,
                adopted_namespaces=adopt.namespaces(cfg.adopt_existing),
            ),
            provider=self.provider,
            opts=self._child(),
        )

    def _found_stack(self, cfg: LabConfig, variant: Variant) -> FoundGpuStack:
        """A GPU stack somebody else installed (read, never installed), or the device plugin
        chart just installed: every GPU node gated and checked."""
        return FoundGpuStack(
            "gpu-stack",
            FoundStackArgs(
                fleet=cfg.fleet,
                kubeconfig=self.check_kubeconfig,
                smoke_image=cfg.smoke_image,
                compute_image=cfg.compute_image if cfg.compute_check else None,
                resource=cfg.operator.gpu_resource,
                runtime_class=cfg.smoke_runtime_class,
                timeout_seconds=cfg.smoke_timeout_seconds,
                grace_seconds=cfg.gpu.grace_seconds,
                simulated=cfg.simulated,
                profile=cfg.profile,
                node_command=variant.spec.node(cfg.profile),
                release_after=tuple(self.cluster.release_after),
                dcgm_exporter=cfg.operator.dcgm_exporter,
                installed=self.device_plugin,
                install_timeout=cfg.operator.timeout_seconds,
                chart_components=_chart_components(cfg, variant),
                adopted_namespaces=adopt.namespaces(cfg.adopt_existing),
            ),
            provider=self.provider,
            opts=self._child(),
        )

    def _smoke_args(
        self, cfg: LabConfig, facts: HostFacts | None, expect: GpuExpectation, node_command: str
    ) -> GpuPodArgs:
        """The smoke Pod's arguments (the compute Pod starts from them); ``node_command``: how
        its fixes reach the GPU node (the variant's)."""
        # smokeGpus all: every GPU of this host where one Pod can hold them all. The smoke Pod
        # asks for them all; the compute Pod runs one vectorAdd container on each.
        pod_gpus = gpu_config.smoke_gpu_count(
            cfg.smoke_gpus,
            None if facts is None or expect.from_config else len(facts.gpus),
            cfg.operator.time_slicing_replicas,
            self.mig_plan.smoke_resource,
            cfg.gpu.mig_strategy,
        )
        return GpuPodArgs(
            image=cfg.smoke_image,
            kubeconfig=self.check_kubeconfig,
            gpus=pod_gpus,
            resource=self.mig_plan.smoke_resource,
            timeout_seconds=cfg.smoke_timeout_seconds,
            simulated=cfg.simulated,
            host_max_cuda=facts.max_cuda if facts else None,
            profile=cfg.profile,
            node_command=node_command,
            runtime_class=cfg.smoke_runtime_class,
            host_driver=facts.driver_version if facts else None,
            # A found GPU stack's lab (and the device plugin chart's) writes its Pods in its own namespace.
            namespace=cfg.fleet.namespace if cfg.fleet.per_node else None,
            dra_class=dra_config.DEVICE_CLASS if cfg.fleet.dra else None,
            dra_driver=dra_config.DRIVER if cfg.fleet.dra else None,
        )

    def _compute(
        self, cfg: LabConfig, variant: Variant, smoke_args: GpuPodArgs, host_uuids: tuple[str, ...]
    ) -> ComputeCheck | None:
        """The compute check (``computeCheck``), else None: the smoke Pod's args, a container per GPU."""
        if not cfg.compute_check:
            return None
        return ComputeCheck(
            "compute",
            replace(
                smoke_args,
                image=cfg.compute_image,
                # What each container must see: one unit of the smoke Pod's resource, among
                # this host's GPUs where the host is the cluster (gpulab.kube.gpu_isolation).
                unit=gpu_isolation.unit_for(self.mig_plan.smoke_resource, cfg.operator.time_slicing_replicas),
                host_gpu_uuids=host_uuids,
                cluster=cfg.cluster,
                device_list=variant.spec.device_list_strategy(cfg.operator.nri_plugin),
                device_list_reason=variant.spec.device_list_reason or None,
            ),
            provider=self.provider,
            # One GPU at a time on a one-GPU lab: after the smoke Pod is done with it.
            opts=self._child(self.smoke.check),
        )

    def _dcgm(self, cfg: LabConfig) -> DcgmMetrics | None:
        """The DCGM exporter's metrics (``dcgmExporter``, not in a simulated lab), else None."""
        if not cfg.operator.dcgm_exporter or cfg.simulated:
            return None
        # After the smoke check and beside the compute check (no dependency on it): the
        # engine runs both at once, so the exporter is read while the compute Pod runs.
        return DcgmMetrics(
            "dcgm",
            DcgmArgs(kubeconfig=self.check_kubeconfig, rerun_when=self.smoke.measured_at),
            opts=self._child(self.smoke.check),
        )

    def _benchmark(self, cfg: LabConfig) -> TflopsBenchmark | None:
        """The TFLOPS benchmark Pod (``benchmarkPod``), else None."""
        if not cfg.benchmark_pod:
            return None
        return TflopsBenchmark(
            "benchmark",
            BenchmarkArgs(
                image=cfg.benchmark_image,
                kubeconfig=self.check_kubeconfig,
                resource=self.mig_plan.smoke_resource,
            ),
            provider=self.provider,
            # One GPU at a time on a one-GPU lab: measure after the last GPU Pod is done.
            opts=self._child(self.compute.check if self.compute else self.smoke.check),
        )

    def _queues(self, cfg: LabConfig, variant: Variant) -> QueueLayer | None:
        """Kueue (``queues``), else None: after the gate measured the quota; proven after the last GPU Pod."""
        if not cfg.queues.enabled:
            return None
        last = (
            self.benchmark.reader
            if self.benchmark
            else (self.compute.check if self.compute else self.smoke.check)
        )
        return QueueLayer(
            "queues",
            QueueArgs(
                settings=cfg.queues,
                kubeconfig=self.check_kubeconfig,
                resource=cfg.operator.gpu_resource,
                quota=self.operator.allocatable_gpus.apply(lambda n: n or 0),
                namespace=cfg.fleet.namespace if cfg.fleet.per_node else names.WORKLOAD_NAMESPACE,
                image=cfg.smoke_image,
                controller=variant.spec.queue_controller_argv(cfg.profile),
                simulated=cfg.simulated,
                timeout_seconds=cfg.operator.timeout_seconds,
                after=(last,),
            ),
            provider=self.provider,
            opts=self._child(self.operator.gate),
        )

    def _outputs(
        self,
        cfg: LabConfig,
        variant: Variant,
        config_gpus: int | None,
        source: str | None,
        host_is_cluster: bool,
    ) -> dict[str, object]:
        """Every stack output, written through the typed model (gpulab.core.outputs.LabOutputs:
        one value per field, by attribute name; it raises on a field not set)."""
        probe, operator, smoke = self.probe, self.operator, self.smoke
        values: dict[str, Any] = {
            "cluster_kind": cfg.cluster,
            "kubernetes_version": operator.server_version,
            "chart_version": operator.chart_version,
            "chart_source": operator.chart_source,
            "operator_components": operator.components,
            # Who runs the device plugin: the operator or minikube's addon as configured; a
            # found stack's somebody else; NVIDIA's chart the lab installed.
            "device_plugin_owner": _DEVICE_PLUGIN_OWNER.get(cfg.fleet.stack, cfg.device_plugin_owner),
            "simulated_flag": cfg.simulated,
            "simulated_fields": [
                f for f in simulated_fields(cfg, variant) if cfg.compute_check or f not in _COMPUTE_KEYS
            ],
            "kubeconfig": self.cluster.kubeconfig,
            "cluster_identity": self.identity,
            "owns_cluster_flag": variant.spec.owns_cluster,
            "host_is_cluster_flag": host_is_cluster,
            "node_command": variant.spec.node(cfg.profile),
            "host_gpu_count": config_gpus if config_gpus is not None else self._found_gpus(probe),
            "host_gpu_models": probe.gpu_models,
            "host_gpus": probe.gpus,
            "host_driver_version": probe.driver_version,
            "host_max_cuda": probe.max_cuda,
            "host_probe_source": source or probe.source,
            "host_topology": probe.topology,
            "node_runtime": probe.node_runtime,
            "gpu_resource": cfg.operator.gpu_resource,
            "allocatable_gpus": operator.allocatable_gpus,
            "capacity_gpus": operator.capacity_gpus,
            "cluster_policy_state": operator.cluster_policy_state,
            "device_plugin_pods": operator.device_plugin_pods,
            "mig_strategy": cfg.gpu.mig_strategy,
            "mig_resources": operator.mig_resources,
            "expected_mig_resources": self.mig_plan.expected.mig_resources(),
            "smoke_resource": self.mig_plan.smoke_resource,
            "smoke_phase": smoke.phase,
            "smoke_driver_version": smoke.driver_version,
            "smoke_cuda_version": smoke.cuda_version,
            "smoke_events": smoke.events,
            "smoke_image": smoke.image,
            "smoke_node": smoke.node,
            "smoke_gpus": smoke.gpus,
            "smoke_gpu_uuids": smoke.gpu_uuids,
            "operand_images": operand_images.exported(cfg.operator.operand_images),
            "run_at": self.run_at,
            "gate_measured_at": operator.measured_at,
            "smoke_measured_at": smoke.measured_at,
            **self._compute_outputs(),
            **self._fleet_outputs(),
            **self._allocation_outputs(),
            "dcgm_metrics": self.dcgm.metrics if self.dcgm else None,
            "dcgm_measured_at": self.dcgm.measured_at if self.dcgm else None,
            "queues": self.queues.facts if self.queues else None,
        }
        if self.benchmark is not None:
            # Burst, sustained (the headline) and the reference, each with its clock and power.
            values["measured_tflops"] = self.benchmark.result.apply(
                lambda r: tflops_report.measured_tflops(r.to_json())
            )
            values["tflops_measured_at"] = self.benchmark.result.apply(lambda r: r.measured_at)
        # The variant's own outputs (e.g. the existing cluster's leftovers), by output key.
        return LabOutputs.export(values, extra=self.cluster.extra_outputs)

    def _found_gpus(self, probe: HostProbe) -> Any:
        """The host GPU count where config gives none: the probe's, or with a found GPU stack the
        GPUs its nodes' labels say, summed by the fleet check (gpulab.kube.fleet)."""
        op = self.operator
        return op.expected_gpus if isinstance(op, FoundGpuStack) else probe.gpu_count

    def _fleet_outputs(self) -> dict[str, Any]:
        """The node table, its summary and how the GPU stack got there (install: no table yet)."""
        op = self.operator
        if isinstance(op, FoundGpuStack):
            return {"gpu_stack": op.gpu_stack, "nodes": op.nodes, "nodes_summary": op.nodes_summary}
        if isinstance(op, DraDriver):
            return {"gpu_stack": op.gpu_stack, "nodes": None, "nodes_summary": None}
        return {"gpu_stack": {"mode": "install"}, "nodes": None, "nodes_summary": None}

    def _allocation_outputs(self) -> dict[str, Any]:
        """Which allocation path the smoke Pod proved, and with DRA its evidence: the slices the
        gate read and the smoke Pod's claim as allocated, reserved and seen."""
        op = self.operator
        if not isinstance(op, DraDriver):
            return {"allocation_path": "device-plugin", "dra": None}
        evidence = pulumi.Output.all(op.slices, self.smoke.claim).apply(
            lambda a: {
                "deviceClass": dra_config.DEVICE_CLASS,
                "driver": dra_config.DRIVER,
                "slices": a[0],
                "claim": a[1],
            }
        )
        return {"allocation_path": "dra", "dra": evidence}

    def _compute_outputs(self) -> dict[str, Any]:
        """The compute fields; with ``computeCheck`` off: result ``not-tested``, the others None."""
        c = self.compute
        if c is None:
            return {"compute_result": "not-tested", **dict.fromkeys(map(attribute, _COMPUTE_KEYS[1:]))}
        return {
            "compute_result": c.result,
            "compute_phase": c.phase,
            "compute_gpus": c.gpus,
            "compute_gpu_uuids": c.gpu_uuids,
            "compute_image": c.image,
            "compute_measured_at": c.measured_at,
        }


#: ``devicePluginOwner`` by ``gpuStack`` where the config's devicePluginOwner does not apply.
_DEVICE_PLUGIN_OWNER = {"found": "found", "device-plugin": "device-plugin-chart", "dra": "none (dra)"}

#: The outputs of the compute check (computeResult first).
_COMPUTE_KEYS = (
    out.COMPUTE_RESULT,
    out.COMPUTE_PHASE,
    out.COMPUTE_GPUS,
    out.COMPUTE_GPU_UUIDS,
    out.COMPUTE_IMAGE,
    out.COMPUTE_MEASURED_AT,
)


def _chart_components(cfg: LabConfig, variant: Variant) -> dict[str, bool | int | str | None]:
    """operatorComponents' settings of NVIDIA's device plugin chart (``gpuStack: device-plugin``):
    NFD, the device list strategy and the time-slicing settings; {} for the other stacks."""
    if not cfg.fleet.device_plugin:
        return {}
    op = cfg.operator
    return {
        "nfd": op.nfd,
        "deviceListStrategy": variant.spec.device_list_strategy(op.nri_plugin),
        "timeSlicingReplicas": op.time_slicing_replicas,
        "timeSlicingRename": op.time_slicing_rename,
        "timeSlicingFailRequestsGreaterThanOne": op.time_slicing_fail_requests_greater_than_one,
    }


def _host_uuids(facts: HostFacts | None, from_config: bool) -> tuple[str, ...]:
    """The host's GPU UUIDs the compute check compares with; empty when the host is not the
    cluster (an existing cluster's count comes from config) or the probe did not run or has
    no UUID for a GPU."""
    if facts is None or from_config or any(not g.uuid for g in facts.gpus):
        return ()
    return tuple(str(g.uuid) for g in facts.gpus)
