"""Edge of the program: stack config in, preflight before any resource is registered.

``load_config`` reads every ``gpu-lab:*`` key the engine handed the program and parses
it once, with every variant of the registry (variants.registry.parse_config); the entry point
then asks the registry for the chosen variant and passes it in. ``preflight_or_raise`` checks
what that variant needs on this machine. Both raise before a single resource exists, so a bad
value or a missing host piece leaves nothing half-made.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any, Final

from pulumi.runtime.config import CONFIG

from components import benchmark
from gpulab.config import device_plugin as plugin_config
from gpulab.config import dra as dra_config
from gpulab.config import mig
from gpulab.config.lab import ConfigError, LabConfig, getter
from gpulab.config.variant import Getter
from gpulab.core import names
from gpulab.core.findings import Finding
from gpulab.host import preflight
from gpulab.host.facts import HostFacts
from gpulab.host.preflight import PreflightError, raise_on_failures
from gpulab.host.probe import probe_capture, probe_host, with_node_runtime
from gpulab.kube import takeover
from gpulab.kube.client import load_clients
from gpulab.kube.takeover import Planned
from variants import base
from variants.base import Variant
from variants.registry import parse_config

#: The project directory (where the variants' helpers keep their files, ``.state/``).
ROOT: Final = Path(__file__).resolve().parents[1]

#: What the program says when SIGINT stops it, in place of a Python traceback.
INTERRUPTED: Final = (
    "gpu-lab: the program was stopped by SIGINT (Ctrl-C, or the engine shutting it down after a "
    "step failed); the engine's messages above name the cause"
)


def _stop_quietly(signum: int, frame: FrameType | None) -> None:
    sys.stdout.flush()
    sys.stderr.write(INTERRUPTED + "\n")
    sys.stderr.flush()
    os._exit(1)


def stop_quietly_on_interrupt() -> None:
    """Make SIGINT end the program with one line and exit code 1 instead of a traceback.

    The engine stops a plugin with SIGINT to its whole process group, the language host's
    with the program in it (pulumi/pulumi v3.274.1 sdk/go/common/resource/plugin/plugin.go: the
    plugin is started with ``cmdutil.RegisterProcessGroup`` and killed with
    ``cmdutil.InterruptChildren``, ``kill(-pid, SIGINT)`` in sdk/go/common/util/cmdutil/
    child_unix.go, SIGKILL 5 s later), and a terminal's Ctrl-C reaches the program the same way. The
    Python SDK installs no SIGINT handler, so the program died of a ``KeyboardInterrupt``
    raised wherever it was, often inside its handling of "Resource monitor has terminated",
    and that chained traceback buried the step's own error above it. Ending at once changes
    nothing else: the program would end all the same, and the engine has its own record.
    """
    signal.signal(signal.SIGINT, _stop_quietly)


def stack_config() -> Getter:
    """The stack's ``gpu-lab:*`` config as read, each key's value or its default (Pulumi.yaml):
    what a variant's verbs read (gpulab.config.lab.getter)."""
    return getter({k: str(v) for k, v in dict(CONFIG.get()).items()})


def load_config() -> LabConfig:
    """The stack's ``gpu-lab:*`` config, validated (raises gpulab.config.lab.ConfigError)."""
    import pulumi

    raw: dict[str, Any] = dict(CONFIG.get())
    try:
        return parse_config({k: str(v) for k, v in raw.items()})
    except ConfigError as exc:
        # The same problems, with the fix naming the stack that failed.
        raise ConfigError(exc.problems, stack=pulumi.get_stack()) from None


def _stack() -> str:
    """The stack being deployed, for fixes printed to run as they are (``<stack>`` outside one)."""
    import pulumi

    try:
        return pulumi.get_stack() or "<stack>"
    except Exception:  # not inside a Pulumi program (unit tests call the checks directly)
        return "<stack>"


