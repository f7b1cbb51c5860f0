"""Runs the real ``__main__.py`` under Pulumi mocks, one fresh run per call.

Records every RegisterResource request (type, name, inputs, options such as
``deleteBeforeReplace``, dependencies, parent, provider) and the stack outputs, so tests
can assert what is created, in what order, with which arguments.
"""

from __future__ import annotations

import json
import runpy
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import rpc

from gpulab.core import shutdown
from gpulab.core.argv import decode
from gpulab.kube import takeover
from program import edge
from variants.registry import step_of

ROOT = Path(__file__).resolve().parents[2]
#: The minikube lab on the shipped H200 capture (no GPU needed).
MINIKUBE: dict[str, Any] = {"cluster": "minikube", "hostProbe": "capture"}
COMMAND = "command:local:Command"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"
#: The ``measuredAt`` each fake helper prints.
GATE_AT, SMOKE_AT, TFLOPS_AT = (
    "2026-12-01T09:00:10+00:00",
    "2026-12-01T09:00:20+00:00",
    "2026-12-01T09:00:30+00:00",
)
COMPUTE_AT = "2026-12-01T09:00:25+00:00"
DCGM_AT = "2026-12-01T09:00:32+00:00"


@dataclass
class Registration:
    typ: str
    name: str
    urn: str
    inputs: dict[str, Any]
    parent: str
    dependencies: list[str]
    delete_before_replace: bool
    provider: str
    secret_outputs: list[str]

    @property
    def step(self) -> str | None:
        """A Command's step (gpulab.core.argv.STEPS), from its create argv."""
        return step_of(self.inputs.get("create"))

    def argv(self, key: str = "create") -> list[str]:
        """A Command's create (or delete) argv, decoded."""
        return decode(self.inputs[key])


@dataclass
class Run:
    registrations: list[Registration] = field(default_factory=list)
    #: exported values that were known (a preview leaves computed ones out)
    outputs: dict[str, Any] = field(default_factory=dict)
    #: every key passed to pulumi.export
    exported: list[str] = field(default_factory=list)
    error: BaseException | None = None
    #: The program had made SIGINT end it quietly (program.edge.stop_quietly_on_interrupt).
    sigint_quiet: bool = False
    #: The program had asked to skip the last garbage collections at its exit
    #: (gpulab.core.shutdown.skip_final_collection), before anything could fail.
    final_collection_skipped: bool = False

    def by_name(self, name: str) -> Registration:
        for r in self.registrations:
            if r.name == name:
                return r
        raise AssertionError(f"no resource named {name!r}; have {[r.name for r in self.registrations]}")

    def names(self) -> list[str]:
        return [r.name for r in self.registrations]

    def urn_of(self, name: str) -> str:
        return self.by_name(name).urn


#: What ``python -m gpulab.kube.identity record`` prints (gpulab.identity.Identity.to_json).
IDENTITY = {
    "server": "https://127.0.0.1:6443",
    "caSha256": "ab" * 32,
    "kubeSystemUid": "0b6f8d6e-2b1c-4d6e-9a53-2f4e3c1b7a90",
    "createdAt": "2026-12-01T00:00:00+00:00",
}


def fake_stdout(purpose: str, gpus: int = 1) -> str:
    """What each helper command prints on success (shapes as in gpulab.kube etc.)."""
    if purpose in ("minikube-start", "sim-cluster"):
        return json.dumps(
            {"kubeconfig": KUBECONFIG, "kubernetesVersion": "v1.36.3", "node": "gpu-sim-node", "gpus": gpus}
        )
    if purpose == "cluster-identity":
        return json.dumps(IDENTITY)
    if purpose == "operator-gate":
        return json.dumps(
            {
                "allocatableGpus": gpus,
                "capacityGpus": gpus,
                "clusterPolicyState": "ready",
                "devicePluginPods": [{"name": "p", "phase": "Running", "ready": True, "restarts": 0}],
                "kubernetesVersion": "v1.36.3",
                "measuredAt": GATE_AT,
            }
        )
    if purpose == "smoke-check":
        return json.dumps(
            {
                "smokePhase": "Succeeded",
                "smokeDriverVersion": "580.159.04",
                "smokeCudaVersion": "13.0",
                "smokeEvents": ["Scheduled", "Pulled"],
                "smokeNode": "n1",
                "measuredAt": SMOKE_AT,
            }
        )
    if purpose == "compute-check":
        return json.dumps(
            {
                "computePhase": "Succeeded",
                "computeResult": "passed",
                "computeGpus": gpus,
                "computeNode": "n1",
                "computeLogSimulated": False,
                "measuredAt": COMPUTE_AT,
            }
        )
    if purpose == "dcgm-scrape":
        gpu = {"gpu": "0", "modelName": "NVIDIA H200", "pciBusId": "00000000:00:06.0", "hostname": "n1"}
        reading = {"driverVersion": "580.159.04", "utilPercent": 7.0, "fbUsedMiB": 493.0, "powerW": 143.8}
        metrics = {
            "endpoint": "gpu-operator/nvidia-dcgm-exporter:9400/metrics (API server service proxy)",
            "scrapes": 6,
            "seconds": 10.0,
            "statistic": "max",
            "gpus": {"GPU-00000000-0000-4000-8000-000000000000": {**gpu, **reading, "tempC": 39.0}},
            "hostnames": ["n1"],
            "error": None,
        }
        return json.dumps({"dcgmMetrics": metrics, "measuredAt": DCGM_AT})
    if purpose == "benchmark-result":
        results = {"bf16": {"tflops": 578.7}, "fp32": {"tflops": 51.3}}
        return json.dumps({"gpu": "NVIDIA H200", "results": results, "measuredAt": TFLOPS_AT})
    return "{}"


