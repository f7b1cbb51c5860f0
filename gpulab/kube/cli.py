"""Cluster-side checks the lab runs as commands: the readiness gate, the smoke and compute checks.

Run as ``python -m gpulab.kube gate ...`` / ``python -m gpulab.kube smoke ...`` by the
components (as ``pulumi_command.local.Command`` resources, components/command.py). The kubeconfig arrives
as YAML text in the ``GPULAB_KUBECONFIG`` environment variable (a secret; never argv).
Each prints one JSON object on stdout, its record of :mod:`gpulab.kube.results` (the facts the
stack exports; ``gate`` and ``smoke`` with ``measuredAt``, UTC ISO 8601, when they were read) and
exits 0, or prints a diagnosis on stderr and exits 1.

Talks to the API server through the official ``kubernetes`` Python client.

* ``gate`` (:mod:`gpulab.kube.gate`): waits until ClusterPolicy ``cluster-policy`` reports
  ``status.state == ready``, the device-plugin DaemonSet has every desired pod ready and the
  nodes advertise the expected ``nvidia.com/gpu`` (or, under MIG ``mixed``, the
  ``nvidia.com/mig-*`` resources); fails early, with the diagnosis, when the state says
  waiting will not help (:mod:`gpulab.kube.gate_rules`).
* ``smoke``: waits for the smoke Pod's phase ``Succeeded`` (a Pod has no ``complete``
  condition, which is why the chapter's ``kubectl wait --for=condition=complete`` never
  returns), then reads its log (driver and CUDA versions parsed from the nvidia-smi
  header, the GPU UUIDs from its ``nvidia-smi -L`` lines: :mod:`gpulab.kube.smoke_gpus`) and its events.
* ``compute``: each vectorAdd container of the compute Pod (one GPU each) logs ``Test PASSED``
  (:mod:`gpulab.kube.compute`).
* ``dra-gate`` and ``smoke --dra-claim`` (``gpuStack: dra``): ResourceSlices per GPU node, and the
  smoke Pod's claim allocated, reserved and seen (:mod:`gpulab.kube.dra`).
* ``dcgm``: what the DCGM exporter reports per GPU, sampled a few seconds (:mod:`gpulab.kube.dcgm`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace

from gpulab.core.errors import GpuLabError, os_error_fix
from gpulab.core.names import (
    DEFAULT_PROFILE,
    DEVICE_PLUGIN_DS,
    GPU_RESOURCE,
    OPERATOR_NAMESPACE,
    SMOKE_POD,
    WHOLE_GPU_RESOURCES,
    WORKLOAD_NAMESPACE,
)
from gpulab.diagnose.live import Context
from gpulab.kube import (
    access,
    benchmark,
    compute,
    dcgm,
    dra,
    fleet,
    gate,
    identity,
    pod_specs,
    queues,
    simulated,
    smoke,
)
from gpulab.kube.client import KUBECONFIG_ENV, load_clients, ping
from gpulab.kube.results import CheckRecord


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``gate`` or ``smoke``; prints JSON facts, or the diagnosis and exit 1."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.kube")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gate", help="wait for the GPU Operator and read allocatable")
    g.add_argument("--namespace", default=OPERATOR_NAMESPACE)
    g.add_argument("--device-plugin-namespace", default=OPERATOR_NAMESPACE)
    g.add_argument("--device-plugin-daemonset", default=DEVICE_PLUGIN_DS)
    g.add_argument("--no-cluster-policy", action="store_true", help="skip the ClusterPolicy wait")
    g.add_argument("--timeout", type=float, default=600)
    g.add_argument("--grace", type=float, default=60, help="seconds a stuck state may last (gpuGraceSeconds)")
    g.add_argument("--mig-strategy", choices=("none", "single", "mixed"), default="none")
    g.add_argument("--expected-mig", action="append", default=[], help="mixed: PROFILE=COUNT (repeatable)")
    s = sub.add_parser("smoke", help="wait for the smoke Pod and read its log and events")
    s.add_argument("--namespace", default=WORKLOAD_NAMESPACE)
    s.add_argument("--pod", default=SMOKE_POD)
    s.add_argument("--timeout", type=float, default=300)
    s.add_argument(
        "--dra-claim", help="gpuStack dra: the Pod's resourceClaims entry whose allocation is checked"
    )
    s.add_argument(
        "--dra-driver", default="gpu.nvidia.com", help="the DRA driver whose slices name the UUIDs"
    )
    dg = sub.add_parser("dra-gate", help="gpuStack dra: the DeviceClass and a ResourceSlice per GPU node")
    dg.add_argument("--driver", default="gpu.nvidia.com")
    dg.add_argument("--device-class", default="gpu.nvidia.com")
    dg.add_argument("--timeout", type=float, default=600)
    q = sub.add_parser(
        "queues", help="queues: Kueue admits the whole quota to one Job at a time, all or nothing"
    )
    q.add_argument("--namespace", required=True, help="the LocalQueue's namespace")
    q.add_argument("--local-queue", required=True)
    q.add_argument("--cluster-queue", required=True)
    q.add_argument("--resource", required=True, help="the GPU resource of the quota")
    q.add_argument(
        "--quota", type=int, required=True, help="what the gate measured (the ClusterQueue's quota)"
    )
    q.add_argument("--image", required=True, help="the proof Jobs' image")
    q.add_argument("--timeout", type=float, default=300)
    sub.add_parser("queues-census", help="what of Kueue is left in the cluster (after its layer was removed)")
    sub.add_parser(
        "queues-sweep",
        help="after Kueue's release: delete its aggregated ClusterRoles re-created by the aggregator",
    )
    for sp in (g, s):
        sp.add_argument("--expected-gpus", type=int, help="host GPUs x time-slicing replicas")
        sp.add_argument("--host-max-cuda", help="newest CUDA the host driver supports")
        sp.add_argument("--profile", default=DEFAULT_PROFILE, help="minikube profile named in fixes")
    b = sub.add_parser("benchmark", help="wait for the TFLOPS benchmark Pod and read its result")
    b.add_argument("--namespace", default="default")
    b.add_argument("--pod", default="gpu-benchmark")
    b.add_argument("--timeout", type=float, default=1800)
    sub.add_parser(
        "ping",
        help="exit 0 when the API server answers and is ready, and is the recorded cluster, within 5 s each",
    )
    cp = sub.add_parser("compute", help="wait for the compute Pod, check its log")
    compute.add_arguments(cp)
    for sp in (s, b, cp):
        sp.add_argument(
            "--inputs",
            help="the check-inputs digest the Pod must carry (gpulab.dev/check-inputs); another is refused",
        )
    for sp in (g, s, cp):
        sp.add_argument(
            "--gpu-resource",
            choices=WHOLE_GPU_RESOURCES,
            default=GPU_RESOURCE,
            help="the whole-GPU resource counted (nvidia.com/gpu.shared: time-slicing's rename)",
        )
    dcgm.add_arguments(sub.add_parser("dcgm", help="sample the DCGM exporter's metrics per GPU"))
    fleet_args(sub.add_parser("fleet", help="every GPU node: its gate, then smoke and compute Pods on it"))
    acc = sub.add_parser(
        "access", help="the permissions the lab needs, asked first (SelfSubjectAccessReview)"
    )
    acc.add_argument("--namespace", required=True, help="the lab's namespace (labNamespace)")
    c = sub.add_parser("simulate-clusterpolicy", help="sim lab: set ClusterPolicy status")
    c.add_argument("--state", default="ready")
    args = ap.parse_args(argv)
    out: CheckRecord
    try:
        api = load_clients()
        # Every check first proves the cluster is the one the stack recorded at create.
        identity.check_identity(api, os.environ.get(KUBECONFIG_ENV, ""))
        if args.cmd == "ping":
            out = ping(api)
        elif args.cmd == "simulate-clusterpolicy":
            out = simulated.simulate_clusterpolicy(api, args.state)
        elif args.cmd == "benchmark":
            out = benchmark.benchmark(api, args.namespace, args.pod, args.timeout, inputs=args.inputs)
        elif args.cmd == "access":
            out = access.check(access.ssar(api), args.namespace)
        elif args.cmd == "fleet":
            out = fleet.run_fleet(api, fleet_spec(args))
            print(fleet.table(out.nodes or []), file=sys.stderr)
        elif args.cmd == "dcgm":
            out = dcgm.from_args(api, args)
        elif args.cmd == "compute":
            ctx = Context(
                args.expected_gpus, args.host_max_cuda, args.profile, gpu_resource=args.gpu_resource
            )
            out = compute.compute(
                api,
                args.namespace,
                args.pod,
                args.timeout,
                ctx,
                compute.isolation_from_args(args),
                args.inputs,
            )
        elif args.cmd == "queues-sweep":
            out = queues.sweep(api)
        elif args.cmd == "queues-census":
            out = queues.census(api)
        elif args.cmd == "queues":
            out = queues.prove(
                api,
                queues.ProofSpec(
                    args.namespace,
                    args.local_queue,
                    args.cluster_queue,
                    args.resource,
                    args.quota,
                    args.image,
                    args.timeout,
                ),
            )
        elif args.cmd == "dra-gate":
            out = dra.gate(api, args.driver, args.device_class, args.timeout)
        elif args.cmd == "gate":
            spec = gate.spec_from_args(args)
            out = gate.gate(api, spec, gate.context(spec, args.host_max_cuda))
        else:
            ctx = Context(
                args.expected_gpus, args.host_max_cuda, args.profile, gpu_resource=args.gpu_resource
            )
            # DRA: the claim is read while it is allocated and reserved (it is gone once the Pod is done).
            observed = (
                dra.observe_claim(api, args.namespace, args.pod, pod_specs.CLAIM_GATE, args.timeout)
                if args.dra_claim
                else None
            )
            out = smoke.smoke(api, args.namespace, args.pod, args.timeout, ctx, args.inputs)
            if observed is not None:  # which devices were allocated, and did the container see them
                out = replace(
                    out,
                    smoke_claim=dra.smoke_claim(
                        api,
                        args.namespace,
                        args.pod,
                        observed,
                        args.dra_driver,
                        args.dra_claim,
                        out.smoke_gpu_uuids,
                    ),
                )
    except GpuLabError as exc:
        # Every error the checks raise on purpose (GateError, a bad argument's) names its cause.
        print(str(exc), file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk (the client's key files), not a traceback
        print(f"{exc}\n  fix: {os_error_fix(exc)}", file=sys.stderr)
        return 1
    print(json.dumps(out.to_json(), sort_keys=True))
    return 0


def fleet_args(p: argparse.ArgumentParser) -> None:
    """The ``fleet`` subcommand's options (:class:`gpulab.kube.fleet.FleetSpec`)."""
    p.add_argument("--namespace", required=True, help="the lab's namespace (labNamespace)")
    p.add_argument("--smoke-image", required=True)
    p.add_argument("--compute-image", default=None, help="omit: no compute Pod (not tested)")
    p.add_argument("--resource", choices=WHOLE_GPU_RESOURCES, default=GPU_RESOURCE)
    p.add_argument("--runtime-class", default=None)
    p.add_argument("--parallelism", type=int, default=4)
    p.add_argument("--timeout", type=float, default=300, help="seconds each Pod may take")
    p.add_argument("--grace", type=float, default=10, help="seconds a node may take to advertise")
    p.add_argument("--pool-label", default="")
    p.add_argument("--pool-gpus", action="append", default=[], help="POOL=GPUS per node (repeatable)")
    p.add_argument("--simulated", action="store_true")
    p.add_argument("--profile", default=DEFAULT_PROFILE)
    p.add_argument(
        "--installed-in",
        default=None,
        help="the namespace of the device plugin chart the lab installed (gpuStack device-plugin): "
        "its device-plugin Pod and GFD's labels are required on every GPU node",
    )
    p.add_argument(
        "--wait", type=float, default=0, help="seconds the installed chart's Pods may take to come up"
    )


def fleet_spec(args: argparse.Namespace) -> fleet.FleetSpec:
    """The :class:`gpulab.kube.fleet.FleetSpec` of ``fleet``'s parsed options (values validated
    by config before they got here; a malformed ``--pool-gpus`` is a usage error)."""
    pools: dict[str, int] = {}
    for item in args.pool_gpus:
        pool, _, count = item.partition("=")
        if not pool or not count.isdigit():
            raise ValueError(f"--pool-gpus {item!r} is not POOL=GPUS")
        pools[pool] = int(count)
    return fleet.FleetSpec(
        namespace=args.namespace,
        smoke_image=args.smoke_image,
        compute_image=args.compute_image,
        resource=args.resource,
        runtime_class=args.runtime_class,
        parallelism=max(1, args.parallelism),
        timeout=args.timeout,
        settle=args.grace,
        pool_label=args.pool_label,
        pool_gpus=pools,
        simulated=args.simulated,
        profile=args.profile,
        installed_in=args.installed_in,
        wait=max(0.0, args.wait),
    )