def chart_findings(
    repo: str,
    chart_version: str,
    resolve: Any = None,
    fetch: Any = None,
    chart: str = "gpu-operator",
    path_env: str = "GPULAB_CHART_PATH",
    path_key: str = "chartPath",
) -> list[Finding]:
    """A failed Finding when the chart repository cannot be reached (offline machines).

    Checked before anything is created; otherwise the cluster would be made first and the
    Helm release would fail later with "not a valid chart repository". ``resolve``
    (host -> None, raises OSError) and ``fetch`` (url -> None, raises OSError) are the
    name lookup and the HTTPS request, injectable for tests. ``chart``, ``path_env`` and
    ``path_key`` name the chart and its offline override in the fix (the GPU Operator's by
    default; NVIDIA's device plugin chart with ``gpuStack: device-plugin``).
    """
    import socket
    import urllib.parse
    import urllib.request

    def default_resolve(host: str) -> None:
        socket.getaddrinfo(host, 443)

    def default_fetch(url: str) -> None:
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=5):
            pass

    resolve = resolve or default_resolve
    fetch = fetch or default_fetch
    if not repo.startswith("https://"):
        return []  # oci:// registries: helm itself reports what it cannot pull
    host = urllib.parse.urlparse(repo).hostname or ""
    try:
        resolve(host)
        fetch(repo.rstrip("/") + "/index.yaml")
    except OSError as exc:
        return [
            preflight.Finding(
                "chart-repository",
                False,
                f"the chart repository {repo} cannot be reached ({exc})",
                f"offline? point the lab at an unpacked chart: {path_env}=/path/to/{chart} "
                f"make lab (or `scripts/pulumi config set --stack {_stack()} gpu-lab:{path_key} "
                f"/path/to/{chart}`); get "
                f"it on a connected machine with `helm pull {chart} --repo {repo} --version "
                f"{chart_version} --untar`",
            )
        ]
    return []


def preflight_or_raise(cfg: LabConfig, facts: HostFacts | None, variant: Variant) -> None:
    """Stop before anything is created when this machine cannot build ``cfg``'s lab.

    ``hostProbe: off`` skips the host checks too: it is the planning mode (preview a GPU
    stack on a machine that is not the GPU host). Otherwise: the variant's tools, the chart
    repository (unless the chart is local), and the variant's host checks (minikube's Docker
    and resources, kind's NVIDIA runtime settings, k3s's root and init system; an existing
    cluster is checked by config and by its census command).

    Raises:
        PreflightError: every failed check with its cause and first fix.
    """
    if cfg.host_probe == "off":
        return
    failed: list[Finding] = base.missing_tools(variant.spec)
    plugin = cfg.device_plugin_chart
    if cfg.fleet.device_plugin and plugin.path is None:  # NVIDIA's device plugin chart alone
        failed += chart_findings(
            plugin.repo,
            plugin.version,
            chart=plugin_config.CHART,
            path_env=plugin_config.CHART_PATH_ENV,
            path_key="devicePluginChartPath",
        )
    elif cfg.fleet.dra:  # NVIDIA's DRA driver chart
        if cfg.dra_chart.path is None:
            failed += chart_findings(
                cfg.dra_chart.repo,
                cfg.dra_chart.version,
                chart=dra_config.CHART,
                path_env=dra_config.CHART_PATH_ENV,
                path_key="draChartPath",
            )
    elif cfg.operator.chart_path is None and not cfg.fleet.per_node:  # found: no chart at all
        failed += chart_findings(cfg.operator.chart_repo, cfg.operator.chart_version)
    failed += [f for f in variant.preflight(cfg) if not f.ok]
    raise_on_failures(failed)


