"""The lab's configuration: parsed once, validated, frozen.

``parse_config`` takes the raw string values of the ``gpu-lab:*`` stack config (as the
Pulumi engine hands them to the program) and returns a :class:`LabConfig`, or raises
:class:`ConfigError` listing every invalid key with its value and what is allowed. The
program calls it before registering any resource, so a bad value never leaves a half-made
lab. Defaults live here only; ``Pulumi.yaml`` documents the same keys and defaults, and a
unit test keeps the two in step.

No Pulumi import here: this module is tested without the engine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

NAMESPACE: Final = "gpu-lab"
CLUSTER_KINDS: Final = ("minikube", "sim", "kind", "k3s", "existing")
DEVICE_PLUGIN_OWNERS: Final = ("operator", "minikube-addon")
HOST_PROBES: Final = ("auto", "nvidia-smi", "capture", "off")
#: Captures shipped in gpulab/captures, selectable with ``hostProbe: capture``.
CAPTURES: Final = ("h200-1gpu", "h200-2gpu")
#: Anything interpolated into a command line must match this (no spaces, quotes, `$`, `;`).
SAFE_NAME: Final = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")
SAFE_TOKEN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,254}$")
CHART_VERSION: Final = re.compile(r"^v\d+\.\d+\.\d+$")
K8S_VERSION: Final = re.compile(r"^v1\.\d+\.\d+$")
#: A k3s release as the installer's INSTALL_K3S_VERSION takes it, e.g. v1.34.1+k3s1.
K3S_VERSION: Final = re.compile(r"^v1\.\d+\.\d+\+k3s\d+$")
#: A kubeconfig context name: EKS (arn:aws:eks:...:cluster/x), GKE (gke_p_z_x), kind-x, ...
KUBE_CONTEXT: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+=-]{0,252}$")
#: A file path without whitespace, quotes or shell metacharacters.
SAFE_PATH: Final = re.compile(r"^[A-Za-z0-9._/~+@=:-]{1,4096}$")
#: Oldest chart whose ClusterPolicy takes ``cdi.nriPluginEnabled`` as the way to inject GPUs
#: (RKE2's GPU Operator docs recommend it from v26.3.x; it needs containerd >= 2.1).
MIN_NRI_CHART: Final = (26, 3, 0)
#: kind v0.30.0's node image for Kubernetes v1.34.0 (kind release notes), pinned by digest.
DEFAULT_KIND_NODE_IMAGE: Final = (
    "kindest/node:v1.34.0@sha256:7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a"
)
# registry/repo:tag or registry/repo@sha256:<64 hex>; "latest" is not a pin.
IMAGE: Final = re.compile(
    r"^(?P<repo>[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::\d+/[a-z0-9._/-]+)?)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)
#: Environment variable that points the chart at a local directory (offline CI and tests).
CHART_PATH_ENV: Final = "GPULAB_CHART_PATH"
DEFAULT_CHART_REPO: Final = "https://helm.ngc.nvidia.com/nvidia"
MIN_CPUS: Final = 4
MIN_MEMORY_MIB: Final = 8192


class ConfigError(ValueError):
    """Invalid stack configuration; ``problems`` holds one line per bad key."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"invalid gpu-lab configuration ({len(problems)} problem(s)); nothing was created:\n"
            f"{lines}\nFix with `scripts/pulumi config set gpu-lab:<key> <value>` or remove an unknown key "
            "with "
            "`scripts/pulumi config rm gpu-lab:<key>` (keys and defaults: Pulumi.yaml)."
        )


@dataclass(frozen=True)
class OperatorConfig:
    """GPU Operator chart settings.

    ``chart_path`` set means the chart is installed from that local directory (offline);
    otherwise from ``chart_repo`` at ``chart_version``. The booleans map to the chart's
    ``toolkit.enabled``, ``devicePlugin.enabled``, ``dcgmExporter.enabled``, ``nfd.enabled``
    and ``cdi.enabled``; ``driver.enabled`` is always false (the host provides the driver).
    """

    chart_version: str = "v26.7.0"
    chart_repo: str = DEFAULT_CHART_REPO
    chart_path: str | None = None
    toolkit: bool = True
    device_plugin: bool = True
    dcgm_exporter: bool = True
    nfd: bool = True
    cdi: bool = True
    time_slicing_replicas: int = 1
    timeout_seconds: int = 600
    #: The cluster variant the chart goes into; decides the runtime-specific values
    #: (components/gpu_operator.py ``helm_values``).
    cluster: str = "minikube"
    #: ``cdi.nriPluginEnabled`` (k3s only, chart >= v26.3.0): inject GPUs through the NRI
    #: plugin instead of a containerd runtime handler.
    nri_plugin: bool = False


