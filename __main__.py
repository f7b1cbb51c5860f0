"""gpu-lab: a Kubernetes lab where a GPU is a schedulable resource (wiring only).

host probe -> cluster (minikube | kind | k3s | existing | sim) -> GPU Operator + readiness
gate -> smoke test, then the stack outputs the baseline card is made from (keys:
gpulab/outputs.py).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.benchmark import BenchmarkArgs, TflopsBenchmark
from components.existing import ExistingArgs, ExistingCluster
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.host_probe import HostProbe
from components.k3s import K3sArgs, K3sCluster
from components.kind import KindArgs, KindCluster
from components.lab import load_config, probe_and_preflight, simulated_fields
from components.minikube import MinikubeArgs, MinikubeCluster
from components.sim import SimArgs, SimCluster
from components.smoke import SmokeArgs, SmokeTest
from gpulab import existing_ctl
from gpulab import outputs as out
from gpulab.config import ConfigError
from gpulab.nvsmi import NvidiaSmiParseError
from gpulab.preflight import PreflightError

try:
    cfg = load_config()
    facts = probe_and_preflight(cfg)
except (ConfigError, PreflightError, NvidiaSmiParseError) as exc:
    # The message names every cause and its first fix; a traceback would only bury it.
    raise pulumi.RunError(str(exc)) from exc
probe = HostProbe("host", mode=cfg.effective_host_probe, facts=facts)

# Physical GPUs allocatable must add up to: the host's, or for a cluster that is not this
# host the count its config promises.
physical_gpus: int | None = probe.facts.count if probe.facts else None
host_gpu_count: pulumi.Input[int | None] = probe.gpu_count
host_probe_source: pulumi.Input[str] = probe.source
release_after: list[pulumi.Resource] = []
cluster: MinikubeCluster | SimCluster | KindCluster | K3sCluster | ExistingCluster
if cfg.cluster == "minikube":
    cluster = MinikubeCluster(
        "minikube",
        MinikubeArgs(
            profile=cfg.profile,
            cpus=cfg.cpus,
            memory_mib=cfg.memory_mib,
            kubernetes_version=cfg.kubernetes_version,
            addon_device_plugin=cfg.device_plugin_owner == "minikube-addon",
            timeout_seconds=cfg.cluster_timeout_seconds,
        ),
    )
elif cfg.cluster == "kind":
    cluster = KindCluster(
        "kind",
        KindArgs(
            name=cfg.profile,
            node_image=cfg.kind_node_image,
            workdir=f".state/kind/{cfg.profile}",
            timeout_seconds=cfg.cluster_timeout_seconds,
        ),
    )
elif cfg.cluster == "k3s":
    cluster = K3sCluster("k3s", K3sArgs(version=cfg.k3s_version, timeout_seconds=cfg.cluster_timeout_seconds))
elif cfg.cluster == "existing":
    cluster = ExistingCluster(
        "existing",
        ExistingArgs(
            kubeconfig_path=cfg.kubeconfig_path,
            context=cfg.kube_context,
            crds=existing_ctl.operator_crds(cfg.operator.chart_path, cfg.operator.nfd),
            remove_crds=cfg.remove_crds,
            timeout_seconds=cfg.operator.timeout_seconds,
        ),
    )
    release_after = cluster.release_after
    physical_gpus = host_gpu_count = cfg.expected_gpus
    if probe.facts is None:
        host_probe_source = "config:expectedGpus"
else:
    cluster = SimCluster(
        "sim",
        SimArgs(
            name=cfg.profile,
            gpus=cfg.sim_gpus,
            workdir=f".state/sim/{cfg.profile}",
            timeout_seconds=cfg.cluster_timeout_seconds,
        ),
    )

provider = k8s.Provider(
    "k8s",
    kubeconfig=cluster.kubeconfig,
    # A cluster the lab owns and that was deleted by hand must not block `pulumi destroy`:
    # drop its objects (make destroy first confirms it is gone: gpulab.teardown). Never for a
    # cluster somebody else runs: unreachable there means "not now", not "gone".
    delete_unreachable=cfg.cluster != "existing",
)
operator = GpuOperator(
    "gpu-operator",
    GpuOperatorArgs(
        operator=cfg.operator,
        kubeconfig=cluster.kubeconfig,
        device_plugin_owner=cfg.device_plugin_owner,
        simulate_operands=cfg.simulated,
        expected_gpus=physical_gpus * cfg.operator.time_slicing_replicas if physical_gpus else None,
        profile=cfg.profile,
        release_after=release_after,
    ),
    provider=provider,
)
smoke = SmokeTest(
    "smoke",
    SmokeArgs(
        image=cfg.smoke_image,
        kubeconfig=cluster.kubeconfig,
        gpus=cfg.smoke_gpus,
        timeout_seconds=cfg.smoke_timeout_seconds,
        simulated=cfg.simulated,
        host_max_cuda=probe.facts.max_cuda if probe.facts else None,
        profile=cfg.profile,
        runtime_class=cfg.smoke_runtime_class,
    ),
    provider=provider,
    # The Pod must be scheduled only after the device plugin has registered the GPUs.
    opts=pulumi.ResourceOptions(depends_on=[operator.gate]),
)

pulumi.export(out.CLUSTER_KIND, cfg.cluster)
pulumi.export(out.KUBERNETES_VERSION, operator.server_version)
pulumi.export(out.CHART_VERSION, operator.chart_version)
pulumi.export(out.CHART_SOURCE, operator.chart_source)
pulumi.export(out.OPERATOR_COMPONENTS, operator.components)
pulumi.export(out.DEVICE_PLUGIN_OWNER, cfg.device_plugin_owner)
pulumi.export(out.SIMULATED, cfg.simulated)
pulumi.export(out.SIMULATED_FIELDS, simulated_fields(cfg))
pulumi.export(out.KUBECONFIG, cluster.kubeconfig)
pulumi.export(out.HOST_GPU_COUNT, host_gpu_count)
pulumi.export(out.HOST_GPU_MODELS, probe.gpu_models)
pulumi.export(out.HOST_GPUS, probe.gpus)
pulumi.export(out.HOST_DRIVER_VERSION, probe.driver_version)
pulumi.export(out.HOST_MAX_CUDA, probe.max_cuda)
pulumi.export(out.HOST_PROBE_SOURCE, host_probe_source)
pulumi.export(out.ALLOCATABLE_GPUS, operator.allocatable_gpus)
pulumi.export(out.CAPACITY_GPUS, operator.capacity_gpus)
pulumi.export(out.CLUSTER_POLICY_STATE, operator.cluster_policy_state)
pulumi.export(out.DEVICE_PLUGIN_PODS, operator.device_plugin_pods)
pulumi.export(out.SMOKE_PHASE, smoke.phase)
pulumi.export(out.SMOKE_DRIVER_VERSION, smoke.driver_version)
pulumi.export(out.SMOKE_CUDA_VERSION, smoke.cuda_version)
pulumi.export(out.SMOKE_EVENTS, smoke.events)
pulumi.export(out.SMOKE_IMAGE, smoke.image)
pulumi.export(out.SMOKE_NODE, smoke.node)
if isinstance(cluster, ExistingCluster):
    pulumi.export(out.LEFTOVERS, cluster.leftovers)
if cfg.benchmark_pod:
    bench = TflopsBenchmark(
        "benchmark",
        BenchmarkArgs(image=cfg.benchmark_image, kubeconfig=cluster.kubeconfig),
        provider=provider,
        # One GPU at a time on a one-GPU lab: measure after the smoke Pod is done with it.
        opts=pulumi.ResourceOptions(depends_on=[smoke.check]),
    )
    pulumi.export(
        out.MEASURED_TFLOPS,
        bench.result.apply(lambda r: {k: v.get("tflops") for k, v in (r.get("results") or {}).items()}),
    )
