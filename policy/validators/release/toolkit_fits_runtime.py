"""``toolkit-fits-runtime``: the container toolkit is configured for the node's runtime."""

from __future__ import annotations

from typing import Any, Final

from gpulab.core import fixes
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding, _finding
from policy.validators.props import dig, lab_setting, require_known, show
from policy.validators.release.operator_release import _release_props
from policy.validators.spec import MANDATORY, Settings, Spec
from variants import registry

RKE2_CONTAINERD_CONFIG_DIR: Final = "/var/lib/rancher/rke2/agent/etc/containerd/"
#: RKE2 shares k3s's agent: its containerd listens where k3s's does.
RKE2_CONTAINERD_SOCKET: Final = "/run/k3s/containerd/containerd.sock"
#: Runtimes whose containerd is the distribution's own: runtime -> (config dir, socket). The
#: lab's variants say theirs (``VariantSpec.containerd``: k3s, whose variant points the
#: operator's toolkit there) and win; RKE2 is not a lab variant but a cluster an existing lab
#: may use.
EMBEDDED_CONTAINERD: Final[dict[str, tuple[str, str]]] = {
    "rke2": (RKE2_CONTAINERD_CONFIG_DIR, RKE2_CONTAINERD_SOCKET),
    **{v.spec.node_runtime: paths for v in registry.REGISTRY.values() if (paths := v.spec.containerd)},
}
#: runtime -> the ``CONTAINERD_CONFIG`` a lab variant's record gives the toolkit
#: (``VariantSpec.toolkit_env``): the file the fix names (k3s: config.toml; MicroK8s: the
#: containerd-template.toml it renders its config from); elsewhere ``config.toml`` in the dir.
TOOLKIT_CONFIG: Final[dict[str, str]] = {
    v.spec.node_runtime: config
    for v in registry.REGISTRY.values()
    if v.spec.containerd and (config := dict(v.spec.toolkit_env).get("CONTAINERD_CONFIG"))
}
RUNTIMES: Final = ("docker", "containerd", "cri-o", *sorted(EMBEDDED_CONTAINERD), "none")
CONTAINERD_VARS: Final = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "CONTAINERD_RUNTIME_CLASS")
#: The first fix (表 2: gpu-smoke stays ContainerCreating).
FIX_TOOLKIT: Final = fixes.cite(fixes.toolkit(then="retry"), fixes.SMOKE_CREATING)


def cluster_runtime(cfg: Settings, ctx: StackContext) -> tuple[str | None, str]:
    """``(runtime, where it came from)``: pack config ``clusterRuntime``, else the stack's
    ``gpu-lab:cluster``; ``(None, reason)`` when neither is known."""
    if cfg.get("clusterRuntime"):
        return str(cfg["clusterRuntime"]), "pack config clusterRuntime"
    kind = lab_setting(ctx, "cluster")
    if kind is None:
        return None, (
            "the cluster's runtime is unknown: the pack received no stack config; set pack config "
            "clusterRuntime (docker, containerd, cri-o, k3s, rke2 or none)"
        )
    # The runtime each lab variant's node runs: the variant says (``VariantSpec.node_runtime``).
    variant = registry.REGISTRY.get(kind)
    runtime = variant.spec.node_runtime if variant else None
    if runtime is None or runtime == "unknown":
        return None, f"gpu-lab:cluster={kind!r} has no known runtime; set pack config clusterRuntime"
    return runtime, f"gpu-lab:cluster={kind}"


def check_toolkit_runtime(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "toolkit-fits-runtime"
    enabled = require_known(dig(release, "values", "toolkit", "enabled"), "values.toolkit.enabled")
    env_list = require_known(dig(release, "values", "toolkit", "env"), "values.toolkit.env") or []
    env = {str(e.get("name")): str(e.get("value")) for e in env_list if isinstance(e, dict)}
    runtime, origin = cluster_runtime(cfg, ctx)
    expected_by_runtime = {
        **{
            rt: f"CONTAINERD_CONFIG under {config_dir} and CONTAINERD_SOCKET={socket}"
            for rt, (config_dir, socket) in EMBEDDED_CONTAINERD.items()
        },
        "docker": "no containerd/CRI-O settings (the node's runtime is Docker)",
        "containerd": "containerd settings at the distribution's paths (not k3s/rke2 ones)",
        "cri-o": "no containerd settings (the node's runtime is CRI-O)",
        "none": "anything (the simulated node runs no container runtime)",
    }
    if runtime is None:
        return [
            Finding(item, NOT_EVALUATED, origin, "toolkit settings that fit the node's runtime", FIX_TOOLKIT)
        ]
    expected = f"{expected_by_runtime.get(runtime, 'settings for ' + runtime)} ({origin})"
    shown = ", ".join(
        f"{k}={v}" for k, v in sorted(env.items()) if k in CONTAINERD_VARS or k.startswith("CRIO")
    )
    observed = f"toolkit.enabled={show(enabled)}, env: {shown or 'chart defaults'}"
    if enabled is False or runtime == "none":
        return [_finding(item, True, observed, expected, FIX_TOOLKIT)]
    config_path, socket = env.get("CONTAINERD_CONFIG", ""), env.get("CONTAINERD_SOCKET", "")
    if runtime in EMBEDDED_CONTAINERD:
        config_dir, want_socket = EMBEDDED_CONTAINERD[runtime]
        ok = config_path.startswith(config_dir) and socket == want_socket
        want_config = TOOLKIT_CONFIG.get(runtime, config_dir + "config.toml")
        fix = (
            f"set toolkit.env CONTAINERD_CONFIG={want_config} and CONTAINERD_SOCKET={want_socket} "
            f"(the chart's defaults are stock containerd's paths); {FIX_TOOLKIT}"
        )
        return [_finding(item, ok, observed, expected, fix)]
    if runtime in ("docker", "cri-o"):
        ok = not any(k in env for k in CONTAINERD_VARS)
        return [
            _finding(
                item,
                ok,
                observed,
                expected,
                f"remove the containerd settings from toolkit.env; {FIX_TOOLKIT}",
            )
        ]
    if runtime == "containerd":
        ok = not any(
            p.startswith("/var/lib/rancher/") or p.startswith("/run/k3s/") for p in (config_path, socket)
        )
        return [
            _finding(
                item, ok, observed, expected, f"point toolkit.env at this node's containerd; {FIX_TOOLKIT}"
            )
        ]
    return [
        Finding(item, NOT_EVALUATED, f"runtime {runtime!r} is not one this pack knows", expected, FIX_TOOLKIT)
    ]


SPEC: Final = Spec(
    "toolkit-fits-runtime",
    "Configure the operator's container toolkit for the node's container runtime.",
    MANDATORY,
    "resource",
    check_toolkit_runtime,
    {"clusterRuntime": {"type": "string", "enum": list(RUNTIMES)}},
)
