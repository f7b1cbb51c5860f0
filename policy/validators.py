"""The gpu-lab checklist policy pack: every policy, as plain functions tests can call.

``policy/__main__.py`` only assembles :data:`POLICIES` into a ``PolicyPack`` (building one
starts a gRPC server and never returns, so nothing here builds one). README.md beside this
file lists the policies, their levels and the pack config.

Shape. Each policy is a :class:`Spec`: a stable kebab-case name, an imperative
description, a default enforcement level, a config schema whose ``default`` values are the
expected values, and a *check*: a pure function returning :class:`Finding` objects with a
status (``pass`` / ``fail`` / ``not-evaluated`` / ``not-observable-in-simulation``), the
observed value, the expected value and the first fix (the chapter's troubleshooting table,
表 2, where it has a row for the symptom; the chapter's own step otherwise). The adapters
(:func:`validate_resource`, :func:`validate_stack`) turn findings into engine reports:

* ``fail``: ``report_violation`` at the policy's level (mandatory by default), message
  ``[<item>] observed: ...; expected: ...; first fix: ...``.
* ``not-evaluated`` / ``not-observable-in-simulation``: never a violation and never a pass.
  The policy marks itself not applicable with the reason (the engine's policy summary then
  counts it neither passed nor failed), and the advisory policy ``checklist-unverified``,
  which runs last, reports one advisory line per such finding, so the reason is printed
  without blocking. pulumi-policy 1.21 offers no other way to show a non-failure: a
  ``report_violation`` carries the policy's own level, ``not_applicable`` reasons are not
  printed by the CLI, and an ``UnknownValueError`` is printed as "can't run policy ... during
  preview", which is wrong after a deployment.
* A resource policy whose input is unknown at preview re-raises the SDK's
  ``UnknownValueError``; pulumi-policy prints that as an advisory "can't run policy ...
  during preview" line, and the policy runs again, with known inputs, during ``up``.

Host facts for the CUDA check. A resource policy sees one resource, so
``smoke-image-cuda-fits-host`` is a stack policy; stack validation also runs at preview.
At preview a custom resource's state is empty when its provider's config is unknown (the
Kubernetes provider's kubeconfig comes from the cluster command), so it reads component
outputs, which the program registers with known values: host facts from pack config
(``hostMaxCuda``, ``hostDriverVersion``) when given, else the ``HostProbe`` component
(``maxCuda``, ``driverVersion``; ``source: off`` means no facts), else the stack's
``hostMaxCuda``/``hostDriverVersion`` exports; the image from the smoke Pod's spec when
known, else the ``SmokeTest`` component's ``image``, else the ``smokeImage`` export. No
facts: "not evaluated". ``single-device-plugin-owner`` is a stack policy for the same
reason (two resources), reading the GpuOperator component's ``components`` at preview.

Secrets. Policies receive secret inputs already unwrapped (pulumi-policy deserializes the
engine's secret envelopes into plain values and does not mark them), so a policy cannot
tell a secret by looking at a value. ``no-plaintext-secrets`` compares each stack config
value marked secret (from the engine's ``ConfigureStack``, see :mod:`policy.stack_context`)
with every argv element of the lab's local commands, every Helm value and every smoke Pod
command, argument and env value; the message names the config key, never the value.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import yaml
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Secret,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError

from gpulab import checklist, cuda, minikube_ctl
from gpulab import config as labconfig
from gpulab import outputs as out
from policy import stack_context
from policy.stack_context import StackContext

PACK_NAME: Final = "gpu-lab-checklist"

PASS: Final = checklist.PASS
FAIL: Final = checklist.FAIL
NOT_EVALUATED: Final = checklist.NOT_EVALUATED
NOT_OBSERVABLE: Final = checklist.NOT_OBSERVABLE
#: A value the engine does not know yet (a preview's computed value).
UNKNOWN: Final = checklist.UNKNOWN

# Engine type tokens the policies read.
T_STACK: Final = "pulumi:pulumi:Stack"
T_RELEASE: Final = "kubernetes:helm.sh/v3:Release"
T_POD: Final = "kubernetes:core/v1:Pod"
T_DYNAMIC: Final = "pulumi-python:dynamic:Resource"
T_HOST_PROBE: Final = "gpulab:host_probe:HostProbe"
T_GPU_OPERATOR: Final = "gpulab:gpu_operator:GpuOperator"
T_SMOKE: Final = "gpulab:smoke:SmokeTest"

NVIDIA_HELM_REPO: Final = labconfig.DEFAULT_CHART_REPO
OPERATOR_CHART: Final = "gpu-operator"
GPU_RESOURCE: Final = "nvidia.com/gpu"

# --- first fixes ----------------------------------------------------------------------
# The chapter's troubleshooting table (表 2, 第一反应), as commands, where it has a row.
FIX_MINIKUBE_GPU: Final = (
    "redo the host's Docker GPU setup: sudo nvidia-ctk runtime configure --runtime=docker && "
    "sudo systemctl restart docker, prove it with docker run --rm --gpus all "
    "nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi (表 2: minikube start hangs or reports a GPU "
    "error)"
)
FIX_RESOURCES: Final = (
    "give the node >= {cpus} CPUs / {mib} MiB: pulumi config set cpus {cpus} && pulumi config set "
    "memoryMiB {mib}; kubectl describe pod shows who is blocked (表 2: operator pods stay Pending)"
)
FIX_TOOLKIT: Final = (
    "kubectl -n gpu-operator logs -l app=nvidia-container-toolkit-daemonset; wait for the "
    "toolkit DaemonSet to be ready, then retry (表 2: gpu-smoke stays ContainerCreating)"
)
FIX_CUDA: Final = (
    "compare the image's CUDA with the baseline card's CUDA ceiling and change the image tag "
    "(表 2: the Pod starts but reports insufficient / unsatisfied condition: cuda>=X.Y)"
)
FIX_ALLOCATABLE: Final = (
    "check the node sees the GPU: minikube ssh -- nvidia-smi; then the device plugin's log "
    "(表 2: allocatable prints 0)"
)


# --- findings -------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One check's outcome on one resource (or on the stack when ``urn`` is None).

    ``observed``/``expected``/``fix`` are human-readable; ``observed`` carries the reason for
    ``not-evaluated`` and ``not-observable-in-simulation``.
    """

    item: str
    status: str
    observed: str
    expected: str
    fix: str
    urn: str | None = None
    simulated: bool = False

    def message(self) -> str:
        """The line an engine report carries (never a secret value)."""
        if self.status == NOT_EVALUATED:
            return f"[{self.item}] not evaluated: {self.observed}; expected when known: {self.expected}"
        if self.status == NOT_OBSERVABLE:
            return f"[{self.item}] not observable in the simulated lab: {self.observed}"
        sim = " (simulated values)" if self.simulated else ""
        return (
            f"[{self.item}] observed: {self.observed}{sim}; expected: {self.expected}; first fix: {self.fix}"
        )


