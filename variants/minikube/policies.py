"""minikube's policies: the ``minikube start`` its ``minikube-start`` step runs, read as argv.

Each policy is a :class:`gpulab.config.variant.CommandPolicy` that the record names
(``VariantSpec.policies``); the policy pack (policy/validators/variant_policies.py) runs it on
every ``command:local:Command`` whose step is ``minikube-start``. ``minikube-start-gpu``: GPUs,
the docker driver and the docker runtime; ``minikube-start-resources``: enough CPUs and
memory. A command whose flags cannot be read is "not evaluated", never a pass.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from gpulab.config.variant import CommandPolicy
from gpulab.core import fixes
from gpulab.core.argv import command_argv
from gpulab.core.findings import Finding, Status
from gpulab.core.names import MIN_CPUS, MIN_MEMORY_MIB

#: The step whose command these policies read (the record's ``steps`` and ``direct_steps``).
START_STEP: Final = "minikube-start"
#: The step that turns minikube's ``nvidia-device-plugin`` addon on or off.
ADDON_STEP: Final = "minikube-addon"
#: The helper's module and subcommand that start minikube (variants/minikube/ctl.py).
_CTL_UP: Final = ["-m", "variants.minikube.ctl", "up"]


def cli_flags(argv: Sequence[str]) -> dict[str, str]:
    """``--k=v``, ``--k v`` and bare ``--k`` (``"true"``) of an argv; ``-p X`` as ``profile``."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if tok.startswith("--"):
            key, eq, val = tok[2:].partition("=")
            if eq:
                flags[key] = val
            elif nxt is not None and not nxt.startswith("-"):
                flags[key] = nxt
                i += 1
            else:
                flags[key] = "true"
        elif tok == "-p" and nxt is not None:
            flags["profile"] = nxt
            i += 1
        i += 1
    return flags


def minikube_start_argv(create: Sequence[str] | str) -> list[str] | None:
    """The ``minikube start`` argv a ``minikube-start`` command runs, or None if unreadable.

    ``python -m variants.minikube.ctl up --profile P --cpus N ...`` is expanded through
    :func:`variants.minikube.ctl.start_argv` (what it really runs); a direct ``minikube start
    ...`` argv is taken as is. ``create`` is the Command's JSON-encoded create (or an argv).
    """
    # Here, not at the top: the package imports this module, and `python -m variants.minikube.ctl`
    # would otherwise run the helper twice.
    from variants.minikube import ctl as minikube_ctl

    args = command_argv(create)
    if args is None:
        return None
    if len(args) > 3 and args[1:4] == _CTL_UP:
        flags = cli_flags(args[args.index("up") + 1 :])
        try:
            spec = minikube_ctl.StartSpec(
                profile=flags["profile"],
                cpus=int(flags["cpus"]),
                memory_mib=int(flags["memory-mib"]),
                kubernetes_version=flags["kubernetes-version"],
                gpus=flags.get("gpus", minikube_ctl.StartSpec.gpus),
            )
        except (KeyError, ValueError):
            return None
        return minikube_ctl.start_argv(spec)
    for i, tok in enumerate(args[:-1]):
        if os.path.basename(tok) == "minikube" and args[i + 1] == "start":
            return args[i:]
    return None


_MEMORY: Final = re.compile(r"^(\d+(?:\.\d+)?)\s*([a-z]*)$", re.IGNORECASE)
# minikube reads --memory with Docker's RAMInBytes: binary units, a bare number is MB.
_MIB_PER_UNIT: Final = {
    "": 1.0,
    "b": 1 / (1024 * 1024),
    **{u: 1 / 1024 for u in ("k", "kb", "ki", "kib")},
    **{u: 1.0 for u in ("m", "mb", "mi", "mib")},
    **{u: 1024.0 for u in ("g", "gb", "gi", "gib")},
    **{u: 1024.0 * 1024 for u in ("t", "tb", "ti", "tib")},
}


def memory_mib(text: str) -> float | None:
    """minikube's ``--memory`` value in MiB (``8192mb``, ``8g``, ``8192``); None if unreadable."""
    m = _MEMORY.match(text.strip())
    if not m or m.group(2).lower() not in _MIB_PER_UNIT:
        return None
    return float(m.group(1)) * _MIB_PER_UNIT[m.group(2).lower()]


def _judged(item: str, ok: bool, observed: str, expected: str, fix: str) -> list[Finding]:
    return [Finding(item, Status.PASS if ok else Status.FAIL, observed, expected, fix)]


def _unread(item: str, create: object, expected: str, fix: str) -> list[Finding]:
    return [
        Finding(item, Status.NOT_EVALUATED, f"cannot read minikube start flags from {create}", expected, fix)
    ]


