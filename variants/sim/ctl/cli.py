"""CLI of the simulated cluster: ``python -m variants.sim.ctl up|down|status``.

The flags, the JSON printed and the exit codes are described in :mod:`variants.sim.ctl`.
Every diagnostic goes to stderr; stdout carries only the JSON result.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from gpulab.config.mig import STRATEGIES, parse_devices
from gpulab.core.errors import GpuLabError, os_error_fix
from variants.sim.ctl import queues, supervise
from variants.sim.ctl.cluster import Interrupted, UpOptions, down, status, up
from variants.sim.ctl.fleet import parse_node_specs
from variants.sim.ctl.render import (
    CAPTURES,
    DEFAULT_LOG_NAMESPACES,
    DEFAULT_LOG_PODS,
    DEFAULT_NODE_NAME,
    MAX_NODES,
)


def _common(sp: argparse.ArgumentParser) -> None:
    """The flags every command takes: the cluster's name, its work dir, the sim binaries."""
    sp.add_argument("--name", required=True, help="cluster name (a DNS label)")
    sp.add_argument(
        "--workdir",
        required=True,
        type=Path,
        help="directory holding everything of the cluster",
    )
    sp.add_argument(
        "--bin-dir",
        type=Path,
        default=None,
        help="sim binaries (default: $GPULAB_SIM_BIN_DIR, else the dir of kwokctl on "
        "PATH, else the toolchain cache)",
    )


#: ``up``'s own flags, in the order ``--help`` lists them: (flag, argparse's keywords).
_UP_FLAGS: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    (
        "--gpus",
        {
            "type": int,
            "default": 1,
            "help": f"GPUs of the node: one of {sorted(CAPTURES)} (a capture for each), or 0 (no "
            "nvidia.com/gpu at all), or 0..8 with --capture",
        },
    ),
    ("--replicas", {"type": int, "default": 1, "help": "time-slicing replicas of nvidia.com/gpu"}),
    (
        "--rename",
        {"action": "store_true", "help": "time-slicing's renameByDefault: advertise nvidia.com/gpu.shared"},
    ),
    ("--mig", {"default": "", "help": "MIG devices of the GPUs, PROFILE=COUNT,... (e.g. 1g.18gb=7)"}),
    ("--mig-strategy", {"choices": STRATEGIES, "default": "none", "help": "what --mig advertises"}),
    ("--capture", {"default": None, "help": "nvidia-smi capture served as the log (gpulab/host/captures)"}),
    (
        "--smoke-gpus",
        {"type": int, "default": None, "help": "GPUs the smoke Pod is given (its log lists them)"},
    ),
    ("--node-name", {"default": DEFAULT_NODE_NAME, "help": "name of the (first) node"}),
    (
        "--nodes",
        {
            "type": int,
            "default": 1,
            "help": f"simulated GPU nodes, 1..{MAX_NODES}; named NODE_NAME, NODE_NAME-2, ... (each --gpus)",
        },
    ),
    (
        "--node-spec",
        {
            "action": "append",
            "default": None,
            "help": "a fleet node NAME=GPUS[/ADVERTISED] (repeatable; replaces --nodes): GFD's labels say "
            "GPUS, the node advertises ADVERTISED (default GPUS)",
        },
    ),
    (
        "--preinstalled",
        {
            "action": "store_true",
            "help": "the GPU stack found installed: a simulated device-plugin DaemonSet of somebody else's "
            "install",
        },
    ),
    (
        "--dra",
        {
            "action": "store_true",
            "help": "gpuStack dra: no nvidia.com/gpu; each node gets the ResourceSlice NVIDIA's DRA kubelet "
            "plugin would publish",
        },
    ),
    (
        "--log-namespace",
        {
            "action": "append",
            "default": None,
            "help": "namespace of Pods whose logs serve the capture (repeatable; default: default)",
        },
    ),
    (
        "--log-pod",
        {
            "action": "append",
            "default": None,
            "help": "name of Pods whose logs serve the capture (repeatable; default: gpu-smoke)",
        },
    ),
    ("--timeout", {"type": float, "default": 300.0, "help": "seconds to wait for the cluster"}),
    (
        "--apiserver-advertise-address",
        {"default": None, "help": "only for hosts without a default route: an IP the API server advertises"},
    ),
)

