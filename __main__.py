"""gpu-lab: a Kubernetes lab where a GPU is a schedulable resource (wiring only).

host probe -> cluster (minikube | sim) -> GPU Operator + readiness gate -> smoke test,
then the stack outputs the baseline card is made from (keys: gpulab/outputs.py).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.host_probe import HostProbe
from components.lab import load_config, preflight_or_raise, simulated_fields
from components.minikube import MinikubeArgs, MinikubeCluster
from components.sim import SimArgs, SimCluster
from components.smoke import SmokeArgs, SmokeTest
from gpulab import outputs as out

cfg = load_config()
probe = HostProbe("host", mode=cfg.effective_host_probe, capture=cfg.effective_capture)
preflight_or_raise(cfg, probe.facts)

cluster: MinikubeCluster | SimCluster
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
    # A cluster deleted by hand must not block `pulumi destroy`: drop its objects.
    delete_unreachable=True,
)
operator = GpuOperator(
    "gpu-operator",
    GpuOperatorArgs(
        operator=cfg.operator,
        kubeconfig=cluster.kubeconfig,
        device_plugin_owner=cfg.device_plugin_owner,
        simulate_operands=cfg.simulated,
        expected_gpus=probe.facts.count * cfg.operator.time_slicing_replicas if probe.facts else None,
        profile=cfg.profile,
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
pulumi.export(out.HOST_GPU_COUNT, probe.gpu_count)
pulumi.export(out.HOST_GPU_MODELS, probe.gpu_models)
pulumi.export(out.HOST_GPUS, probe.gpus)
pulumi.export(out.HOST_DRIVER_VERSION, probe.driver_version)
pulumi.export(out.HOST_MAX_CUDA, probe.max_cuda)
pulumi.export(out.HOST_PROBE_SOURCE, probe.source)
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