@dataclass(frozen=True)
class LabConfig:
    """The whole lab's settings (see Pulumi.yaml for each key's meaning).

    Units: ``memory_mib`` in MiB, every ``*_seconds`` in seconds.
    """

    cluster: str = "minikube"
    profile: str = "gpu-lab"
    cpus: int = 4
    memory_mib: int = 8192
    kubernetes_version: str = "v1.34.0"
    device_plugin_owner: str = "operator"
    host_probe: str = "auto"
    capture: str = "h200-1gpu"
    sim_gpus: int = 1
    smoke_image: str = "nvidia/cuda:12.4.1-base-ubuntu22.04"
    smoke_gpus: int = 1
    smoke_timeout_seconds: int = 300
    cluster_timeout_seconds: int = 600
    docker_selftest: bool = False
    #: Run the TFLOPS benchmark Pod (GPU labs only) in ``benchmark_image``.
    benchmark_pod: bool = False
    benchmark_image: str = "nvcr.io/nvidia/pytorch:25.01-py3"
    kind_node_image: str = DEFAULT_KIND_NODE_IMAGE
    k3s_version: str = "v1.34.1+k3s1"
    #: existing: the kubeconfig file (absolute) and the context in it (resolved: never empty
    #: once parsed for cluster=existing).
    kubeconfig_path: str = ""
    kube_context: str = ""
    #: existing: physical GPUs the cluster's GPU nodes should advertise in total.
    expected_gpus: int = 0
    remove_crds: bool = False
    simulated_operands: bool = False
    operator: OperatorConfig = field(default_factory=OperatorConfig)

    @property
    def simulated(self) -> bool:
        """True when the operator's work is simulated: the sim variant (kwok node, captured
        nvidia-smi), or an existing cluster with ``simulatedOperands`` (e.g. a kwok cluster)."""
        return self.cluster == "sim" or (self.cluster == "existing" and self.simulated_operands)

    @property
    def effective_host_probe(self) -> str:
        """``auto`` resolved: ``capture`` for the sim lab, ``off`` for an existing cluster
        (it is not this host), ``nvidia-smi`` elsewhere."""
        if self.host_probe != "auto":
            return self.host_probe
        if self.cluster == "sim":
            return "capture"
        return "off" if self.cluster == "existing" else "nvidia-smi"

    @property
    def smoke_runtime_class(self) -> str | None:
        """``runtimeClassName`` of the smoke Pod: ``nvidia`` where the node's containerd has
        the nvidia handler but runc stays the default (kind after the nvkind set-up, k3s,
        whose containerd adds the handler when it finds the runtime); None elsewhere, and
        with k3s's NRI plugin (it injects into any runtime class)."""
        if self.cluster == "kind" or (self.cluster == "k3s" and not self.operator.nri_plugin):
            return "nvidia"
        return None

    @property
    def effective_capture(self) -> str:
        """The capture the sim lab reads: the one matching ``simGpus`` unless set explicitly."""
        return self.capture