def probe_and_preflight(cfg: LabConfig, variant: Variant) -> HostFacts | None:
    """Read the host's GPU facts and run ``variant``'s preflight; report every failure at once.

    Returns the facts (None with ``hostProbe: off``).

    Raises:
        PreflightError: the probe's failure (e.g. no nvidia-smi) together with every other
            failed check (tools, Docker, resources), each with its first fix.
        gpulab.host.nvsmi.NvidiaSmiParseError: nvidia-smi printed something unparseable.
    """
    failed: list[Finding] = []
    facts: HostFacts | None = None
    mode = cfg.effective_host_probe
    try:
        if mode == "nvidia-smi":
            # This host: NVML where it loads and answers, nvidia-smi as the fallback.
            facts = probe_host()
            # The node below NVML where this host is the node (a cluster the lab makes here);
            # an existing cluster's nodes are other machines (gpulab.host.node_runtime).
            if variant.spec.owns_cluster:
                facts = with_node_runtime(facts)
        elif mode == "capture":
            facts = probe_capture(cfg.effective_capture)
    except PreflightError as exc:
        failed += exc.failures
    try:
        preflight_or_raise(cfg, facts, variant)
    except PreflightError as exc:
        failed += exc.failures
    failed += mig_failures(cfg, facts, variant)
    failed += takeover_failures(cfg, variant)
    raise_on_failures(failed)
    return facts


def planned_objects(cfg: LabConfig) -> list[Planned]:
    """Every named object ``cfg``'s lab creates itself on the cluster (gpulab.kube.takeover.Planned),
    each with its choices other than adopting it: the GPU stack's namespace and Helm release
    (the operator's, or NVIDIA's device plugin chart's; none with ``gpuStack: found``),
    ``labNamespace`` where the lab writes its Pods there, the simulated device-plugin DaemonSet,
    the smoke Pod and, when on, the compute Pod and the benchmark Pod with its ConfigMap. The
    objects a chart renders are Helm's to guard (gpulab.kube.takeover's docstring)."""
    stack = _stack()
    found = (
        "gpuStack: found, the lab checks the GPU stack installed there and creates none of it "
        f"(scripts/pulumi config set --stack {stack} gpu-lab:gpuStack found)"
    )
    planned: list[Planned] = []
    if cfg.fleet.per_node:
        where = cfg.fleet.namespace
        rename = f"another name: scripts/pulumi config set --stack {stack} gpu-lab:labNamespace <name>"
        planned.append(Planned("Namespace", where, None, (rename,)))
    else:
        where, rename = names.WORKLOAD_NAMESPACE, ""
    stacks = []
    if cfg.fleet.device_plugin:
        stacks.append((plugin_config.NAMESPACE, plugin_config.RELEASE))
    elif not cfg.fleet.per_node:
        stacks.append((names.OPERATOR_NAMESPACE, names.OPERATOR_RELEASE))
    for ns, release in stacks:
        fixed = f"{found} (the lab has no other name for it: {ns} is fixed)"
        planned.append(Planned("Namespace", ns, None, (fixed,)))
        uninstall = f"uninstall it if it is a leftover of yours: helm -n {ns} uninstall {release}"
        planned.append(Planned(takeover.RELEASE_KIND, release, ns, (fixed, uninstall)))
    if cfg.simulated and stacks and not cfg.fleet.device_plugin:
        gone = f"scripts/kubectl -n {names.OPERATOR_NAMESPACE} delete daemonset {names.DEVICE_PLUGIN_DS}"
        planned.append(Planned("DaemonSet", names.DEVICE_PLUGIN_DS, names.OPERATOR_NAMESPACE, (found, gone)))
    pods = [("Pod", names.SMOKE_POD)]
    pods += [("Pod", names.COMPUTE_POD)] if cfg.compute_check else []
    pods += [("ConfigMap", benchmark.CONFIG_MAP), ("Pod", benchmark.POD_NAME)] if cfg.benchmark_pod else []
    for kind, name in pods:
        gone = (
            f"delete it if it is a leftover of yours: scripts/kubectl -n {where} delete {kind.lower()} {name}"
        )
        planned.append(Planned(kind, name, where, tuple(f for f in (rename, gone) if f)))
    return planned


