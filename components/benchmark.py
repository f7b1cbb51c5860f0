"""TflopsBenchmark component: an optional Pod that measures dense matmul TFLOP/s on the lab's GPU.

The chapter's baseline card records measured TFLOPS. On a GPU lab with ``benchmarkPod``
on, this component runs ``python -m gpulab.tflops --json`` (the same code as the
host-side command) in a PyTorch image on one GPU, with package gpulab.tflops mounted
from a ConfigMap, then reads the JSON result from the Pod's log. Never used in the
simulated lab: nothing there can be measured, and a simulated figure must never pass
for a measured one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components.command import check_result, pod_check
from gpulab.core import names
from gpulab.kube.results import BenchmarkResult

POD_NAME = "gpu-benchmark"
#: The ConfigMap that ships the benchmark's modules into the Pod.
CONFIG_MAP = f"{POD_NAME}-modules"
POD_NAMESPACE = names.WORKLOAD_NAMESPACE
TFLOPS_DIR = Path(__file__).resolve().parents[1] / "gpulab" / "tflops"
#: The modules of package gpulab.tflops the Pod needs (benchmark imports measure, clocks and
#: peaks; each uses only the standard library at import, tests/unit/tflops/ check it); nothing
#: else of gpulab is shipped.
MODULES = ("__init__.py", "__main__.py", "benchmark.py", "measure.py", "clocks.py", "peaks.py")


@dataclass(frozen=True)
class BenchmarkArgs:
    """Inputs: ``image`` (pinned PyTorch image), ``kubeconfig`` (secret), ``size`` (matrix
    N), ``timeout_seconds`` (image pull included), ``resource`` (the GPU resource asked for,
    one: the smoke Pod's, e.g. ``nvidia.com/gpu.shared`` under time-slicing's rename)."""

    image: str
    kubeconfig: pulumi.Input[str]
    size: int = 8192
    timeout_seconds: int = 1800
    resource: str = names.GPU_RESOURCE


def module_files() -> dict[str, str]:
    """ConfigMap data: an empty ``gpulab`` package marker plus the source of each module of
    :data:`MODULES`, keyed ``tflops.<file>`` (a ConfigMap key holds no ``/``; :func:`pod_spec`
    mounts each at ``gpulab/tflops/<file>``)."""
    data = {"__init__.py": ""}
    for name in MODULES:
        data[f"tflops.{name}"] = (TFLOPS_DIR / name).read_text()
    return data


def module_paths() -> list[dict[str, str]]:
    """The ConfigMap volume's ``items``: each key of :func:`module_files` at its package path."""
    return [{"key": "__init__.py", "path": "__init__.py"}] + [
        {"key": f"tflops.{name}", "path": f"tflops/{name}"} for name in MODULES
    ]


def pod_spec(
    image: str, size: int, config_map: pulumi.Input[str], resource: str = names.GPU_RESOURCE
) -> dict[str, object]:
    """One GPU (``resource``: 1), run once, the modules mounted as package ``gpulab.tflops``
    under /opt/gpulab."""
    return {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "tflops",
                "image": image,
                "command": ["python", "-m", "gpulab.tflops", "--json", "--size", str(size)],
                "env": [{"name": "PYTHONPATH", "value": "/opt/gpulab"}],
                "resources": {"limits": {resource: "1"}},
                "volumeMounts": [{"name": "gpulab", "mountPath": "/opt/gpulab/gpulab", "readOnly": True}],
            }
        ],
        "volumes": [{"name": "gpulab", "configMap": {"name": config_map, "items": module_paths()}}],
    }


class TflopsBenchmark(pulumi.ComponentResource):
    """The benchmark Pod and its reader (see module docstring).

    Outputs: ``result`` (gpulab.kube.results.BenchmarkResult: the document ``gpulab.tflops
    --json`` printed, ``results`` per dtype with ``tflops``, ``peak`` and ``fraction``).
    """

    def __init__(
        self,
        name: str,
        args: BenchmarkArgs,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpulab:benchmark:TflopsBenchmark", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=provider)
        cm = k8s.core.v1.ConfigMap(
            f"{name}-modules",
            metadata={
                "name": CONFIG_MAP,
                "namespace": POD_NAMESPACE,
                "labels": {"app.kubernetes.io/part-of": names.PROJECT},
            },
            data=module_files(),
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(delete_before_replace=True)),
        )
        self.pod = k8s.core.v1.Pod(
            f"{name}-pod",
            metadata={
                "name": POD_NAME,
                "namespace": POD_NAMESPACE,
                "labels": {"app.kubernetes.io/part-of": names.PROJECT, "app.kubernetes.io/name": POD_NAME},
                # Run to completion: never "Ready"; the reader waits for Succeeded.
                "annotations": {"pulumi.com/waitFor": f"jsonpath={{.metadata.namespace}}={POD_NAMESPACE}"},
            },
            spec=pod_spec(args.image, args.size, cm.metadata["name"], args.resource),
            opts=pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(delete_before_replace=True)),
        )
        self.reader = pod_check(
            f"{name}-result",
            "benchmark",
            self.pod,
            (POD_NAMESPACE, POD_NAME),
            args.kubeconfig,
            timeout_seconds=args.timeout_seconds,
            parent=self,
        )
        self.result = check_result(self.reader.stdout, BenchmarkResult)
        self.register_outputs({"result": self.result.apply(lambda r: r.to_json())})