#: key -> (kind, default). Kinds: str, int, bool. Every key in Pulumi.yaml's config block.
SCHEMA: Final[dict[str, tuple[str, object]]] = {
    "cluster": ("str", LabConfig.cluster),
    "profile": ("str", LabConfig.profile),
    "cpus": ("int", LabConfig.cpus),
    "memoryMiB": ("int", LabConfig.memory_mib),
    "kubernetesVersion": ("str", LabConfig.kubernetes_version),
    "devicePluginOwner": ("str", LabConfig.device_plugin_owner),
    "hostProbe": ("str", LabConfig.host_probe),
    "capture": ("str", ""),
    "simGpus": ("int", LabConfig.sim_gpus),
    "smokeImage": ("str", LabConfig.smoke_image),
    "smokeGpus": ("int", LabConfig.smoke_gpus),
    "smokeTimeoutSeconds": ("int", LabConfig.smoke_timeout_seconds),
    "clusterTimeoutSeconds": ("int", LabConfig.cluster_timeout_seconds),
    "dockerSelfTest": ("bool", LabConfig.docker_selftest),
    "benchmarkPod": ("bool", LabConfig.benchmark_pod),
    "benchmarkImage": ("str", LabConfig.benchmark_image),
    "chartVersion": ("str", OperatorConfig.chart_version),
    "chartRepo": ("str", OperatorConfig.chart_repo),
    "chartPath": ("str", ""),
    "toolkit": ("bool", OperatorConfig.toolkit),
    "devicePlugin": ("bool", OperatorConfig.device_plugin),
    "dcgmExporter": ("bool", OperatorConfig.dcgm_exporter),
    "nfd": ("bool", OperatorConfig.nfd),
    "cdi": ("bool", OperatorConfig.cdi),
    "timeSlicingReplicas": ("int", OperatorConfig.time_slicing_replicas),
    "operatorTimeoutSeconds": ("int", OperatorConfig.timeout_seconds),
    "kindNodeImage": ("str", LabConfig.kind_node_image),
    "k3sVersion": ("str", LabConfig.k3s_version),
    "k3sNriPlugin": ("bool", OperatorConfig.nri_plugin),
    "kubeconfigPath": ("str", ""),
    "kubeContext": ("str", ""),
    "expectedGpus": ("int", LabConfig.expected_gpus),
    "removeCrds": ("bool", LabConfig.remove_crds),
    "simulatedOperands": ("bool", LabConfig.simulated_operands),
}


def _strip_ns(key: str) -> str:
    return key.split(":", 1)[1] if ":" in key else key


