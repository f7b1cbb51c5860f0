"""Edge of the program: stack config in, preflight before any resource is registered.

``load_config`` reads every ``gpu-lab:*`` key the engine handed the program and parses
it once (gpulab.config.parse_config). ``preflight_or_raise`` checks what the chosen
variant needs on this machine. Both raise before a single resource exists, so a bad
value or a missing host piece leaves nothing half-made.
"""

from __future__ import annotations

import shutil
from typing import Any

from pulumi.runtime.config import CONFIG

from gpulab import outputs as out
from gpulab.config import LabConfig, parse_config
from gpulab.preflight import Finding, PreflightError
from gpulab.probe import HostFacts


def load_config() -> LabConfig:
    """The stack's ``gpu-lab:*`` config, validated (raises gpulab.config.ConfigError)."""
    raw: dict[str, Any] = dict(CONFIG.get())
    return parse_config({k: str(v) for k, v in raw.items()})


#: Binaries each variant runs on this machine, and where they come from.
REQUIRED_TOOLS = {
    "minikube": (("minikube", "install minikube >= 1.32"), ("kubectl", "install kubectl")),
    "sim": (
        ("kwokctl", "run `make toolchain` (builds the simulated control plane)"),
        ("kube-apiserver", "run `make toolchain`"),
        ("etcd", "run `make toolchain`"),
        ("kwok", "run `make toolchain`"),
        ("kubectl", "run `make toolchain`"),
    ),
    "kind": (
        ("kind", "install kind >= v0.30.0 (https://kind.sigs.k8s.io/docs/user/quick-start/)"),
        ("docker", "install Docker Engine and the NVIDIA container toolkit"),
        ("nvidia-ctk", "install nvidia-container-toolkit (it injects the GPUs into the kind node)"),
    ),
    # k3s: the installer brings everything; existing: the lab talks to the API server itself.
}


def tool_findings(cluster: str, which: Any = shutil.which) -> list[Finding]:
    """One failed Finding per binary the variant needs that is not on PATH."""
    return [
        Finding(f"tool-{tool}", False, f"{tool} is not on PATH (needed by the {cluster} lab)", fix)
        for tool, fix in REQUIRED_TOOLS.get(cluster, ())
        if which(tool) is None
    ]


def chart_findings(repo: str, chart_version: str, resolve: Any = None, fetch: Any = None) -> list[Finding]:
    """A failed Finding when the chart repository cannot be reached (offline machines).

    Checked before anything is created; otherwise the cluster would be made first and the
    Helm release would fail later with "not a valid chart repository". ``resolve``
    (host -> None, raises OSError) and ``fetch`` (url -> None, raises OSError) are the
    name lookup and the HTTPS request, injectable for tests.
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
            Finding(
                "chart-repository",
                False,
                f"the chart repository {repo} cannot be reached ({exc})",
                "offline? point the lab at an unpacked chart: GPULAB_CHART_PATH=/path/to/gpu-operator "
                "make lab (or `scripts/pulumi config set gpu-lab:chartPath /path/to/gpu-operator`); get "
                f"it on a connected machine with `helm pull gpu-operator --repo {repo} --version "
                f"{chart_version} --untar`",
            )
        ]
    return []


def preflight_or_raise(cfg: LabConfig, facts: HostFacts | None) -> None:
    """Stop before anything is created when this machine cannot build ``cfg``'s lab.

    ``hostProbe: off`` skips the host checks too: it is the planning mode (preview a GPU
    stack on a machine that is not the GPU host). Per variant: minikube's Docker and
    resources (gpulab.host_checks), kind's NVIDIA runtime settings (gpulab.kind_ctl), k3s's
    root and init system (gpulab.k3s_ctl); an existing cluster is checked by config (its
    kubeconfig and context) and by its census command (the API server answers).

    Raises:
        PreflightError: every failed check with its cause and first fix.
    """
    if cfg.host_probe == "off":
        return
    failed = tool_findings(cfg.cluster)
    if cfg.operator.chart_path is None:
        failed += chart_findings(cfg.operator.chart_repo, cfg.operator.chart_version)
    if cfg.cluster == "minikube":
        from gpulab import host_checks

        failed += [f for f in host_checks.minikube_host_findings(cfg) if not f.ok]
    if cfg.cluster == "kind" and not failed:
        from gpulab import kind_ctl

        failed += [f for f in kind_ctl.host_findings() if not f.ok]
    if cfg.cluster == "k3s":
        from gpulab import k3s_ctl

        # Root, an init system, and no foreign k3s of another version (the installer
        # would change it); the kubeconfig /etc/rancher/k3s/k3s.yaml is root-only.
        failed += [f for f in k3s_ctl.host_findings(cfg.k3s_version) if not f.ok]
    if failed:
        raise PreflightError(failed)


def probe_and_preflight(cfg: LabConfig) -> HostFacts | None:
    """Read the host's GPU facts and run the variant's preflight; report every failure at once.

    Returns the facts (None with ``hostProbe: off``).

    Raises:
        PreflightError: the probe's failure (e.g. no nvidia-smi) together with every other
            failed check (tools, Docker, resources), each with its first fix.
        gpulab.nvsmi.NvidiaSmiParseError: nvidia-smi printed something unparseable.
    """
    from gpulab.probe import probe_capture, probe_nvidia_smi

    failed: list[Finding] = []
    facts: HostFacts | None = None
    mode = cfg.effective_host_probe
    try:
        if mode == "nvidia-smi":
            facts = probe_nvidia_smi()
        elif mode == "capture":
            facts = probe_capture(cfg.effective_capture)
    except PreflightError as exc:
        failed += exc.failures
    try:
        preflight_or_raise(cfg, facts)
    except PreflightError as exc:
        failed += exc.failures
    if failed:
        raise PreflightError(failed)
    return facts


def simulated_fields(cfg: LabConfig) -> list[str]:
    """Output keys whose values are simulated in this variant (empty for a real GPU lab).

    An existing cluster with ``simulatedOperands``: the host facts are not simulated (there
    are none, or they are this host's), but everything an operator process would have
    produced is: the device plugin and its registration, ClusterPolicy status, the smoke
    Pod's execution and log.
    """
    if not cfg.simulated:
        return []
    if cfg.cluster == "existing":
        return [
            out.ALLOCATABLE_GPUS,
            out.CAPACITY_GPUS,
            out.CLUSTER_POLICY_STATE,
            out.DEVICE_PLUGIN_PODS,
            out.SMOKE_PHASE,
            out.SMOKE_DRIVER_VERSION,
            out.SMOKE_CUDA_VERSION,
        ]
    return [
        out.HOST_GPU_COUNT,
        out.HOST_GPU_MODELS,
        out.HOST_GPUS,
        out.HOST_DRIVER_VERSION,
        out.HOST_MAX_CUDA,
        out.ALLOCATABLE_GPUS,
        out.CAPACITY_GPUS,
        out.CLUSTER_POLICY_STATE,
        out.DEVICE_PLUGIN_PODS,
        out.SMOKE_PHASE,
        out.SMOKE_DRIVER_VERSION,
        out.SMOKE_CUDA_VERSION,
    ]
