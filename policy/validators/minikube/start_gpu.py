"""``minikube-start-gpu``: minikube starts with GPUs, the docker driver and the docker runtime."""

from __future__ import annotations

from typing import Any, Final

from gpulab.core import fixes
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.minikube.start_command import _minikube_start, cli_flags
from policy.validators.spec import _STR, MANDATORY, Settings, Spec

#: The first fix (表 2: minikube start hangs or reports a GPU error).
FIX_MINIKUBE_GPU: Final = fixes.cite(
    f"redo the host's Docker GPU setup: {fixes.docker_gpus()}", fixes.MINIKUBE_START
)


def check_minikube_gpu(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
    applies, argv = _minikube_start(rtype, props)
    if not applies:
        return []
    item = "minikube-start-gpu"
    gpus_allowed = [str(g) for g in (cfg.get("gpus") or ["all", "nvidia", "nvidia.com"])]
    expected = f"--gpus in {gpus_allowed}, --driver=docker, --container-runtime=docker"
    if argv is None:
        return [
            Finding(
                item,
                NOT_EVALUATED,
                f"cannot read minikube start flags from {props.get('create')}",
                expected,
                FIX_MINIKUBE_GPU,
            )
        ]
    flags = cli_flags(argv[2:])
    observed = ", ".join(f"--{k}={flags.get(k, '<absent>')}" for k in ("gpus", "driver", "container-runtime"))
    ok = (
        flags.get("gpus") in gpus_allowed
        and flags.get("driver") == "docker"
        and flags.get("container-runtime") == "docker"
    )
    return [_finding(item, ok, observed, expected, FIX_MINIKUBE_GPU)]


SPEC: Final = Spec(
    "minikube-start-gpu",
    "Start minikube with --gpus, the docker driver and the docker container runtime.",
    MANDATORY,
    "resource",
    check_minikube_gpu,
    {"gpus": {"type": "array", "items": _STR, "default": ["all", "nvidia", "nvidia.com"]}},
)