UNVERIFIED: Final = frozenset({NOT_EVALUATED, NOT_OBSERVABLE})


class Ledger:
    """The latest findings per (policy, resource) in this pack process.

    The SDK runs a request's policies one after another in pack order, so
    ``checklist-unverified`` (last in :data:`POLICIES`) reads what the other policies found
    during this run, with their own config applied. A policy that is disabled never runs and
    leaves nothing here.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[tuple[str, str], tuple[Finding, ...]] = {}

    def put(self, policy: str, urn: str, findings: Sequence[Finding]) -> None:
        with self._lock:
            self._latest[(policy, urn)] = tuple(findings)

    def unverified(self, order: Sequence[str] = ()) -> list[Finding]:
        """Findings neither passed nor failed, by policy in ``order`` (others last), then URN."""
        rank = {name: i for i, name in enumerate(order)}
        with self._lock:
            entries = sorted(self._latest.items(), key=lambda e: (rank.get(e[0][0], len(rank)), e[0]))
        return [f for _, fs in entries for f in fs if f.status in UNVERIFIED]

    def clear(self) -> None:
        with self._lock:
            self._latest.clear()


LEDGER: Final = Ledger()


# --- reading props --------------------------------------------------------------------
def plain(value: Any) -> Any:
    """``value`` (a pulumi-policy props proxy or plain data) as plain dicts/lists.

    Unknown values (the SDK's ``UNKNOWN_*`` sentinels, which its proxies raise
    ``UnknownValueError`` on) become :data:`UNKNOWN`; ``pulumi_policy.Secret`` wrappers are
    unwrapped. Never raises for unknowns.
    """
    if isinstance(value, str):
        return UNKNOWN if checklist.is_unknown({"v": value}, "v") else value
    if value is UNKNOWN or value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Secret):
        return plain(value.value)
    if isinstance(value, Mapping):
        result: dict[str, Any] = {}
        for key in list(value):
            try:
                item = value[key]
            except UnknownValueError:
                result[str(key)] = UNKNOWN
                continue
            result[str(key)] = plain(item)
        return result
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        items: list[Any] = []
        for i in range(len(value)):
            try:
                elem = value[i]
            except UnknownValueError:
                items.append(UNKNOWN)
                continue
            items.append(plain(elem))
        return items
    return value


def has_unknown(value: Any) -> bool:
    """True when ``value`` (from :func:`plain`) is or contains :data:`UNKNOWN`."""
    if value is UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(has_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(has_unknown(v) for v in value)
    return False


def dig(obj: Any, *path: str | int) -> Any:
    """``obj[path[0]][path[1]]...``; None when a step is missing, UNKNOWN when one is unknown."""
    for step in path:
        if obj is UNKNOWN:
            return UNKNOWN
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and -len(obj) <= step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, dict) else None
        if obj is None:
            return None
    return obj


def require_known(value: Any, path: str) -> Any:
    """``value``, or raise the SDK's ``UnknownValueError`` for ``path`` (resource policies)."""
    if has_unknown(value):
        raise UnknownValueError(UNKNOWN_STRING_VALUE, path.split("."))
    return value


def show(value: Any) -> str:
    """A short rendering of an observed value for messages."""
    if value is None:
        return "unset"
    if value is UNKNOWN:
        return "unknown"
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, default=str, sort_keys=True)


# --- small parsers --------------------------------------------------------------------
_EXACT_VERSION: Final = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")
_DIGEST: Final = re.compile(r"@sha256:[0-9a-f]{64}$")


def image_pin(image: str) -> tuple[str | None, str | None]:
    """``(tag, digest)`` of an image reference; either may be None."""
    digest_m = _DIGEST.search(image)
    digest = digest_m.group(0)[1:] if digest_m else None
    name = image.split("@", 1)[0]
    slash, colon = name.rfind("/"), name.rfind(":")
    tag = name[colon + 1 :] if colon > slash else None
    return tag, digest


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


def minikube_start_argv(create: Sequence[str]) -> list[str] | None:
    """The ``minikube start`` argv a ``minikube-start`` command runs, or None if unreadable.

    ``python3 -m gpulab.minikube_ctl up --profile P --cpus N ...`` is expanded through
    :func:`gpulab.minikube_ctl.start_argv` (what it really runs); a direct ``minikube start
    ...`` argv is taken as is.
    """
    args = [str(a) for a in create]
    if "minikube_ctl" in " ".join(args) and "up" in args:
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


def derive_max_cuda(driver: str) -> str | None:
    """Newest CUDA X.Y in :data:`gpulab.cuda.MIN_LINUX_DRIVER` that ``driver`` supports."""
    fitting = []
    for version in cuda.MIN_LINUX_DRIVER:
        try:
            if cuda.driver_supports(driver, version):
                fitting.append(version)
        except ValueError:
            return None
    return max(fitting, key=cuda.parse_version) if fitting else None