#: ``queues-up``'s own flags: (flag, argparse's keywords).
_QUEUES_UP_FLAGS: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    (
        "--timeout",
        {"type": float, "default": 180.0, "help": "seconds until the API server reaches its webhook"},
    ),
    (
        "--apiserver-advertise-address",
        {
            "default": None,
            "help": "only for hosts without a default route: the address the controller's webhook listens on",
        },
    ),
)

#: Each command in ``--help``'s order: (name, help, its own flags beyond :func:`_common`'s).
_COMMANDS: Final[tuple[tuple[str, str, tuple[tuple[str, dict[str, Any]], ...]], ...]] = (
    ("up", "create the cluster (or reuse it) and print its JSON", _UP_FLAGS),
    ("down", "stop the cluster and remove the work dir", ()),
    ("queues-up", "start Kueue's controller as a process of the cluster (queues)", _QUEUES_UP_FLAGS),
    ("queues-down", "stop Kueue's controller and remove its EndpointSlice", ()),
    ("status", "print whether the cluster is running", ()),
    (
        "supervise",
        "(started by up) take the lab down when a component dies",
        (("--watch", {"type": Path, "required": True, "help": "the cluster's kwokctl directory"}),),
    ),
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m variants.sim.ctl",
        description="Simulated GPU cluster: a real Kubernetes control plane and one kwok GPU node.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_text, flags in _COMMANDS:
        sp = sub.add_parser(name, help=help_text)
        _common(sp)
        for flag, keywords in flags:
            sp.add_argument(flag, **keywords)
    return p


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(text, file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 ok, 1 failure, 2 usage)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "up":
            try:
                opts = UpOptions(
                    name=args.name,
                    workdir=args.workdir,
                    gpus=args.gpus,
                    bin_dir=args.bin_dir,
                    node_name=args.node_name,
                    nodes=args.nodes,
                    log_namespaces=tuple(args.log_namespace or DEFAULT_LOG_NAMESPACES),
                    log_pods=tuple(args.log_pod or DEFAULT_LOG_PODS),
                    timeout=args.timeout,
                    apiserver_advertise_address=args.apiserver_advertise_address,
                    replicas=args.replicas,
                    mig=tuple(sorted(parse_devices(args.mig).items())),
                    mig_strategy=args.mig_strategy,
                    capture=args.capture,
                    rename=args.rename,
                    smoke_gpus=args.smoke_gpus,
                    fleet=parse_node_specs(args.node_spec or []),
                    preinstalled=args.preinstalled,
                    dra=args.dra,
                )
            except ValueError as e:
                print(f"simcluster: {e}", file=sys.stderr)
                return 2
            result = up(opts)
        elif args.command == "down":
            result = down(args.name, args.workdir, args.bin_dir)
        elif args.command == "queues-up":
            result = queues.up(
                args.name, args.workdir, args.bin_dir, args.apiserver_advertise_address, args.timeout
            )
        elif args.command == "queues-down":
            result = queues.down(args.name, args.workdir, args.bin_dir)
        elif args.command == "supervise":
            return supervise.run(args.workdir.expanduser().absolute(), args.watch.expanduser().absolute())
        else:
            result = status(args.name, args.workdir, args.bin_dir)
    except ValueError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        _say(f"simcluster: {e}")
        return 130
    except GpuLabError as e:  # SimClusterError, or a command that could not run
        _say(f"simcluster: error: {e}")
        return 1
    except OSError as e:  # a full disk, a read-only directory: the cause, not a traceback
        _say(f"simcluster: error: {e}\n  fix: {os_error_fix(e)}")
        return 1
    print(json.dumps(result))
    return 0