class _Mocks(pulumi.runtime.Mocks):
    def __init__(self, preview: bool) -> None:
        self.preview = preview
        #: Containers of the compute Pod: its check reports that many passed.
        self.compute_containers = 1

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        outs = dict(args.inputs)
        if self.preview:
            # A preview knows inputs only: computed outputs stay unknown.
            return "", outs
        if args.typ == COMMAND:
            step = step_of(args.inputs.get("create")) or ""
            outs["stdout"] = fake_stdout(step, self.compute_containers if step == "compute-check" else 1)
        elif args.typ == "kubernetes:helm.sh/v3:Release":
            outs["status"] = {"revision": 1, "status": "deployed"}
        elif args.typ == "kubernetes:core/v1:Pod":
            outs["metadata"] = {**outs.get("metadata", {}), "uid": "uid-1"}
            if outs["metadata"].get("name") == "gpu-compute":
                self.compute_containers = len((outs.get("spec") or {}).get("containers") or [])
        return f"{args.name}-id", outs

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        return {}


class _Monitor(pmocks.MockMonitor):
    def __init__(self, mocks: _Mocks, run: Run) -> None:
        super().__init__(mocks)
        self.run = run

    def RegisterResource(self, request: Any) -> Any:
        resp = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.run.registrations.append(
                Registration(
                    typ=request.type,
                    name=request.name,
                    urn=resp.urn,
                    inputs=rpc.deserialize_properties(request.object),
                    parent=request.parent,
                    dependencies=list(request.dependencies),
                    delete_before_replace=request.deleteBeforeReplace,
                    provider=request.provider,
                    secret_outputs=list(request.additionalSecretOutputs),
                )
            )
        return resp


def run_program(config: dict[str, Any], preview: bool = False, cluster: dict[str, Any] | None = None) -> Run:
    """Run ``__main__.py`` with ``config`` (keys without the ``gpu-lab:`` prefix).

    ``cluster``: what a cluster the lab does not own holds under the names the lab would create,
    by ``Planned.ref`` (``{"Namespace/gpu-operator": {...}}``, a release's Helm Secrets as a
    list), as preflight's read of it (gpulab.kube.takeover.read) returns it; default: nothing."""
    objects = cluster or {}
    real_read = takeover.read
    takeover.read = lambda api, p: objects.get(p.ref)  # type: ignore[assignment]
    try:
        return _run_program(config, preview)
    finally:
        takeover.read = real_read  # type: ignore[assignment]


def _run_program(config: dict[str, Any], preview: bool) -> Run:
    run = Run()
    mocks = _Mocks(preview)
    pulumi.runtime.set_mocks(
        mocks, project="gpu-lab", stack="test", preview=preview, monitor=_Monitor(mocks, run)
    )
    pulumi.runtime.set_all_config({f"gpu-lab:{k}": str(v) for k, v in config.items()}, [])

    def export(name: str, value: Any) -> None:
        run.exported.append(name)
        pulumi.Output.from_input(value).apply(lambda v: run.outputs.__setitem__(name, v))

    @pulumi.runtime.test  # type: ignore[misc]
    def body() -> None:
        real_export = pulumi.export
        pulumi.export = export
        # The program makes SIGINT end its process (program.edge.stop_quietly_on_interrupt):
        # asserted here, then pytest's own handler is put back.
        sigint = signal.getsignal(signal.SIGINT)
        # Recorded, not done: the test process' own exit is not the program's.
        real_skip = shutdown.skip_final_collection
        shutdown.skip_final_collection = lambda: setattr(run, "final_collection_skipped", True)
        try:
            runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
        except BaseException as exc:  # recorded for the test to assert on
            # The program re-raises its own errors as RunError (no traceback): keep the cause.
            run.error = exc.__cause__ if isinstance(exc, pulumi.RunError) and exc.__cause__ else exc
        finally:
            pulumi.export = real_export
            shutdown.skip_final_collection = real_skip
            run.sigint_quiet = signal.getsignal(signal.SIGINT) is edge._stop_quietly
            signal.signal(signal.SIGINT, sigint)

    body()
    return run


def sim(chart: str, **extra: Any) -> dict[str, Any]:
    """The sim lab's config on ``chart`` (the ``chart`` fixture), plus ``extra`` keys."""
    return {"cluster": "sim", "chartPath": chart, **extra}