def takeover_failures(
    cfg: LabConfig, variant: Variant, read: Any = None, get: Getter | None = None
) -> list[Finding]:
    """Failed findings for every object of :func:`planned_objects` that exists on a cluster the
    lab does not own and is not the lab's, and for every ``adoptExisting`` item that cannot be
    adopted (gpulab.kube.takeover.conflicts); ``[]`` where the lab makes its cluster
    (``VariantSpec.owns_cluster``: nothing of anyone else's is in it). The cluster is read with
    the variant's kubeconfig (``Variant.kubeconfig``; ``get`` reads the stack's config, default
    :func:`stack_config`). ``read(api, planned)``: the reader (default
    gpulab.kube.takeover.read), injectable for tests. A cluster that cannot be read is a failed
    finding too: nothing may be created on it unchecked."""
    if variant.spec.owns_cluster:
        return []
    try:
        kubeconfig = variant.kubeconfig(cfg.profile, ROOT, get or stack_config())
        if kubeconfig is None:
            return []
        api = load_clients(kubeconfig)
        planned = planned_objects(cfg)
        reader = read or takeover.read
        found = {p.ref: _readable(reader, api, p) for p in planned}
    # The kubeconfig's GpuLabError, the client's ApiException, urllib3's connection errors: no
    # common base worth importing, and each is reported, never passed over.
    except Exception as exc:
        return [_unread(f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}")]
    return takeover.conflicts(planned, lambda p: found[p.ref], cfg.adopt_existing, _stack())


def _readable(reader: Any, api: Any, p: Planned) -> Any:
    """``reader(api, p)``, or None when this identity may not read ``p`` (HTTP 403): a guest's
    lab (``gpuStack: found``) is then told by its access check which permission it lacks
    (components/fleet.py, ``python -m gpulab.kube access``, SelfSubjectAccessReview), before
    anything is created, rather than here as an unreadable cluster. Any other failure raises."""
    from kubernetes.client.rest import ApiException

    try:
        return reader(api, p)
    except ApiException as exc:
        if exc.status == 403:
            return None
        raise


def _unread(cause: str) -> Finding:
    return preflight.Finding(
        takeover.CHECK,
        False,
        f"the cluster could not be read to find the objects the lab would take over ({cause})",
        "kubectl --kubeconfig <gpu-lab:kubeconfigPath> --context <gpu-lab:kubeContext> get namespaces "
        "must work from this machine; check both keys",
    )


def mig_plan(cfg: LabConfig, facts: HostFacts | None, physical: int | None) -> mig.Plan:
    """The lab's MIG plan (gpulab.config.mig.plan) from config and the host facts: what the gate
    expects, what the smoke Pod requests, and the contradictions preflight reports.
    ``physical``: the GPUs allocatable must add up to (the variant's expectation)."""
    probed = None
    if facts is not None and facts.mig_devices is not None:
        probed = mig.devices_by_profile(facts.mig_devices)
    return mig.plan(
        cfg.gpu.mig_strategy,
        physical or None,
        cfg.operator.time_slicing_replicas,
        gpu_mig_modes=[g.mig_mode for g in facts.gpus] if facts else (),
        configured=cfg.gpu.expected_mig,
        probed=probed,
        smoke_resource=cfg.gpu.smoke_resource,
        gpu_resource=cfg.operator.gpu_resource,
    )


def mig_failures(cfg: LabConfig, facts: HostFacts | None, variant: Variant) -> list[Finding]:
    """Failed MIG findings: each GPU's MIG mode against ``migStrategy`` (gpulab.config.mig.mig_findings),
    and the plan's contradictions (``mig-plan``), e.g. ``mixed`` with no MIG resource known
    for the smoke Pod."""
    found: list[Finding] = []
    if facts is not None:
        found += mig.mig_findings(facts.gpus, cfg.gpu.mig_strategy, facts.mig_devices)
    physical = variant.gpu_expectation(cfg, facts).physical
    found += [
        preflight.Finding("mig-plan", False, cause, fix)
        for cause, fix in mig_plan(cfg, facts, physical).problems
    ]
    return [f for f in found if not f.ok]


def simulated_fields(cfg: LabConfig, variant: Variant) -> list[str]:
    """Output keys whose values are simulated in this lab (empty for a real GPU lab): the
    variant decides (variants/<name>/)."""
    return list(variant.spec.simulated_fields) if cfg.simulated else []
