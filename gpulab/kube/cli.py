"""Cluster-side checks the lab runs as commands: the readiness gate, the smoke and compute checks.

Run as ``python -m gpulab.kube gate ...`` / ``python -m gpulab.kube smoke ...`` by the
components (as ``pulumi_command.local.Command`` resources, components/command.py). The kubeconfig arrives
as YAML text in the ``GPULAB_KUBECONFIG`` environment variable (a secret; never argv).
Each prints one JSON object on stdout, its record of :mod:`gpulab.kube.results` (the facts the
stack exports; ``gate`` and ``smoke`` with ``measuredAt``, UTC ISO 8601, when they were read) and
exits 0, or prints a diagnosis on stderr and exits 1.

Talks to the API server through the official ``kubernetes`` Python client. The subcommands are
one table, :data:`SUBCOMMANDS` (name → help, options, what it runs); :func:`main` parses, proves
the cluster's identity and runs the chosen one.

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
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

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
from gpulab.kube.results import (
    CheckRecord,
    ComputeResult,
    FleetResult,
    GateResult,
    QueueProofResult,
    SmokeResult,
)


@dataclass(frozen=True)
class Subcommand:
    """One ``python -m gpulab.kube`` subcommand: its ``help`` line, ``options`` (adds its options
    to its parser) and ``run`` (``run(api, args)``: the kubernetes ``ApiClient`` of
    :func:`gpulab.kube.client.load_clients` and the parsed options → its record, whose
    :meth:`~gpulab.kube.results.CheckRecord.to_json` it prints;
    a failed check raises :class:`gpulab.core.errors.GpuLabError`, which names its cause)."""

    help: str
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Any, argparse.Namespace], CheckRecord]


def main(argv: list[str] | None = None) -> int:
    """CLI entry: one of :data:`SUBCOMMANDS` (``argv``: its name and options; default
    ``sys.argv[1:]``); prints its JSON facts on stdout and returns 0, or prints the diagnosis on
    stderr and returns 1 (argparse exits 2 on a usage error)."""
    args = parser().parse_args(argv)
    try:
        api = load_clients()
        # Every check first proves the cluster is the one the stack recorded at create.
        identity.check_identity(api, os.environ.get(KUBECONFIG_ENV, ""))
        out = SUBCOMMANDS[args.cmd].run(api, args)
    except GpuLabError as exc:
        # Every error the checks raise on purpose (GateError, a bad argument's) names its cause.
        print(str(exc), file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk (the client's key files), not a traceback
        print(f"{exc}\n  fix: {os_error_fix(exc)}", file=sys.stderr)
        return 1
    print(json.dumps(out.to_json(), sort_keys=True))
    return 0


def parser() -> argparse.ArgumentParser:
    """The ``python -m gpulab.kube`` parser: one subparser per entry of :data:`SUBCOMMANDS`, in
    its order; the chosen one's name is ``args.cmd``."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.kube")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, command in SUBCOMMANDS.items():
        command.options(sub.add_parser(name, help=command.help))
    return ap


def _host_options(p: argparse.ArgumentParser) -> None:
    """What ``gate`` and ``smoke`` name in a diagnosis: the expected GPUs, the host's CUDA, the profile."""
    p.add_argument("--expected-gpus", type=int, help="host GPUs x time-slicing replicas")
    p.add_argument("--host-max-cuda", help="newest CUDA the host driver supports")
    p.add_argument("--profile", default=DEFAULT_PROFILE, help="minikube profile named in fixes")
    _node_command_option(p)


def _node_command_option(p: argparse.ArgumentParser) -> None:
    """``--node-command``: how a fix runs a command on the GPU node (the variant's template)."""
    p.add_argument(
        "--node-command",
        default=None,
        metavar="TEMPLATE",
        help="how a fix runs {cmd} on the GPU node (default: the minikube node of --profile)",
    )


def _inputs_option(p: argparse.ArgumentParser) -> None:
    """``--inputs``: the check-inputs digest a Pod must carry (``smoke``, ``benchmark``, ``compute``)."""
    p.add_argument(
        "--inputs",
        help="the check-inputs digest the Pod must carry (gpulab.dev/check-inputs); another is refused",
    )