def parse_config(raw: Mapping[str, str], env: Mapping[str, str] | None = None) -> LabConfig:
    """Validate raw stack config into a :class:`LabConfig`.

    Args:
        raw: config values as strings, keys with or without the ``gpu-lab:`` namespace
            (``{"gpu-lab:cpus": "8"}``); keys of other namespaces are ignored.
        env: environment for the ``GPULAB_CHART_PATH`` override (default ``os.environ``).

    Raises:
        ConfigError: every problem at once: unknown keys, bad types, unsafe names, cpus < 4,
            memory < 8192 MiB, a chart version not ``vMAJOR.MINOR.PATCH``, an image without
            a pinned tag or digest, timeouts <= 0, an unknown cluster kind; a kind node image
            without a digest, a k3s version not ``v1.x.y+k3sN``; for ``existing`` a kubeconfig
            or context that cannot be used and ``expectedGpus < 1``; a variant-only key set
            for another variant (see :func:`_variant_settings`).
    """
    env = os.environ if env is None else env
    problems: list[str] = []
    values: dict[str, object] = {}
    for full_key, text in raw.items():
        if ":" in full_key and not full_key.startswith(NAMESPACE + ":"):
            continue
        key = _strip_ns(full_key)
        if key not in SCHEMA:
            problems.append(f"{NAMESPACE}:{key} is not a known key (known: {', '.join(sorted(SCHEMA))})")
            continue
        kind, _ = SCHEMA[key]
        try:
            values[key] = _coerce(kind, text)
        except ValueError:
            problems.append(f"{NAMESPACE}:{key}={text!r} is not a valid {kind}")

    def get(key: str) -> object:
        return values.get(key, SCHEMA[key][1])

    def pos_int(key: str) -> int:
        v = int(get(key))  # type: ignore[call-overload]
        if v <= 0:
            problems.append(f"{NAMESPACE}:{key}={v} must be > 0")
        return v

    cluster = str(get("cluster"))
    if cluster not in CLUSTER_KINDS:
        problems.append(f"{NAMESPACE}:cluster={cluster!r} is unknown; allowed: {', '.join(CLUSTER_KINDS)}")
    profile = str(get("profile"))
    if not SAFE_NAME.match(profile):
        problems.append(
            f"{NAMESPACE}:profile={profile!r} is not safe in a command line; allowed: "
            f"lowercase letters, digits and '-', 1-40 chars, pattern {SAFE_NAME.pattern}"
        )
    cpus = int(get("cpus"))  # type: ignore[call-overload]
    if cpus < MIN_CPUS:
        problems.append(f"{NAMESPACE}:cpus={cpus} is below {MIN_CPUS} (the operator's pods sit Pending)")
    memory = int(get("memoryMiB"))  # type: ignore[call-overload]
    if memory < MIN_MEMORY_MIB:
        problems.append(
            f"{NAMESPACE}:memoryMiB={memory} is below {MIN_MEMORY_MIB} (8 GiB, the chapter's minimum)"
        )
    kver = str(get("kubernetesVersion"))
    if not K8S_VERSION.match(kver):
        problems.append(f"{NAMESPACE}:kubernetesVersion={kver!r} must look like v1.MINOR.PATCH")
    owner = str(get("devicePluginOwner"))
    if owner not in DEVICE_PLUGIN_OWNERS:
        problems.append(
            f"{NAMESPACE}:devicePluginOwner={owner!r} is unknown; allowed: {', '.join(DEVICE_PLUGIN_OWNERS)}"
        )
    probe = str(get("hostProbe"))
    if probe not in HOST_PROBES:
        problems.append(f"{NAMESPACE}:hostProbe={probe!r} is unknown; allowed: {', '.join(HOST_PROBES)}")
    sim_gpus = pos_int("simGpus")
    if sim_gpus > 8:
        problems.append(f"{NAMESPACE}:simGpus={sim_gpus} is above 8 (one simulated node)")
    capture = str(get("capture")) or ("h200-2gpu" if sim_gpus >= 2 else "h200-1gpu")
    if capture not in CAPTURES:
        problems.append(f"{NAMESPACE}:capture={capture!r} is unknown; allowed: {', '.join(CAPTURES)}")
    image = str(get("smokeImage"))
    m = IMAGE.match(image)
    if not m:
        problems.append(
            f"{NAMESPACE}:smokeImage={image!r} is not a valid image reference "
            "(registry/repository:tag or @sha256:<digest>, no spaces or shell characters)"
        )
    elif not (m.group("tag") or m.group("digest")) or m.group("tag") == "latest":
        problems.append(
            f"{NAMESPACE}:smokeImage={image!r} is not pinned; use repo:tag (not latest) or "
            "repo@sha256:<digest>, e.g. nvidia/cuda:12.4.1-base-ubuntu22.04"
        )
    chart_version = str(get("chartVersion"))
    if not CHART_VERSION.match(chart_version):
        problems.append(
            f"{NAMESPACE}:chartVersion={chart_version!r} must be vMAJOR.MINOR.PATCH, e.g. v26.7.0"
        )
    chart_repo = str(get("chartRepo"))
    if not re.match(r"^(https://|oci://)[A-Za-z0-9./_-]+$", chart_repo):
        problems.append(f"{NAMESPACE}:chartRepo={chart_repo!r} must be an https:// or oci:// URL")
    chart_path = str(get("chartPath")) or env.get(CHART_PATH_ENV, "") or None
    if chart_path is not None and not os.path.isfile(os.path.join(chart_path, "Chart.yaml")):
        problems.append(
            f"chart path {chart_path!r} (from {NAMESPACE}:chartPath or ${CHART_PATH_ENV}) has no "
            "Chart.yaml; point it at an unpacked gpu-operator chart or unset it to use the repository"
        )
    device_plugin = bool(get("devicePlugin"))
    if owner == "operator" and not device_plugin:
        problems.append(
            f"{NAMESPACE}:devicePlugin=false with devicePluginOwner=operator: nothing would register "
            "nvidia.com/gpu; set devicePlugin=true or devicePluginOwner=minikube-addon"
        )
    if owner == "minikube-addon" and device_plugin:
        problems.append(
            f"{NAMESPACE}:devicePlugin=true with devicePluginOwner=minikube-addon: two device plugins "
            "would register nvidia.com/gpu; set devicePlugin=false"
        )
    if owner == "minikube-addon" and cluster != "minikube":
        problems.append(
            f"{NAMESPACE}:devicePluginOwner=minikube-addon needs cluster=minikube (got {cluster!r})"
        )
    variant = _variant_settings(cluster, values, get, problems, env, chart_version)
    replicas = pos_int("timeSlicingReplicas")
    smoke_gpus = pos_int("smokeGpus")
    if cluster == "sim" and smoke_gpus > sim_gpus * replicas:
        # The scheduler would leave the Pod Pending until smokeTimeoutSeconds: say it now.
        problems.append(
            f"{NAMESPACE}:smokeGpus={smoke_gpus} is more than the simulated node offers "
            f"(simGpus={sim_gpus} x timeSlicingReplicas={replicas}); lower smokeGpus or raise simGpus"
        )
    timeouts = {
        k: pos_int(k) for k in ("smokeTimeoutSeconds", "clusterTimeoutSeconds", "operatorTimeoutSeconds")
    }
    bench_image = str(get("benchmarkImage"))
    bm = IMAGE.match(bench_image)
    if not bm or not (bm.group("tag") or bm.group("digest")) or bm.group("tag") == "latest":
        problems.append(
            f"{NAMESPACE}:benchmarkImage={bench_image!r} is not pinned; use repo:tag (not latest) or "
            "repo@sha256:<digest>, e.g. nvcr.io/nvidia/pytorch:25.01-py3"
        )
    if bool(get("benchmarkPod")) and (cluster == "sim" or bool(get("simulatedOperands"))):
        problems.append(
            f"{NAMESPACE}:benchmarkPod=true in a simulated lab: there is no GPU to measure, and a "
            "simulated figure must never pass for a measured one; set benchmarkPod=false"
        )
    if problems:
        raise ConfigError(problems)
    return LabConfig(
        cluster=cluster,
        profile=profile,
        cpus=cpus,
        memory_mib=memory,
        kubernetes_version=kver,
        device_plugin_owner=owner,
        host_probe=probe,
        capture=capture,
        sim_gpus=sim_gpus,
        smoke_image=image,
        smoke_gpus=smoke_gpus,
        smoke_timeout_seconds=timeouts["smokeTimeoutSeconds"],
        cluster_timeout_seconds=timeouts["clusterTimeoutSeconds"],
        docker_selftest=bool(get("dockerSelfTest")),
        benchmark_pod=bool(get("benchmarkPod")),
        benchmark_image=bench_image,
        kind_node_image=str(get("kindNodeImage")),
        k3s_version=str(get("k3sVersion")),
        kubeconfig_path=variant["kubeconfig_path"],
        kube_context=variant["kube_context"],
        expected_gpus=int(get("expectedGpus")),  # type: ignore[call-overload]
        remove_crds=bool(get("removeCrds")),
        simulated_operands=bool(get("simulatedOperands")),
        operator=OperatorConfig(
            chart_version=chart_version,
            chart_repo=chart_repo,
            chart_path=os.path.abspath(chart_path) if chart_path else None,
            cluster=cluster,
            nri_plugin=bool(get("k3sNriPlugin")),
            # kind: the host's toolkit injects the GPUs (see _variant_settings).
            toolkit=bool(get("toolkit")) and cluster != "kind",
            device_plugin=device_plugin,
            dcgm_exporter=bool(get("dcgmExporter")),
            nfd=bool(get("nfd")),
            cdi=bool(get("cdi")),
            time_slicing_replicas=replicas,
            timeout_seconds=timeouts["operatorTimeoutSeconds"],
        ),
    )


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.lstrip("v").split("."))