#: The first fix (表 2: minikube start hangs or reports a GPU error).
FIX_MINIKUBE_GPU: Final = fixes.cite(
    f"redo the host's Docker GPU setup: {fixes.docker_gpus()}", fixes.MINIKUBE_START
)
_GPUS_DEFAULT: Final = ["all", "nvidia", "nvidia.com"]


def check_minikube_gpu(create: Sequence[str] | str, cfg: Mapping[str, Any]) -> list[Finding]:
    """``minikube-start-gpu``: ``--gpus`` one of ``cfg["gpus"]``, ``--driver=docker`` and
    ``--container-runtime=docker``."""
    item = "minikube-start-gpu"
    gpus_allowed = [str(g) for g in (cfg.get("gpus") or _GPUS_DEFAULT)]
    expected = f"--gpus in {gpus_allowed}, --driver=docker, --container-runtime=docker"
    argv = minikube_start_argv(create)
    if argv is None:
        return _unread(item, create, expected, FIX_MINIKUBE_GPU)
    flags = cli_flags(argv[2:])
    observed = ", ".join(f"--{k}={flags.get(k, '<absent>')}" for k in ("gpus", "driver", "container-runtime"))
    ok = (
        flags.get("gpus") in gpus_allowed
        and flags.get("driver") == "docker"
        and flags.get("container-runtime") == "docker"
    )
    return _judged(item, ok, observed, expected, FIX_MINIKUBE_GPU)


def check_minikube_resources(create: Sequence[str] | str, cfg: Mapping[str, Any]) -> list[Finding]:
    """``minikube-start-resources``: ``--cpus`` >= ``cfg["minCpus"]`` and ``--memory`` >=
    ``cfg["minMemoryMiB"]`` MiB (``max`` and ``no-limit`` pass)."""
    item = "minikube-start-resources"
    min_cpus = int(cfg.get("minCpus", MIN_CPUS))
    min_mib = int(cfg.get("minMemoryMiB", MIN_MEMORY_MIB))
    expected = f"--cpus >= {min_cpus} and --memory >= {min_mib} MiB"
    fix = fixes.cite(
        f"give the node {fixes.minimum(min_cpus, min_mib)}: {fixes.set_resources(min_cpus, min_mib)}; "
        "kubectl describe pod shows who is blocked",
        fixes.OPERATOR_PENDING,
    )
    argv = minikube_start_argv(create)
    if argv is None:
        return _unread(item, create, expected, fix)
    flags = cli_flags(argv[2:])
    cpus_text, mem_text = flags.get("cpus"), flags.get("memory")
    observed = (
        f"--cpus={cpus_text or '<absent: minikube default 2>'}, "
        f"--memory={mem_text or '<absent: minikube default>'}"
    )
    unlimited = ("max", "no-limit")
    cpus_ok = cpus_text in unlimited or (
        cpus_text is not None and cpus_text.isdigit() and int(cpus_text) >= min_cpus
    )
    mib = memory_mib(mem_text) if mem_text and mem_text not in unlimited else None
    mem_ok = mem_text in unlimited or (mib is not None and mib >= min_mib)
    return _judged(item, cpus_ok and mem_ok, observed, expected, fix)


_STR: Final = {"type": "string"}


def _int(minimum: int, default: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "default": default}


#: The record's policies, in pack order.
POLICIES: Final = (
    CommandPolicy(
        "minikube-start-gpu",
        "Start minikube with --gpus, the docker driver and the docker container runtime.",
        START_STEP,
        check_minikube_gpu,
        {"gpus": {"type": "array", "items": _STR, "default": _GPUS_DEFAULT}},
    ),
    CommandPolicy(
        "minikube-start-resources",
        f"Give the minikube node at least {MIN_CPUS} CPUs and {MIN_MEMORY_MIB // 1024} GiB of memory.",
        START_STEP,
        check_minikube_resources,
        {"minCpus": _int(1, MIN_CPUS), "minMemoryMiB": _int(1, MIN_MEMORY_MIB)},
    ),
)


def device_plugin_addon(steps: Mapping[str, Sequence[str] | str]) -> tuple[bool, str] | None:
    """``VariantSpec.device_plugin_addon``: whether minikube's own ``nvidia-device-plugin`` addon
    runs, from the stack's commands by step (their creates, known ones only): the addon
    command's ``--state``, else ``minikube start --gpus`` (which turns the addon on). None when
    neither step is in the stack."""
    if ADDON_STEP in steps:
        state = cli_flags(command_argv(steps[ADDON_STEP]) or []).get("state")
        return state == "enabled", f"minikube addon nvidia-device-plugin {state}"
    if START_STEP in steps:
        argv = minikube_start_argv(steps[START_STEP]) or []
        gpus = cli_flags(argv[2:]).get("gpus")
        if gpus:
            return True, f"minikube addon on (minikube start --gpus={gpus}, no addon command)"
        return False, "no minikube addon (minikube start without --gpus)"
    return None