def _gpu_resource_option(p: argparse.ArgumentParser) -> None:
    """``--gpu-resource``: the whole-GPU resource counted (``gate``, ``smoke``, ``compute``)."""
    p.add_argument(
        "--gpu-resource",
        choices=WHOLE_GPU_RESOURCES,
        default=GPU_RESOURCE,
        help="the whole-GPU resource counted (nvidia.com/gpu.shared: time-slicing's rename)",
    )


def _no_options(p: argparse.ArgumentParser) -> None:
    """A subcommand without options."""


def _gate_options(g: argparse.ArgumentParser) -> None:
    g.add_argument("--namespace", default=OPERATOR_NAMESPACE)
    g.add_argument("--device-plugin-namespace", default=OPERATOR_NAMESPACE)
    g.add_argument("--device-plugin-daemonset", default=DEVICE_PLUGIN_DS)
    g.add_argument("--no-cluster-policy", action="store_true", help="skip the ClusterPolicy wait")
    g.add_argument("--timeout", type=float, default=600)
    g.add_argument("--grace", type=float, default=60, help="seconds a stuck state may last (gpuGraceSeconds)")
    g.add_argument("--mig-strategy", choices=("none", "single", "mixed"), default="none")
    g.add_argument("--expected-mig", action="append", default=[], help="mixed: PROFILE=COUNT (repeatable)")
    g.add_argument(
        "--simulate-clusterpolicy",
        metavar="STATE",
        help="simulated lab only: first write ClusterPolicy status.state STATE (no operator runs there)",
    )
    _host_options(g)
    _gpu_resource_option(g)


def _gate(api: Any, args: argparse.Namespace) -> GateResult:
    spec = gate.spec_from_args(args)
    if args.simulate_clusterpolicy:
        simulated.simulate_clusterpolicy(api, args.simulate_clusterpolicy, args.timeout)
    return gate.gate(api, spec, gate.context(spec, args.host_max_cuda))


def _smoke_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--namespace", default=WORKLOAD_NAMESPACE)
    s.add_argument("--pod", default=SMOKE_POD)
    s.add_argument("--timeout", type=float, default=300)
    s.add_argument(
        "--dra-claim", help="gpuStack dra: the Pod's resourceClaims entry whose allocation is checked"
    )
    s.add_argument(
        "--dra-driver", default="gpu.nvidia.com", help="the DRA driver whose slices name the UUIDs"
    )
    _host_options(s)
    _inputs_option(s)
    _gpu_resource_option(s)


def _pod_context(args: argparse.Namespace) -> Context:
    """The diagnosis' context of a Pod check (``smoke``, ``compute``): what its options name."""
    return Context(
        args.expected_gpus,
        args.host_max_cuda,
        args.profile,
        gpu_resource=args.gpu_resource,
        node_command=args.node_command,
    )


def _smoke(api: Any, args: argparse.Namespace) -> SmokeResult:
    ctx = _pod_context(args)
    # DRA: the claim is read while it is allocated and reserved (it is gone once the Pod is done).
    observed = (
        dra.observe_claim(api, args.namespace, args.pod, pod_specs.CLAIM_GATE, args.timeout)
        if args.dra_claim
        else None
    )
    out = smoke.smoke(api, args.namespace, args.pod, args.timeout, ctx, args.inputs)
    if observed is not None:  # which devices were allocated, and did the container see them
        claim = dra.smoke_claim(
            api, args.namespace, args.pod, observed, args.dra_driver, args.dra_claim, out.smoke_gpu_uuids
        )
        out = replace(out, smoke_claim=claim)
    return out


def _dra_gate_options(dg: argparse.ArgumentParser) -> None:
    dg.add_argument("--driver", default="gpu.nvidia.com")
    dg.add_argument("--device-class", default="gpu.nvidia.com")
    dg.add_argument("--timeout", type=float, default=600)