def _variant_settings(
    cluster: str,
    values: Mapping[str, object],
    get: Callable[[str], object],
    problems: list[str],
    env: Mapping[str, str],
    chart_version: str,
) -> dict[str, str]:
    """Check the keys of the kind, k3s and existing variants; append a line per problem.

    Returns the resolved kubeconfig path and context (``existing`` only, else empty).
    Keys of another variant are ignored (one stack file may carry several), except those
    that would silently mean something else: ``toolkit=true`` on kind, ``simulatedOperands``
    or ``removeCrds`` outside ``existing``, ``k3sNriPlugin`` outside ``k3s``.
    """
    ns = NAMESPACE
    resolved = {"kubeconfig_path": "", "kube_context": ""}
    image = str(get("kindNodeImage"))
    m = IMAGE.match(image)
    if not m or not m.group("digest"):
        problems.append(
            f"{ns}:kindNodeImage={image!r} is not pinned by digest; use repo:tag@sha256:<digest> from "
            f"the kind release notes, e.g. {DEFAULT_KIND_NODE_IMAGE}"
        )
    k3s_version = str(get("k3sVersion"))
    if not K3S_VERSION.match(k3s_version):
        problems.append(
            f"{ns}:k3sVersion={k3s_version!r} must be a k3s release vMAJOR.MINOR.PATCH+k3sN, "
            "e.g. v1.34.1+k3s1"
        )
    expected = int(get("expectedGpus"))  # type: ignore[call-overload]
    if expected < 0:
        problems.append(f"{ns}:expectedGpus={expected} must be >= 0")
    if cluster == "kind" and values.get("toolkit") is True:
        problems.append(
            f"{ns}:toolkit=true with cluster=kind: the host's NVIDIA container toolkit injects the GPUs "
            "into the kind node (nvkind's way), so the operator's toolkit stays off; set toolkit=false"
        )
    for key in ("simulatedOperands", "removeCrds"):
        if values.get(key) is True and cluster != "existing":
            problems.append(f"{ns}:{key}=true applies to cluster=existing only (got cluster={cluster!r})")
    nri = bool(get("k3sNriPlugin"))
    if nri and cluster != "k3s":
        problems.append(f"{ns}:k3sNriPlugin=true applies to cluster=k3s only (got cluster={cluster!r})")
    if nri and cluster == "k3s":
        if CHART_VERSION.match(chart_version) and _version_tuple(chart_version) < MIN_NRI_CHART:
            problems.append(
                f"{ns}:k3sNriPlugin=true needs chartVersion >= v{'.'.join(map(str, MIN_NRI_CHART))} "
                f"(got {chart_version!r})"
            )
        for key in ("cdi", "toolkit"):
            if not bool(get(key)):
                problems.append(
                    f"{ns}:k3sNriPlugin=true needs {key}=true (the chart refuses the NRI plugin without it)"
                )
    if cluster == "existing":
        if expected < 1:
            problems.append(
                f"{ns}:expectedGpus={expected}: cluster=existing needs the number of physical GPUs its "
                "nodes should advertise in total (>= 1); allocatable is compared with it"
            )
        resolved = _resolve_kubeconfig(str(get("kubeconfigPath")), str(get("kubeContext")), env, problems)
    return resolved


