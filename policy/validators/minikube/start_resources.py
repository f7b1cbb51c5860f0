"""``minikube-start-resources``: the minikube node gets enough CPUs and memory."""

from __future__ import annotations

from typing import Any, Final

from gpulab.core import fixes
from gpulab.core.names import MIN_CPUS, MIN_MEMORY_MIB
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.minikube.start_command import _minikube_start, cli_flags, memory_mib
from policy.validators.spec import MANDATORY, Settings, Spec, _int


def check_minikube_resources(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    applies, argv = _minikube_start(rtype, props)
    if not applies:
        return []
    item = "minikube-start-resources"
    min_cpus = int(cfg.get("minCpus", MIN_CPUS))
    min_mib = int(cfg.get("minMemoryMiB", MIN_MEMORY_MIB))
    expected = f"--cpus >= {min_cpus} and --memory >= {min_mib} MiB"
    fix = fixes.cite(
        f"give the node {fixes.minimum(min_cpus, min_mib)}: {fixes.set_resources(min_cpus, min_mib)}; "
        "kubectl describe pod shows who is blocked",
        fixes.OPERATOR_PENDING,
    )
    if argv is None:
        return [
            Finding(
                item,
                NOT_EVALUATED,
                f"cannot read minikube start flags from {props.get('create')}",
                expected,
                fix,
            )
        ]
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
    return [_finding(item, cpus_ok and mem_ok, observed, expected, fix)]


SPEC: Final = Spec(
    "minikube-start-resources",
    f"Give the minikube node at least {MIN_CPUS} CPUs and {MIN_MEMORY_MIB // 1024} GiB of memory.",
    MANDATORY,
    "resource",
    check_minikube_resources,
    {"minCpus": _int(1, MIN_CPUS), "minMemoryMiB": _int(1, MIN_MEMORY_MIB)},
)