def is_local_chart(chart: str) -> bool:
    """True when ``chart`` names a directory rather than a repository chart."""
    return chart.startswith(("/", "./", "../", "~")) or os.path.isdir(chart)


def is_operator_release(props: Mapping[str, Any]) -> bool:
    """True for the GPU Operator's Helm release (by release name or chart name/path)."""
    chart = props.get("chart")
    name = props.get("name")
    if name == OPERATOR_CHART:
        return True
    return isinstance(chart, str) and os.path.basename(chart.rstrip("/")) == OPERATOR_CHART


def local_chart_version(path: str) -> str | None:
    """``version`` from ``<path>/Chart.yaml``, or None when unreadable."""
    try:
        with open(os.path.join(os.path.expanduser(path), "Chart.yaml"), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return None
    version = doc.get("version") if isinstance(doc, dict) else None
    return str(version) if version is not None else None


def lab_setting(ctx: StackContext, key: str) -> str | None:
    """The stack's ``gpu-lab:<key>`` (the program's default when unset); None with no stack config."""
    if ctx.config is None:
        return None
    value = ctx.get(f"{labconfig.NAMESPACE}:{key}")
    if value is not None:
        return value
    default = labconfig.SCHEMA.get(key, ("str", None))[1]
    if default is None:
        return None
    return str(default).lower() if isinstance(default, bool) else str(default)


# --- resource checks -----------------------------------------------------------------
# Each takes (resource type, plain props, policy config, stack context) and returns findings;
# an empty list means "not this policy's resource".
Settings = Mapping[str, Any]
ResourceCheck = Callable[[str, dict[str, Any], Settings, StackContext], list[Finding]]


def _finding(item: str, ok: bool, observed: str, expected: str, fix: str) -> Finding:
    return Finding(item, PASS if ok else FAIL, observed, expected, fix)


def _release_props(rtype: str, props: dict[str, Any]) -> dict[str, Any] | None:
    if rtype != T_RELEASE:
        return None
    require_known({k: props.get(k) for k in ("name", "chart")}, "chart")
    return props if is_operator_release(props) else None


def check_chart_pinned(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "gpu-operator-chart-pinned"
    want = str(cfg.get("chartVersion") or "")
    expected = f"chart version exactly {want}" if want else "one exact chart version (vMAJOR.MINOR.PATCH)"
    fix = (
        "pin the chart: pulumi config set chartVersion v26.7.0 (an exact release, never a range "
        "or empty: Helm would take whatever is newest)"
    )
    chart = str(release["chart"])
    if is_local_chart(chart):
        local = local_chart_version(chart)
        observed = f"local chart {chart} (Chart.yaml version {local or 'unreadable'})"
        if want and local is None:
            return [Finding(item, NOT_EVALUATED, observed, expected, fix)]
        return [_finding(item, not want or local == want, observed, expected, fix)]
    version = require_known(release.get("version"), "version")
    if not version:
        return [_finding(item, False, "no version: Helm installs the newest chart", expected, fix)]
    ok = bool(_EXACT_VERSION.match(str(version))) and (not want or str(version) == want)
    return [_finding(item, ok, f"version {show(version)}", expected, fix)]


def check_driver_disabled(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "gpu-operator-driver-disabled"
    host_driver = bool(cfg.get("hostProvidesDriver", True))
    enabled = require_known(dig(release, "values", "driver", "enabled"), "values.driver.enabled")
    if isinstance(enabled, str):
        enabled = enabled.strip().lower() != "false"
    observed = (
        "driver.enabled unset (the chart's default: true)"
        if enabled is None
        else f"driver.enabled={show(enabled)}"
    )
    if host_driver:
        return [
            _finding(
                item,
                enabled is False,
                observed,
                "driver.enabled=false: the host provides the driver",
                "set the release value driver.enabled=false (the chapter's step 2: --set "
                "driver.enabled=false); the operator must not install a second driver",
            )
        ]
    return [
        _finding(
            item,
            enabled is not False,
            observed,
            "the operator installs the driver (pack config hostProvidesDriver=false)",
            "remove driver.enabled=false from the release values",
        )
    ]


def check_operator_namespace(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    want = str(cfg.get("namespace") or "gpu-operator")
    ns = require_known(release.get("namespace"), "namespace")
    observed = f"namespace {show(ns)}" + (" (the provider's default namespace)" if ns is None else "")
    return [
        _finding(
            "gpu-operator-namespace",
            ns == want,
            observed,
            f"namespace {want!r}",
            f"install the release into namespace {want} (the chapter's step 2: --namespace "
            f"{want} --create-namespace)",
        )
    ]


def check_chart_source(rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext) -> list[Finding]:
    release = _release_props(rtype, props)
    if release is None:
        return []
    item = "gpu-operator-chart-source"
    allowed = [str(r).rstrip("/") for r in (cfg.get("repositories") or [NVIDIA_HELM_REPO])]
    allow_local = bool(cfg.get("allowLocalPath", True))
    expected = f"repository {' or '.join(allowed)}" + (" or a local chart directory" if allow_local else "")
    fix = (
        f"pulumi config set chartRepo {NVIDIA_HELM_REPO} (NVIDIA's repository), or offline "
        "pulumi config set chartPath <unpacked gpu-operator chart>"
    )
    chart = str(release["chart"])
    repo = require_known(dig(release, "repositoryOpts", "repo"), "repositoryOpts.repo")
    if repo is None and is_local_chart(chart):
        return [_finding(item, allow_local, f"local chart {chart}", expected, fix)]
    if repo is None and chart.startswith("oci://"):
        repo = chart.rsplit("/", 1)[0]
    if repo is None:
        observed = (
            f"chart {chart!r} with no repositoryOpts.repo: Helm resolves it from local repository aliases"
        )
        return [_finding(item, False, observed, expected, fix)]
    return [_finding(item, str(repo).rstrip("/") in allowed, f"repository {show(repo)}", expected, fix)]


#: The container runtime each lab variant's node runs (gpu-lab:cluster -> runtime).
RUNTIME_BY_CLUSTER: Final = {
    "minikube": "docker",  # the lab always starts minikube with --container-runtime=docker
    "sim": "none",  # kwok nodes run no containers
    "kind": "containerd",
    "k3s": "k3s",
    "rke2": "rke2",
}
RUNTIMES: Final = ("docker", "containerd", "cri-o", "k3s", "rke2", "none")
K3S_CONTAINERD_CONFIG_DIR: Final = "/var/lib/rancher/k3s/agent/etc/containerd/"
K3S_CONTAINERD_SOCKET: Final = "/run/k3s/containerd/containerd.sock"
RKE2_CONTAINERD_CONFIG_DIR: Final = "/var/lib/rancher/rke2/agent/etc/containerd/"
CONTAINERD_VARS: Final = ("CONTAINERD_CONFIG", "CONTAINERD_SOCKET", "CONTAINERD_RUNTIME_CLASS")


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
    runtime = RUNTIME_BY_CLUSTER.get(kind)
    if runtime is None:
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
    k3s_expected = (
        f"CONTAINERD_CONFIG under {K3S_CONTAINERD_CONFIG_DIR} and CONTAINERD_SOCKET={K3S_CONTAINERD_SOCKET}"
    )
    expected_by_runtime = {
        "k3s": k3s_expected,
        "rke2": (
            f"CONTAINERD_CONFIG under {RKE2_CONTAINERD_CONFIG_DIR} and "
            f"CONTAINERD_SOCKET={K3S_CONTAINERD_SOCKET}"
        ),
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
    if runtime in ("k3s", "rke2"):
        config_dir = K3S_CONTAINERD_CONFIG_DIR if runtime == "k3s" else RKE2_CONTAINERD_CONFIG_DIR
        ok = config_path.startswith(config_dir) and socket == K3S_CONTAINERD_SOCKET
        fix = (
            f"set toolkit.env CONTAINERD_CONFIG={config_dir}config.toml and CONTAINERD_SOCKET="
            f"{K3S_CONTAINERD_SOCKET} (the chart's defaults are stock containerd's paths); {FIX_TOOLKIT}"
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


def _smoke_containers(rtype: str, props: dict[str, Any], cfg: Settings) -> list[dict[str, Any]] | None:
    if rtype != T_POD:
        return None
    name = require_known(dig(props, "metadata", "name"), "metadata.name")
    if name != str(cfg.get("podName") or "gpu-smoke"):
        return None
    containers = require_known(dig(props, "spec", "containers"), "spec.containers") or []
    return [c for c in containers if isinstance(c, dict)]


def check_smoke_gpu_limit(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    containers = _smoke_containers(rtype, props, cfg)
    if containers is None:
        return []
    limits = [dig(c, "resources", "limits", GPU_RESOURCE) for c in containers]
    observed = ", ".join(
        f"{dig(c, 'name')}: limits[{GPU_RESOURCE}]={show(v)}" for c, v in zip(containers, limits, strict=True)
    )

    def positive(v: Any) -> bool:
        try:
            return int(str(v)) >= 1
        except ValueError:
            return False

    return [
        _finding(
            "smoke-pod-gpu-limit",
            any(positive(v) for v in limits),
            observed or "no containers",
            f"a container with resources.limits[{GPU_RESOURCE}] >= 1",
            "request the GPU as the chapter's step 5 does: resources.limits nvidia.com/gpu: 1 "
            "(pulumi config set smokeGpus 1); without it the Pod is scheduled anywhere and gets no GPU",
        )
    ]


def check_smoke_restart_never(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    if _smoke_containers(rtype, props, cfg) is None:
        return []
    policy = require_known(dig(props, "spec", "restartPolicy"), "spec.restartPolicy")
    return [
        _finding(
            "smoke-pod-restart-never",
            policy == "Never",
            f"restartPolicy {show(policy)}" + (" (Kubernetes default: Always)" if policy is None else ""),
            "restartPolicy 'Never' (nvidia-smi runs once; the Pod must end Succeeded)",
            "set spec.restartPolicy: Never as in the chapter's step 5; with Always a finished "
            "nvidia-smi is restarted into CrashLoopBackOff",
        )
    ]


def check_smoke_image_pinned(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    containers = _smoke_containers(rtype, props, cfg)
    if containers is None:
        return []
    findings = []
    for c in containers:
        image = str(c.get("image") or "")
        tag, digest = image_pin(image)
        ok = bool(digest) or (tag is not None and tag != "latest")
        findings.append(
            _finding(
                "smoke-pod-image-pinned",
                ok,
                f"container {c.get('name')}: image {image!r}",
                "image pinned by a tag other than latest, or by @sha256 digest",
                "pulumi config set smokeImage nvidia/cuda:12.4.1-base-ubuntu22.04 (the chapter's "
                "image) or <repo>@sha256:<digest>",
            )
        )
    return findings


def _minikube_start(rtype: str, props: dict[str, Any]) -> tuple[bool, list[str] | None]:
    """``(is a minikube-start command, the minikube argv it runs or None if unreadable)``."""
    if rtype != T_DYNAMIC or require_known(props.get("purpose"), "purpose") != "minikube-start":
        return False, None
    create = require_known(props.get("create"), "create") or []
    return True, minikube_start_argv([str(a) for a in create])


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


def check_minikube_resources(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    applies, argv = _minikube_start(rtype, props)
    if not applies:
        return []
    item = "minikube-start-resources"
    min_cpus = int(cfg.get("minCpus", labconfig.MIN_CPUS))
    min_mib = int(cfg.get("minMemoryMiB", labconfig.MIN_MEMORY_MIB))
    expected = f"--cpus >= {min_cpus} and --memory >= {min_mib} MiB"
    fix = FIX_RESOURCES.format(cpus=min_cpus, mib=min_mib)
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


def _secret_scan_targets(rtype: str, props: dict[str, Any]) -> list[tuple[str, str]]:
    """``(where, text)`` pairs a secret must never appear in."""
    targets: list[tuple[str, str]] = []

    def strings(obj: Any, where: str) -> None:
        if isinstance(obj, str):
            targets.append((where, obj))
        elif isinstance(obj, dict):
            for k, v in obj.items():
                strings(v, f"{where}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                strings(v, f"{where}[{i}]")

    if rtype == T_DYNAMIC:
        strings(props.get("create"), "create")
        strings(props.get("delete"), "delete")
    elif rtype == T_RELEASE:
        strings(props.get("values"), "values")
    elif rtype == T_POD:
        for i, c in enumerate(dig(props, "spec", "containers") or []):
            if not isinstance(c, dict):
                continue
            strings(c.get("command"), f"spec.containers[{i}].command")
            strings(c.get("args"), f"spec.containers[{i}].args")
            for j, e in enumerate(c.get("env") or []):
                if isinstance(e, dict):
                    strings(e.get("value"), f"spec.containers[{i}].env[{j}].value")
    return targets


def check_no_plaintext_secrets(
    rtype: str, props: dict[str, Any], cfg: Settings, ctx: StackContext
) -> list[Finding]:
    targets = _secret_scan_targets(rtype, props)
    if rtype not in (T_DYNAMIC, T_RELEASE, T_POD):
        return []
    item = "no-plaintext-secrets"
    expected = "no secret config value in any command argv, Helm value or Pod command/env"
    fix = (
        "pass the secret through the command's environment= wrapped in pulumi.Output.secret "
        "(never argv); for Helm, reference a Kubernetes Secret instead of a value"
    )
    if ctx.config is None:
        return [
            Finding(
                item,
                NOT_EVALUATED,
                "the engine gave the pack no stack config, so the secret values are unknown",
                expected,
                fix,
            )
        ]
    min_len = int(cfg.get("minSecretLength", 6))
    leaks = []
    for key, values in ctx.secret_values().items():
        needles = [v for v in values if len(v) >= min_len]
        for where, text in targets:
            if any(n in text for n in needles):
                leaks.append(f"secret config {key} in {where}")
    keys = ", ".join(sorted(ctx.secret_keys)) or "none"
    observed = "; ".join(leaks) if leaks else f"no secret value found (secret keys: {keys})"
    return [_finding(item, not leaks, observed, expected, fix)]


# --- stack checks --------------------------------------------------------------------
@dataclass(frozen=True)
class Res:
    """A stack resource as the stack checks read it (props already :func:`plain`)."""

    type: str
    urn: str
    name: str
    props: dict[str, Any]


StackCheck = Callable[[list[Res], Settings, StackContext], list[Finding]]


def stack_view(args: StackValidationArgs) -> list[Res]:
    """The resources of a stack validation as :class:`Res`."""
    return [Res(r.resource_type, r.urn, r.name, plain(r.props) or {}) for r in args.resources]


def _of_type(resources: Sequence[Res], rtype: str) -> list[Res]:
    return [r for r in resources if r.type == rtype]


def _stack_outputs(resources: Sequence[Res]) -> tuple[dict[str, Any], str | None]:
    stacks = _of_type(resources, T_STACK)
    return (stacks[0].props, stacks[0].urn) if stacks else ({}, None)


def _known(value: Any) -> bool:
    return value is not None and not has_unknown(value)


@dataclass(frozen=True)
class HostFacts:
    driver: str | None
    max_cuda: str | None
    origin: str


def host_facts(resources: Sequence[Res], cfg: Settings) -> HostFacts | None:
    """Host driver and max CUDA, from pack config, the HostProbe component or the stack
    exports (in that order); None when no source has them."""
    driver, max_cuda = cfg.get("hostDriverVersion") or None, cfg.get("hostMaxCuda") or None
    if driver or max_cuda:
        origin = "pack config"
    else:
        origin = ""
        for probe in _of_type(resources, T_HOST_PROBE):
            if probe.props.get("source") == "off":
                continue
            d, m = probe.props.get("driverVersion"), probe.props.get("maxCuda")
            if _known(d) or _known(m):
                driver, max_cuda = (d if _known(d) else None), (m if _known(m) else None)
                origin = f"host probe ({probe.props.get('source')})"
                break
        if not origin:
            outputs, _ = _stack_outputs(resources)
            d, m = outputs.get(out.HOST_DRIVER_VERSION), outputs.get(out.HOST_MAX_CUDA)
            if (_known(d) or _known(m)) and outputs.get(out.HOST_PROBE_SOURCE) != "off":
                driver, max_cuda = (d if _known(d) else None), (m if _known(m) else None)
                origin = "stack outputs"
    if not driver and not max_cuda:
        return None
    if not max_cuda and driver:
        derived = derive_max_cuda(str(driver))
        if derived:
            max_cuda = derived
            origin += f"; max CUDA {derived} derived from driver {driver} (CUDA release notes table 3)"
    return HostFacts(str(driver) if driver else None, str(max_cuda) if max_cuda else None, origin)


def smoke_images(resources: Sequence[Res], cfg: Settings) -> tuple[list[str], str | None]:
    """The smoke Pod's images and the URN to attribute them to: the Pod's spec when known,
    else the SmokeTest component's ``image``, else the ``smokeImage`` export."""
    pod_name = str(cfg.get("podName") or "gpu-smoke")
    for pod in _of_type(resources, T_POD):
        if dig(pod.props, "metadata", "name") != pod_name:
            continue
        images = [dig(c, "image") for c in dig(pod.props, "spec", "containers") or []]
        if images and all(isinstance(i, str) for i in images):
            return [str(i) for i in images], pod.urn
    for smoke in _of_type(resources, T_SMOKE):
        image = smoke.props.get("image")
        if isinstance(image, str):
            return [image], smoke.urn
    outputs, urn = _stack_outputs(resources)
    image = outputs.get(out.SMOKE_IMAGE)
    return ([image], urn) if isinstance(image, str) else ([], None)


def check_cuda_fits(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
    item = "smoke-image-cuda-fits-host"
    images, urn = smoke_images(resources, cfg)
    facts = host_facts(resources, cfg)
    if not images:
        if not _of_type(resources, T_POD) and not _of_type(resources, T_SMOKE):
            return []
        return [
            Finding(
                item,
                NOT_EVALUATED,
                "the smoke image is not known yet",
                "image CUDA <= host max CUDA",
                FIX_CUDA,
                urn,
            )
        ]
    findings = []
    for image in images:
        need = cuda.image_cuda_version(image)
        if facts is None or facts.max_cuda is None:
            reason = (
                "no host facts: the host probe is off and pack config gives neither hostMaxCuda nor "
                "hostDriverVersion"
            )
            findings.append(
                Finding(
                    item,
                    NOT_EVALUATED,
                    f"{reason} (image {image})",
                    "image CUDA <= host max CUDA",
                    FIX_CUDA,
                    urn,
                )
            )
            continue
        expected = f"image CUDA <= {facts.max_cuda}"
        if need is None:
            findings.append(
                Finding(
                    item,
                    NOT_EVALUATED,
                    f"image {image} carries no CUDA X.Y in its tag (not a tagged nvidia/cuda image)",
                    expected,
                    FIX_CUDA,
                    urn,
                )
            )
            continue
        newest = cuda.newest_fitting_tag(image, facts.max_cuda)
        observed = (
            f"image {image} needs CUDA {need}; host "
            f"{'driver ' + facts.driver if facts.driver else '(driver not given)'} supports CUDA "
            f"{facts.max_cuda} at most (from {facts.origin})"
        )
        fits = cuda.cuda_fits(need, facts.max_cuda)
        if not fits:
            observed += f"; newest tag that fits: {newest or 'none known'}"
        fix = FIX_CUDA + (f": pulumi config set smokeImage {newest}" if newest else "")
        findings.append(
            Finding(
                item,
                PASS if fits else FAIL,
                observed,
                f"{expected}; newest fitting tag {newest or 'none known'}",
                fix,
                urn,
            )
        )
    return findings


def _addon_state(resources: Sequence[Res]) -> tuple[Any, str]:
    dynamic = _of_type(resources, T_DYNAMIC)
    for cmd in dynamic:
        if cmd.props.get("purpose") == "minikube-addon":
            create = cmd.props.get("create")
            if has_unknown(create):
                return UNKNOWN, "minikube addon command unknown"
            state = cli_flags([str(a) for a in create or []]).get("state")
            return state == "enabled", f"minikube addon nvidia-device-plugin {state}"
    for cmd in dynamic:
        if cmd.props.get("purpose") == "minikube-start":
            create = cmd.props.get("create")
            if has_unknown(create):
                return UNKNOWN, "minikube start command unknown"
            argv = minikube_start_argv([str(a) for a in create or []]) or []
            gpus = cli_flags(argv[2:]).get("gpus")
            if gpus:
                # minikube start --gpus turns its own nvidia-device-plugin addon on.
                return True, f"minikube addon on (minikube start --gpus={gpus}, no addon command)"
    return False, "no minikube addon"


def _operator_plugin(resources: Sequence[Res], outputs: Mapping[str, Any]) -> tuple[Any, str]:
    releases = [r for r in _of_type(resources, T_RELEASE) if r.props]
    for rel in releases:
        if not is_operator_release(rel.props):
            continue
        enabled = dig(rel.props, "values", "devicePlugin", "enabled")
        if enabled is UNKNOWN:
            break
        on = enabled is None or enabled is True or str(enabled).lower() == "true"
        return on, f"operator devicePlugin.enabled={show(enabled)} (release values)"
    for op in _of_type(resources, T_GPU_OPERATOR):
        enabled = dig(op.props, "components", "devicePlugin")
        if isinstance(enabled, bool):
            return enabled, f"operator devicePlugin.enabled={show(enabled)} (GpuOperator component)"
    enabled = dig(outputs, out.OPERATOR_COMPONENTS, "devicePlugin")
    if isinstance(enabled, bool):
        return enabled, f"operator devicePlugin.enabled={show(enabled)} (stack output)"
    if _of_type(resources, T_RELEASE) or _of_type(resources, T_GPU_OPERATOR):
        return UNKNOWN, "operator values unknown"
    return False, "no GPU Operator"


def check_single_owner(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
    item = "single-device-plugin-owner"
    outputs, stack_urn = _stack_outputs(resources)
    addon, addon_note = _addon_state(resources)
    operator, operator_note = _operator_plugin(resources, outputs)
    if not (_of_type(resources, T_RELEASE) or _of_type(resources, T_GPU_OPERATOR) or addon):
        return []
    want = str(cfg.get("owner") or "")
    expected = "exactly one of minikube's addon and the operator's device plugin" + (
        f", owned by {want}" if want else ""
    )
    fix = (
        "pulumi config set devicePluginOwner operator (the lab disables minikube's addon), or "
        "devicePluginOwner minikube-addon with devicePlugin false; with none, " + FIX_ALLOCATABLE
    )
    observed = f"{addon_note}; {operator_note}"
    if addon is UNKNOWN or operator is UNKNOWN:
        return [
            Finding(
                item,
                NOT_EVALUATED,
                f"{checklist.KNOWN_AFTER_DEPLOYMENT} ({observed})",
                expected,
                fix,
                stack_urn,
            )
        ]
    owners = [n for n, on in (("minikube-addon", addon), ("operator", operator)) if on]
    ok = len(owners) == 1 and (not want or owners == [want])
    found = _finding(item, ok, f"{observed} -> owners: {', '.join(owners) or 'none'}", expected, fix)
    return [replace(found, urn=stack_urn)]


def _replicas(cfg: Settings, ctx: StackContext) -> int:
    value = cfg.get("timeSlicingReplicas") or lab_setting(ctx, "timeSlicingReplicas") or 1
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 1


def checklist_outputs(resources: Sequence[Res], cfg: Settings) -> tuple[dict[str, Any], str | None]:
    """The stack exports for :func:`gpulab.checklist.evaluate`, with pack-config overrides
    (``expectedGpus`` -> host GPU count, ``hostDriverVersion``) applied."""
    outputs, urn = _stack_outputs(resources)
    outputs = {k: (UNKNOWN if has_unknown(v) else v) for k, v in outputs.items()}
    if cfg.get("expectedGpus") is not None:
        outputs[out.HOST_GPU_COUNT] = int(cfg["expectedGpus"])
    if cfg.get("hostDriverVersion"):
        outputs[out.HOST_DRIVER_VERSION] = str(cfg["hostDriverVersion"])
    return outputs, urn


def checklist_check(item_id: str) -> StackCheck:
    """The stack check for one :mod:`gpulab.checklist` item."""

    def check(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
        outputs, urn = checklist_outputs(resources, cfg)
        profile = lab_setting(ctx, "profile") or "gpu-lab"
        items = {
            i.id: i
            for i in checklist.evaluate(outputs, time_slicing_replicas=_replicas(cfg, ctx), profile=profile)
        }
        it = items[item_id]
        found = Finding(item_id, it.status, it.observed, it.expected, it.fix, urn, it.simulated)
        if not outputs:
            found = replace(found, status=NOT_EVALUATED, observed="the stack has no outputs yet")
        elif ctx.dry_run is True and it.status != NOT_EVALUATED:
            # A preview may still see the last deployment's outputs; they prove nothing now.
            found = replace(
                found, status=NOT_EVALUATED, observed=f"{checklist.KNOWN_AFTER_DEPLOYMENT} (preview)"
            )
        return [found]

    return check


# --- specs and adapters -------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """One policy: name, description, default level, config schema (defaults = expected
    values) and its check (resource or stack)."""

    name: str
    description: str
    level: EnforcementLevel
    kind: str  # "resource" | "stack"
    check: Callable[..., list[Finding]]
    properties: dict[str, dict[str, Any]] = field(default_factory=dict)

    def settings(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """Schema defaults overlaid with the pack config the engine gave this policy."""
        merged = {k: v["default"] for k, v in self.properties.items() if "default" in v}
        merged.update(dict(given or {}))
        merged.pop("enforcementLevel", None)
        return merged


def _emit(spec: Spec, findings: Sequence[Finding], urn: str, report: ReportViolation, args: Any) -> None:
    LEDGER.put(spec.name, urn, findings)
    failed = [f for f in findings if f.status == FAIL]
    for f in failed:
        report(f.message(), f.urn)
    unverified = [f for f in findings if f.status in UNVERIFIED]
    if not failed and unverified:
        args.not_applicable("; ".join(f.message() for f in unverified))


def validate_resource(spec: Spec, args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Run a resource ``spec`` on ``args`` (see the module docstring for what is reported)."""
    props = plain(args.props) or {}
    findings = spec.check(
        args.resource_type, props, spec.settings(args.get_config()), stack_context.current()
    )
    _emit(spec, [replace(f, urn=args.urn) for f in findings], args.urn, report, args)


def validate_stack(spec: Spec, args: StackValidationArgs, report: ReportViolation) -> None:
    """Run a stack ``spec`` on ``args``."""
    findings = spec.check(stack_view(args), spec.settings(args.get_config()), stack_context.current())
    _emit(spec, findings, "stack", report, args)


def validate_unverified(args: StackValidationArgs, report: ReportViolation) -> None:
    """``checklist-unverified``: one advisory line per finding that is neither pass nor fail."""
    for f in LEDGER.unverified([s.name for s in SPECS]):
        report(f.message(), f.urn)


# JSON-schema fragments for the pack config.
_STR = {"type": "string"}
_BOOL = {"type": "boolean"}


def _int(minimum: int, default: int | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if default is not None:
        schema["default"] = default
    return schema


MANDATORY: Final = EnforcementLevel.MANDATORY
SPECS: Final[tuple[Spec, ...]] = (
    Spec(
        "gpu-operator-chart-pinned",
        "Pin the GPU Operator chart to one exact version.",
        MANDATORY,
        "resource",
        check_chart_pinned,
        {
            "chartVersion": {
                **_STR,
                "default": "",
                "description": "the exact version required; empty: any exact version",
            }
        },
    ),
    Spec(
        "gpu-operator-driver-disabled",
        "Leave the driver to the host: set driver.enabled=false on the GPU Operator release.",
        MANDATORY,
        "resource",
        check_driver_disabled,
        {"hostProvidesDriver": {**_BOOL, "default": True}},
    ),
    Spec(
        "gpu-operator-namespace",
        "Install the GPU Operator into its own namespace, gpu-operator.",
        MANDATORY,
        "resource",
        check_operator_namespace,
        {"namespace": {**_STR, "default": "gpu-operator"}},
    ),
    Spec(
        "gpu-operator-chart-source",
        "Take the GPU Operator chart from NVIDIA's repository or a local chart directory.",
        MANDATORY,
        "resource",
        check_chart_source,
        {
            "repositories": {"type": "array", "items": _STR, "default": [NVIDIA_HELM_REPO]},
            "allowLocalPath": {**_BOOL, "default": True},
        },
    ),
    Spec(
        "toolkit-fits-runtime",
        "Configure the operator's container toolkit for the node's container runtime.",
        MANDATORY,
        "resource",
        check_toolkit_runtime,
        {"clusterRuntime": {"type": "string", "enum": list(RUNTIMES)}},
    ),
    Spec(
        "smoke-pod-gpu-limit",
        "Request nvidia.com/gpu in the smoke Pod's limits.",
        MANDATORY,
        "resource",
        check_smoke_gpu_limit,
        {"podName": {**_STR, "default": "gpu-smoke"}},
    ),
    Spec(
        "smoke-pod-restart-never",
        "Run the smoke Pod once: set restartPolicy Never.",
        MANDATORY,
        "resource",
        check_smoke_restart_never,
        {"podName": {**_STR, "default": "gpu-smoke"}},
    ),
    Spec(
        "smoke-pod-image-pinned",
        "Pin the smoke Pod's image by a tag other than latest, or by digest.",
        MANDATORY,
        "resource",
        check_smoke_image_pinned,
        {"podName": {**_STR, "default": "gpu-smoke"}},
    ),
    Spec(
        "minikube-start-gpu",
        "Start minikube with --gpus, the docker driver and the docker container runtime.",
        MANDATORY,
        "resource",
        check_minikube_gpu,
        {"gpus": {"type": "array", "items": _STR, "default": ["all", "nvidia", "nvidia.com"]}},
    ),
    Spec(
        "minikube-start-resources",
        "Give the minikube node at least 4 CPUs and 8 GiB of memory.",
        MANDATORY,
        "resource",
        check_minikube_resources,
        {"minCpus": _int(1, labconfig.MIN_CPUS), "minMemoryMiB": _int(1, labconfig.MIN_MEMORY_MIB)},
    ),
    Spec(
        "no-plaintext-secrets",
        "Keep secret config values out of command lines and Helm values.",
        MANDATORY,
        "resource",
        check_no_plaintext_secrets,
        {"minSecretLength": _int(1, 6)},
    ),
    Spec(
        "single-device-plugin-owner",
        "Let exactly one component own the device plugin: minikube's addon or the operator's.",
        MANDATORY,
        "stack",
        check_single_owner,
        {"owner": {"type": "string", "enum": list(labconfig.DEVICE_PLUGIN_OWNERS)}},
    ),
    Spec(
        "smoke-image-cuda-fits-host",
        "Use a smoke image whose CUDA version the host driver supports.",
        MANDATORY,
        "stack",
        check_cuda_fits,
        {
            "hostMaxCuda": {**_STR, "description": "the host's max CUDA (X.Y); overrides the host probe"},
            "hostDriverVersion": {
                **_STR,
                "description": "the host's driver version; overrides the host probe",
            },
            "podName": {**_STR, "default": "gpu-smoke"},
        },
    ),
    Spec(
        "device-plugin-stable",
        "Keep the device-plugin pods Running with no restarts through the readiness gate.",
        MANDATORY,
        "stack",
        checklist_check("device-plugin-stable"),
    ),
    Spec(
        "allocatable-matches-gpus",
        "Make allocatable nvidia.com/gpu equal the host's GPUs times the time-slicing replicas.",
        MANDATORY,
        "stack",
        checklist_check("allocatable-matches-gpus"),
        {
            "timeSlicingReplicas": {
                **_int(1),
                "description": "default: the stack's gpu-lab:timeSlicingReplicas, else 1",
            },
            "expectedGpus": {
                **_int(0),
                "description": "physical GPUs expected; overrides the host probe's count",
            },
        },
    ),
    Spec(
        "driver-version-matches",
        "Make the smoke Pod's driver version equal the host's.",
        MANDATORY,
        "stack",
        checklist_check("driver-version-matches"),
        {"hostDriverVersion": {**_STR, "description": "the host's driver version; overrides the host probe"}},
    ),
    Spec(
        "events-scheduled-and-pulled",
        "Show the smoke Pod scheduled and its image pulled in its events.",
        MANDATORY,
        "stack",
        checklist_check("events-scheduled-and-pulled"),
    ),
    Spec(
        "baseline-card-complete",
        "Record every required field of the baseline card in the stack outputs.",
        MANDATORY,
        "stack",
        checklist_check("baseline-card-complete"),
    ),
)

UNVERIFIED_POLICY: Final = "checklist-unverified"
UNVERIFIED_DESCRIPTION: Final = (
    "List every check this run could not verify: not evaluated (e.g. known after deployment) "
    "or not observable in the simulated lab."
)


def _schema(spec: Spec) -> PolicyConfigSchema | None:
    return PolicyConfigSchema(properties=spec.properties) if spec.properties else None


def build_policy(spec: Spec) -> Policy:
    """The pulumi-policy object for ``spec``."""
    if spec.kind == "resource":
        return ResourceValidationPolicy(
            name=spec.name,
            description=spec.description,
            validate=lambda args, report: validate_resource(spec, args, report),
            enforcement_level=spec.level,
            config_schema=_schema(spec),
        )
    return StackValidationPolicy(
        name=spec.name,
        description=spec.description,
        validate=lambda args, report: validate_stack(spec, args, report),
        enforcement_level=spec.level,
        config_schema=_schema(spec),
    )


def build_policies() -> list[Policy]:
    """Every policy in pack order; ``checklist-unverified`` last (it reads the others' findings)."""
    return [build_policy(s) for s in SPECS] + [
        StackValidationPolicy(
            name=UNVERIFIED_POLICY,
            description=UNVERIFIED_DESCRIPTION,
            validate=validate_unverified,
            enforcement_level=EnforcementLevel.ADVISORY,
        )
    ]


def spec(name: str) -> Spec:
    """The :class:`Spec` called ``name`` (KeyError naming the known ones otherwise)."""
    for s in SPECS:
        if s.name == name:
            return s
    raise KeyError(f"no policy {name!r}; known: {', '.join(s.name for s in SPECS)}")