def _queues_options(q: argparse.ArgumentParser) -> None:
    q.add_argument("--namespace", required=True, help="the LocalQueue's namespace")
    q.add_argument("--local-queue", required=True)
    q.add_argument("--cluster-queue", required=True)
    q.add_argument("--resource", required=True, help="the GPU resource of the quota")
    q.add_argument(
        "--quota", type=int, required=True, help="what the gate measured (the ClusterQueue's quota)"
    )
    q.add_argument("--image", required=True, help="the proof Jobs' image")
    q.add_argument("--timeout", type=float, default=300)


def _queues(api: Any, args: argparse.Namespace) -> QueueProofResult:
    return queues.prove(
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


def _benchmark_options(b: argparse.ArgumentParser) -> None:
    b.add_argument("--namespace", default="default")
    b.add_argument("--pod", default="gpu-benchmark")
    b.add_argument("--timeout", type=float, default=1800)
    _inputs_option(b)


def _compute_options(cp: argparse.ArgumentParser) -> None:
    compute.add_arguments(cp)
    _inputs_option(cp)
    _gpu_resource_option(cp)
    _node_command_option(cp)


def _compute(api: Any, args: argparse.Namespace) -> ComputeResult:
    ctx = _pod_context(args)
    return compute.compute(
        api, args.namespace, args.pod, args.timeout, ctx, compute.isolation_from_args(args), args.inputs
    )


def _fleet(api: Any, args: argparse.Namespace) -> FleetResult:
    out = fleet.run_fleet(api, fleet_spec(args))
    print(fleet.table(out.nodes or []), file=sys.stderr)
    return out


def _access_options(acc: argparse.ArgumentParser) -> None:
    acc.add_argument("--namespace", required=True, help="the lab's namespace (labNamespace)")


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
    _node_command_option(p)
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
        node_command=args.node_command,
        installed_in=args.installed_in,
        wait=max(0.0, args.wait),
    )


#: Every subcommand by name, in ``--help``'s order.
SUBCOMMANDS: Final[dict[str, Subcommand]] = {
    "gate": Subcommand("wait for the GPU Operator and read allocatable", _gate_options, _gate),
    "smoke": Subcommand("wait for the smoke Pod and read its log and events", _smoke_options, _smoke),
    "dra-gate": Subcommand(
        "gpuStack dra: the DeviceClass and a ResourceSlice per GPU node",
        _dra_gate_options,
        lambda api, args: dra.gate(api, args.driver, args.device_class, args.timeout),
    ),
    "queues": Subcommand(
        "queues: Kueue admits the whole quota to one Job at a time, all or nothing", _queues_options, _queues
    ),
    "queues-census": Subcommand(
        "what of Kueue is left in the cluster (after its layer was removed)",
        _no_options,
        lambda api, args: queues.census(api),
    ),
    "queues-sweep": Subcommand(
        "after Kueue's release: delete its aggregated ClusterRoles re-created by the aggregator",
        _no_options,
        lambda api, args: queues.sweep(api),
    ),
    "benchmark": Subcommand(
        "wait for the TFLOPS benchmark Pod and read its result",
        _benchmark_options,
        lambda api, args: benchmark.benchmark(
            api, args.namespace, args.pod, args.timeout, inputs=args.inputs
        ),
    ),
    "ping": Subcommand(
        "exit 0 when the API server answers and is ready, and is the recorded cluster, within 5 s each",
        _no_options,
        lambda api, args: ping(api),
    ),
    "compute": Subcommand("wait for the compute Pod, check its log", _compute_options, _compute),
    "dcgm": Subcommand(
        "sample the DCGM exporter's metrics per GPU",
        dcgm.add_arguments,
        lambda api, args: dcgm.from_args(api, args),
    ),
    "fleet": Subcommand("every GPU node: its gate, then smoke and compute Pods on it", fleet_args, _fleet),
    "access": Subcommand(
        "the permissions the lab needs, asked first (SelfSubjectAccessReview)",
        _access_options,
        lambda api, args: access.check(access.ssar(api), args.namespace),
    ),
}