def _resolve_kubeconfig(
    path_value: str, context: str, env: Mapping[str, str], problems: list[str]
) -> dict[str, str]:
    """The kubeconfig file and context an existing cluster is reached with, checked now."""
    from gpulab.existing_ctl import KubeconfigError, load_kubeconfig

    ns = NAMESPACE
    origin = f"{ns}:kubeconfigPath"
    path = path_value
    if not path:
        first = (env.get("KUBECONFIG") or "").split(os.pathsep)[0]
        path, origin = (first, "$KUBECONFIG") if first else ("~/.kube/config", f"{ns}:kubeconfigPath default")
    if not SAFE_PATH.match(path):
        problems.append(
            f"{ns}:kubeconfigPath={path!r} (from {origin}) is not a plain path; allowed: letters, digits "
            f"and ._/~+@=:- (pattern {SAFE_PATH.pattern})"
        )
        return {"kubeconfig_path": "", "kube_context": ""}
    if context and not KUBE_CONTEXT.match(context):
        problems.append(
            f"{ns}:kubeContext={context!r} is not a context name (pattern {KUBE_CONTEXT.pattern})"
        )
        return {"kubeconfig_path": "", "kube_context": ""}
    full = os.path.abspath(os.path.expanduser(path))
    try:
        _, name = load_kubeconfig(full, context)
    except KubeconfigError as exc:
        key = "kubeContext" if exc.about == "context" else "kubeconfigPath"
        shown = context if key == "kubeContext" else path
        problems.append(f"{ns}:{key}={shown!r} (file {full}, from {origin}) cannot be used: {exc}")
        return {"kubeconfig_path": "", "kube_context": ""}
    if not KUBE_CONTEXT.match(name):
        problems.append(f"{ns}:kubeContext: the file's current-context {name!r} is not a safe context name")
    return {"kubeconfig_path": full, "kube_context": name}


def _coerce(kind: str, text: str) -> object:
    if kind == "int":
        return int(str(text).strip())
    if kind == "bool":
        t = str(text).strip().lower()
        if t in ("true", "1", "yes"):
            return True
        if t in ("false", "0", "no"):
            return False
        raise ValueError(text)
    return str(text)
