"""The lab's configuration: parsed once, validated, frozen.

``parse_config`` takes the raw string values of the ``gpu-lab:*`` stack config (as the
Pulumi engine hands them to the program) and returns a :class:`LabConfig`, or raises
:class:`ConfigError` listing every invalid key with its value and what is allowed. The
program calls it before registering any resource, so a bad value never leaves a half-made
lab. Defaults live here only; ``Pulumi.yaml`` documents the same keys and defaults, and a
unit test keeps the two in step.

No Pulumi import here: this module is tested without the engine. The variants are passed in
as their records (gpulab.config.variant.VariantSpec: ``variants.registry.parse_config`` passes
them all); each record's settings type checks its own keys, and the chosen one's resolves its
settings (``variants/<name>/settings.py``), which :class:`LabConfig` carries as one field,
:attr:`LabConfig.variant_settings`, without reading it; this module knows no variant by name,
nor any variant's keys.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from gpulab.config import adopt, operand_images, schema
from gpulab.config import device_plugin as plugin_config
from gpulab.config import dra as dra_config
from gpulab.config import fleet as fleet_config
from gpulab.config import gpus as gpu_config
from gpulab.config import queues as queue_config
from gpulab.config import time_slicing as slicing
from gpulab.config.variant import NO_SETTINGS, Getter, VariantSettings, VariantSpec
from gpulab.core.errors import GpuLabError
from gpulab.core.names import DEFAULT_COMPUTE_IMAGE, DEFAULT_PROBE_IMAGE, PROJECT

#: The stack config namespace: keys are ``gpu-lab:<key>``.
NAMESPACE: Final = PROJECT
DEVICE_PLUGIN_OWNERS: Final = ("operator", "minikube-addon")
HOST_PROBES: Final = ("auto", "nvidia-smi", "capture", "off")
#: Captures shipped in gpulab/host/captures, selectable with ``hostProbe: capture``.
CAPTURES: Final = ("h200-1gpu", "h200-2gpu", "h200-1gpu-mig")
#: Anything interpolated into a command line must match this (no spaces, quotes, `$`, `;`).
SAFE_NAME: Final = re.compile(r"^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$")
SAFE_TOKEN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,254}$")
CHART_VERSION: Final = re.compile(r"^v\d+\.\d+\.\d+$")
K8S_VERSION: Final = re.compile(r"^v1\.\d+\.\d+$")
# registry/repo:tag or registry/repo@sha256:<64 hex>; "latest" is not a pin.
IMAGE: Final = re.compile(
    r"^(?P<repo>[a-z0-9]+(?:[._/-][a-z0-9]+)*(?::\d+/[a-z0-9._/-]+)?)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$"
)
#: Environment variable that points the chart at a local directory (offline CI and tests).
CHART_PATH_ENV: Final = "GPULAB_CHART_PATH"
DEFAULT_CHART_REPO: Final = "https://helm.ngc.nvidia.com/nvidia"


class ConfigError(GpuLabError, ValueError):
    """Invalid stack configuration; ``problems`` holds one line per bad key."""

    def __init__(self, problems: list[str], stack: str | None = None) -> None:
        self.problems = problems
        self.stack = stack
        lines = "\n".join(f"  - {p}" for p in problems)
        # The fix as it runs: through the project's wrapper (its toolchain and backend), with
        # the stack named (`--stack`) so it lands in the stack that failed.
        where = f" --stack {stack}" if stack else ""
        super().__init__(
            f"invalid gpu-lab configuration ({len(problems)} problem(s)); nothing was created:\n"
            f"{lines}\nFix with `scripts/pulumi config set{where} gpu-lab:<key> <value>` or remove an "
            f"unknown key with `scripts/pulumi config rm{where} gpu-lab:<key>` (keys and defaults: "
            "Pulumi.yaml)."
        )


@dataclass(frozen=True)
class OperatorConfig:
    """GPU Operator chart settings.

    ``chart_path`` set means the chart is installed from that local directory (offline);
    otherwise from ``chart_repo`` at ``chart_version``. The booleans map to the chart's
    ``toolkit.enabled``, ``devicePlugin.enabled``, ``dcgmExporter.enabled``, ``nfd.enabled``
    and ``cdi.enabled``; ``driver.enabled`` is always false (the host provides the driver).
    ``toolkit`` is the variant's decision on ``gpu-lab:toolkit`` (``auto``: off where the
    node's runtime already injects GPUs, minikube and kind; see ``VariantSpec.toolkit``).
    ``operand_images``: the operand images pinned in config (gpulab.config.operand_images), each
    mapped to the chart's ``<operand>.repository/image/version``.
    """

    chart_version: str = schema.default("chartVersion")
    chart_repo: str = schema.default("chartRepo")
    chart_path: str | None = None
    #: Off for the default cluster, minikube: its node's runtime already injects the GPUs.
    toolkit: bool = False
    device_plugin: bool = schema.default("devicePlugin")
    dcgm_exporter: bool = schema.default("dcgmExporter")
    nfd: bool = schema.default("nfd")
    #: Off for the default cluster, minikube: its node runtime reads no CDI (the variant
    #: decides from ``gpu-lab:cdi``, default ``auto``: ``VariantSpec.cdi_enabled``; the chart's
    #: default is on).
    cdi: bool = False
    time_slicing_replicas: int = schema.default("timeSlicingReplicas")
    #: ``timeSlicingRename``, ``timeSlicingFailRequestsGreaterThanOne`` (gpulab.config.time_slicing).
    time_slicing_rename: bool = False
    time_slicing_fail_requests_greater_than_one: bool = False
    #: ``sharingConfigMap`` parsed: ``(name, default key)`` of an existing ConfigMap the
    #: device plugin's config comes from (gpulab.config.time_slicing.parse_config_map).
    sharing_config_map: tuple[str, str] | None = None
    timeout_seconds: int = schema.default("operatorTimeoutSeconds")
    #: ``cdi.nriPluginEnabled`` (k3s only, chart >= v26.3.0): inject GPUs through the NRI
    #: plugin instead of a containerd runtime handler.
    nri_plugin: bool = schema.default("k3sNriPlugin")
    operand_images: tuple[operand_images.OperandImage, ...] = ()
    #: ``mig.strategy``: ``none``, ``single`` or ``mixed`` (gpulab.config.mig).
    mig_strategy: str = "none"

    @property
    def time_slicing(self) -> slicing.TimeSlicing:
        """The time-slicing settings (replicas, rename, fail requests > 1)."""
        return slicing.TimeSlicing(
            self.time_slicing_replicas,
            self.time_slicing_rename,
            self.time_slicing_fail_requests_greater_than_one,
        )

    @property
    def gpu_resource(self) -> str:
        """The whole-GPU resource the device plugin registers: ``nvidia.com/gpu``, or
        ``nvidia.com/gpu.shared`` under time-slicing with ``timeSlicingRename``."""
        return self.time_slicing.resource


S = TypeVar("S")


@dataclass(frozen=True)
class LabConfig:
    """The whole lab's settings (see Pulumi.yaml for each key's meaning).

    Units: every ``*_seconds`` in seconds. What one cluster variant alone means (minikube's
    CPUs, kind's node image, an existing cluster's kubeconfig, ...) is not a field here: it is
    the chosen variant's own settings, :attr:`variant_settings`, which only that variant reads
    (:meth:`settings`).
    """

    cluster: str = schema.default("cluster")
    profile: str = schema.default("profile")
    kubernetes_version: str = schema.default("kubernetesVersion")
    device_plugin_owner: str = schema.default("devicePluginOwner")
    host_probe: str = schema.default("hostProbe")
    #: The capture ``hostProbe: capture`` reads (gpulab/host/captures): ``capture`` as set,
    #: else the variant's choice (its settings' ``capture``: the sim lab's matches simGpus).
    capture: str = "h200-1gpu"
    smoke_image: str = schema.default("smokeImage")
    smoke_gpus: int = 0  # smokeGpus: 0 is "all" (gpulab.config.gpus.smoke_gpu_count)
    smoke_timeout_seconds: int = schema.default("smokeTimeoutSeconds")
    #: Run the compute check (a CUDA vectorAdd Pod after the smoke Pod) in ``compute_image``.
    compute_check: bool = schema.default("computeCheck")
    compute_image: str = schema.default("computeImage")
    cluster_timeout_seconds: int = schema.default("clusterTimeoutSeconds")
    #: Run the TFLOPS benchmark Pod (GPU labs only) in ``benchmark_image``.
    benchmark_pod: bool = schema.default("benchmarkPod")
    benchmark_image: str = schema.default("benchmarkImage")
    #: True when the operator's work is simulated (the sim variant, or an existing cluster
    #: with ``simulatedOperands``): decided by the variant's settings (``simulated``).
    simulated: bool = False
    operator: OperatorConfig = field(default_factory=OperatorConfig)
    #: The gate's grace, MIG and the smoke Pod's resource (gpulab.config.gpus).
    gpu: gpu_config.GpuSettings = field(default_factory=gpu_config.GpuSettings)
    #: The GPU stack found installed and the per-node checks (gpulab.config.fleet).
    fleet: fleet_config.FleetSettings = field(default_factory=fleet_config.FleetSettings)
    #: ``adoptExisting``: ``Namespace/<name>`` items the lab may use as they are on a cluster it
    #: does not own (gpulab.config.adopt); empty: preflight refuses every foreign object in the way.
    adopt_existing: tuple[str, ...] = ()
    #: NVIDIA's device plugin chart, installed alone with ``gpuStack: device-plugin``
    #: (gpulab.config.device_plugin); its ``runtime_class`` is ``runtimeClass`` for every lab.
    device_plugin_chart: plugin_config.DevicePluginChart = field(
        default_factory=plugin_config.DevicePluginChart
    )
    #: NVIDIA's DRA driver chart, installed with ``gpuStack: dra`` (gpulab.config.dra).
    dra_chart: dra_config.DraChart = field(default_factory=dra_config.DraChart)
    #: The queue layer, Kueue (``queues``, gpulab.config.queues).
    queues: queue_config.QueueSettings = field(default_factory=queue_config.QueueSettings)

    #: ``hostProbe`` with ``auto`` resolved by the variant: ``capture`` for the sim lab,
    #: ``off`` for an existing cluster (it is not this host), ``nvidia-smi`` elsewhere.
    effective_host_probe: str = "nvidia-smi"
    #: ``runtimeClassName`` of the smoke Pod, as the variant's node runtime needs it
    #: (``nvidia`` on kind and k3s, whose containerd keeps runc the default; None elsewhere).
    smoke_runtime_class: str | None = None
    #: The chosen variant's own settings (its ``settings.py``: e.g. ``variants.kind.settings.
    #: KindSettings``), resolved by their type (``VariantSettings.resolve``). Nothing outside that
    #: variant reads them; it does through :meth:`settings`.
    variant_settings: VariantSettings = NO_SETTINGS

    @property
    def effective_capture(self) -> str:
        """The capture ``hostProbe: capture`` reads (:attr:`capture`, resolved when parsed)."""
        return self.capture

    def settings(self, kind: type[S]) -> S:
        """:attr:`variant_settings` as the variant's own type ``kind``: how a variant reads its
        settings, typed, without a cast. A LabConfig built without settings (``LabConfig()``,
        not parsed) gives ``kind()``: the variant's defaults, which are Pulumi.yaml's.

        Raises:
            TypeError: they are of another type (a LabConfig parsed for another variant).
        """
        own = self.variant_settings
        if type(own) is VariantSettings:
            return kind()  # a LabConfig built bare (no parse): the variant's defaults, Pulumi.yaml's
        if not isinstance(own, kind):
            raise TypeError(
                f"cluster={self.cluster}: the variant settings are {type(own).__name__}, not {kind.__name__} "
                "(a LabConfig parsed for another variant)"
            )
        return own


#: key -> (kind, default) of every key, as Pulumi.yaml's config block declares it
#: (gpulab.config.schema: the one source of types and defaults). Kinds: str, int, bool.
#: ``toolkit`` and ``cdi`` are strings, ``auto``, ``true`` or ``false``, so that unset differs
#: from true (:func:`_auto_choice`); an operand image left empty is the chart's default.
SCHEMA: Final[dict[str, tuple[str, object]]] = {k: (key.kind, key.default) for k, key in schema.KEYS.items()}


#: The allowed range of every numeric key, (lowest, highest), inclusive; Pulumi.yaml states
#: each highest. The upper bounds keep a typo from reaching the lab: a huge replica count or
#: timeout is accepted by the API server and then makes a start that never ends, silently.
#: ``smokeGpus`` is ``all`` or a count in its range.
#: A variant's own numeric keys are bounded by the variant (``VariantSpec.bounds``, checked by its
#: settings' ``check`` with :func:`bound_problems`).
BOUNDS: Final[dict[str, tuple[int, int]]] = {
    "smokeTimeoutSeconds": (1, 7200),  # a first pull of a large CUDA image included
    "clusterTimeoutSeconds": (1, 7200),
    "operatorTimeoutSeconds": (1, 7200),
    "gpuGraceSeconds": (1, 3600),
    "timeSlicingReplicas": (1, 64),  # GPUs x replicas Pods sharing one device plugin's GPUs
    "smokeGpus": (1, 64),  # one Pod's GPUs on one node
    **fleet_config.BOUNDS,  # fleetParallelism
}


def bound_problems(
    value_of: Callable[[str], object], bounds: Mapping[str, tuple[int, int]] = BOUNDS
) -> list[str]:
    """One line per key of ``bounds`` (default :data:`BOUNDS`) whose value, ``value_of(key)``,
    is above its highest allowed value (:func:`above_maximum`); a value that is not a whole
    number (unset, or refused by its own check) gives none. The lowest values are checked with
    their reasons where each key is parsed. A variant checks its own keys' bounds with this too
    (``VariantSpec.bounds``)."""
    problems = []
    for key, (_, highest) in bounds.items():
        value = value_of(key)
        if isinstance(value, str):
            value = int(value) if value.strip().isdigit() else None
        if isinstance(value, int) and not isinstance(value, bool):
            problems += above_maximum(key, value, highest)
    return problems


def above_maximum(key: str, value: int, highest: int) -> list[str]:
    """The one line saying ``key=value`` is above ``highest`` (empty when it is not): the text
    of every bound, the variants' own keys' included."""
    return [f"{NAMESPACE}:{key}={value} is above its maximum {highest}"] if value > highest else []


def _strip_ns(key: str) -> str:
    return key.split(":", 1)[1] if ":" in key else key


class _Reader:
    """The raw config read against the schema: ``values`` (each key set, coerced to its
    kind), ``problems`` (one line per bad value, shared by every section) and :meth:`get`
    (a value, else its Pulumi.yaml default)."""

    def __init__(self, raw: Mapping[str, str]) -> None:
        self.values: dict[str, object] = {}
        self.problems: list[str] = []
        for full_key, text in raw.items():
            if ":" in full_key and not full_key.startswith(NAMESPACE + ":"):
                continue
            key = _strip_ns(full_key)
            if key not in SCHEMA:
                self.problems.append(
                    f"{NAMESPACE}:{key} is not a known key (known: {', '.join(sorted(SCHEMA))})"
                )
                continue
            kind, _ = SCHEMA[key]
            try:
                self.values[key] = _coerce(kind, text)
            except ValueError:
                self.problems.append(f"{NAMESPACE}:{key}={text!r} is not a valid {kind}")
        for key in ("toolkit", "cdi"):
            _auto_choice(key, self.values, self.problems)
        self.problems += bound_problems(self.values.get)

    def get(self, key: str) -> object:
        """The value of ``key`` as set, else its default (Pulumi.yaml)."""
        return self.values.get(key, SCHEMA[key][1])

    def text(self, key: str) -> str:
        """:meth:`get` as a string."""
        return str(self.get(key))

    def number(self, key: str) -> int:
        """:meth:`get` of an integer key."""
        return int(self.get(key))  # type: ignore[call-overload]

    def flag(self, key: str) -> bool:
        """:meth:`get` of a boolean key."""
        return bool(self.get(key))

    def choice(self, key: str) -> bool | None:
        """``toolkit`` or ``cdi`` as set, true or false; None when unset (``auto``)."""
        value = self.values.get(key)
        return value if isinstance(value, bool) else None

    def pos_int(self, key: str) -> int:
        """:meth:`number`, with a problem when it is not > 0."""
        v = self.number(key)
        if v <= 0:
            self.problems.append(f"{NAMESPACE}:{key}={v} must be > 0")
        return v


def getter(raw: Mapping[str, str]) -> Getter:
    """``get(key)`` over raw stack config (as :func:`parse_config` takes it): each key's value
    coerced to its kind, else its default (Pulumi.yaml); what a variant's verbs read config
    with. Nothing is checked: a bad value reads as its default."""
    return _Reader(raw).get


def _cluster(r: _Reader, known: Mapping[str, VariantSpec]) -> tuple[str, VariantSpec | None]:
    """Section ``cluster``: the variant's name and its record (None when unknown)."""
    cluster = r.text("cluster")
    if cluster not in known:
        r.problems.append(f"{NAMESPACE}:cluster={cluster!r} is unknown; allowed: {', '.join(known)}")
    return cluster, known.get(cluster)


def _node(r: _Reader) -> dict[str, Any]:
    """Section node: ``profile`` (safe in a command line), ``kubernetesVersion``; LabConfig
    fields (the node's size is minikube's: variants/minikube/settings.py)."""
    profile = r.text("profile")
    if not SAFE_NAME.match(profile):
        r.problems.append(
            f"{NAMESPACE}:profile={profile!r} is not safe in a command line; allowed: "
            f"lowercase letters, digits and '-', 1-40 chars, pattern {SAFE_NAME.pattern}"
        )
    kver = r.text("kubernetesVersion")
    if not K8S_VERSION.match(kver):
        r.problems.append(f"{NAMESPACE}:kubernetesVersion={kver!r} must look like v1.MINOR.PATCH")
    return {"profile": profile, "kubernetes_version": kver}


def _device_plugin(r: _Reader) -> tuple[str, bool]:
    """Section device plugin: ``devicePluginOwner`` and ``devicePlugin``, which must agree
    (exactly one registers nvidia.com/gpu)."""
    owner = r.text("devicePluginOwner")
    if owner not in DEVICE_PLUGIN_OWNERS:
        r.problems.append(
            f"{NAMESPACE}:devicePluginOwner={owner!r} is unknown; allowed: {', '.join(DEVICE_PLUGIN_OWNERS)}"
        )
    device_plugin = r.flag("devicePlugin")
    if owner == "operator" and not device_plugin:
        r.problems.append(
            f"{NAMESPACE}:devicePlugin=false with devicePluginOwner=operator: nothing would register "
            "nvidia.com/gpu; set devicePlugin=true or devicePluginOwner=minikube-addon"
        )
    if owner == "minikube-addon" and device_plugin:
        r.problems.append(
            f"{NAMESPACE}:devicePlugin=true with devicePluginOwner=minikube-addon: two device plugins "
            "would register nvidia.com/gpu; set devicePlugin=false"
        )
    return owner, device_plugin


def _host(r: _Reader, chosen: VariantSpec | None, own: VariantSettings) -> dict[str, Any]:
    """Section host probe: ``hostProbe`` (``auto``: the chosen variant's ``default_host_probe``)
    and ``capture`` (empty: the variant's settings' ``capture``, the sim lab's the one matching
    simGpus); LabConfig fields."""
    probe = r.text("hostProbe")
    if probe not in HOST_PROBES:
        r.problems.append(f"{NAMESPACE}:hostProbe={probe!r} is unknown; allowed: {', '.join(HOST_PROBES)}")
    capture = r.text("capture") or own.capture or CAPTURES[0]
    if capture not in CAPTURES:
        r.problems.append(f"{NAMESPACE}:capture={capture!r} is unknown; allowed: {', '.join(CAPTURES)}")
    auto = chosen.default_host_probe if chosen else "nvidia-smi"
    effective = auto if probe == "auto" else probe
    return {"host_probe": probe, "capture": capture, "effective_host_probe": effective}


def _images(r: _Reader) -> dict[str, Any]:
    """Section images: ``smokeImage``, ``computeImage`` and ``benchmarkImage``, each pinned by a
    tag (not latest) or a digest; LabConfig fields."""
    image = r.text("smokeImage")
    _check_pinned("smokeImage", image, DEFAULT_PROBE_IMAGE, r.problems)
    compute_image = r.text("computeImage")
    _check_pinned("computeImage", compute_image, DEFAULT_COMPUTE_IMAGE, r.problems)
    bench_image = r.text("benchmarkImage")
    bm = IMAGE.match(bench_image)
    if not bm or not (bm.group("tag") or bm.group("digest")) or bm.group("tag") == "latest":
        r.problems.append(
            f"{NAMESPACE}:benchmarkImage={bench_image!r} is not pinned; use repo:tag (not latest) or "
            "repo@sha256:<digest>, e.g. nvcr.io/nvidia/pytorch:25.01-py3"
        )
    return {"smoke_image": image, "compute_image": compute_image, "benchmark_image": bench_image}


def _chart(r: _Reader, env: Mapping[str, str]) -> dict[str, Any]:
    """Section chart: ``chartVersion``, ``chartRepo``, ``chartPath`` (or ``$GPULAB_CHART_PATH``:
    a directory with a Chart.yaml); OperatorConfig fields."""
    chart_version = r.text("chartVersion")
    if not CHART_VERSION.match(chart_version):
        r.problems.append(
            f"{NAMESPACE}:chartVersion={chart_version!r} must be vMAJOR.MINOR.PATCH, e.g. v26.7.0"
        )
    chart_repo = r.text("chartRepo")
    if not re.match(r"^(https://|oci://)[A-Za-z0-9./_-]+$", chart_repo):
        r.problems.append(f"{NAMESPACE}:chartRepo={chart_repo!r} must be an https:// or oci:// URL")
    chart_path = r.text("chartPath") or env.get(CHART_PATH_ENV, "") or None
    if chart_path is not None and not os.path.isfile(os.path.join(chart_path, "Chart.yaml")):
        r.problems.append(
            f"chart path {chart_path!r} (from {NAMESPACE}:chartPath or ${CHART_PATH_ENV}) has no "
            "Chart.yaml; point it at an unpacked gpu-operator chart or unset it to use the repository"
        )
    return {
        "chart_version": chart_version,
        "chart_repo": chart_repo,
        "chart_path": os.path.abspath(chart_path) if chart_path else None,
    }


def _sharing(r: _Reader, owner: str) -> tuple[int, slicing.TimeSlicing]:
    """Section sharing: ``smokeGpus`` and the time-slicing keys, checked together
    (gpulab.config.time_slicing.check); returns ``(smokeGpus parsed, the time-slicing)``."""
    replicas = r.pos_int("timeSlicingReplicas")
    smoke_gpus = gpu_config.parse_smoke_gpus(r.get("smokeGpus"), r.problems, NAMESPACE)
    sharing = slicing.TimeSlicing(
        replicas, r.flag("timeSlicingRename"), r.flag("timeSlicingFailRequestsGreaterThanOne")
    )
    slicing.check(sharing, smoke_gpus, r.problems, NAMESPACE, owner)
    return smoke_gpus, sharing


def _operator(
    r: _Reader, chosen: VariantSpec | None, env: Mapping[str, str], owner: str, mig_strategy: str
) -> tuple[OperatorConfig, int]:
    """Sections chart, device plugin, sharing and operands: the GPU Operator's settings (toolkit
    and CDI as the chosen variant's node runtime decides them from ``toolkit`` and ``cdi``, None
    when unset), and ``smokeGpus`` parsed (checked with the time-slicing keys)."""
    chart = _chart(r, env)
    smoke_gpus, sharing = _sharing(r, owner)
    spec = chosen or VariantSpec("")
    nri = r.flag("k3sNriPlugin")
    return OperatorConfig(
        **chart,
        nri_plugin=nri,
        toolkit=spec.toolkit(r.choice("toolkit")),
        device_plugin=r.flag("devicePlugin"),
        dcgm_exporter=r.flag("dcgmExporter"),
        nfd=r.flag("nfd"),
        cdi=spec.cdi_enabled(r.choice("cdi"), nri),
        time_slicing_replicas=sharing.replicas,
        time_slicing_rename=sharing.rename,
        time_slicing_fail_requests_greater_than_one=sharing.fail_requests_greater_than_one,
        sharing_config_map=slicing.parse_config_map(
            r.text("sharingConfigMap"), sharing.replicas, r.problems, NAMESPACE
        ),
        timeout_seconds=r.pos_int("operatorTimeoutSeconds"),
        operand_images=operand_images.parse(r.get, r.problems, NAMESPACE),
        mig_strategy=mig_strategy,
    ), smoke_gpus


def _gpu_stack(
    r: _Reader, chosen: VariantSpec | None, env: Mapping[str, str], gpu: gpu_config.GpuSettings
) -> dict[str, Any]:
    """Sections GPU stack, adopt and queues: ``gpuStack`` as the chosen variant offers it, the
    charts it installs, ``adoptExisting``, the queue layer where it can be proven; LabConfig
    fields."""
    fleet = fleet_config.parse(r.get, r.problems, NAMESPACE)
    adopted = adopt.parse(r.get, r.problems, NAMESPACE)
    offered = chosen.gpu_stacks if chosen is not None else fleet_config.GPU_STACKS
    if fleet.stack not in offered:
        note = chosen.refusal(fleet.stack) if chosen is not None else ""
        r.problems.append(
            f"{NAMESPACE}:gpuStack={fleet.stack} is not offered on cluster={r.text('cluster')} (it offers "
            f"{', '.join(offered)}){': ' + note if note else ''}; unset gpuStack"
        )
    plugin_chart = plugin_config.parse(r.get, r.problems, env, NAMESPACE, installs=fleet.device_plugin)
    dra_chart = dra_config.parse(r.get, r.problems, env, NAMESPACE, installs=fleet.dra)
    if fleet.dra and r.flag("benchmarkPod"):
        r.problems.append(
            f"{NAMESPACE}:gpuStack=dra: the benchmark Pod still asks for the counted nvidia.com/gpu, which "
            "no device plugin advertises in DRA mode; set benchmarkPod=false"
        )
    queues = queue_config.parse(r.get, r.problems, env, NAMESPACE)
    if queues.enabled:
        _queue_problems(r, chosen, fleet, gpu)
    return {
        "fleet": fleet,
        "adopt_existing": adopted,
        "device_plugin_chart": plugin_chart,
        "dra_chart": dra_chart,
        "queues": queues,
    }


def parse_config(
    raw: Mapping[str, str], variants: Iterable[VariantSpec], env: Mapping[str, str] | None = None
) -> LabConfig:
    """Validate raw stack config into a :class:`LabConfig`, section by section against the
    schema (Pulumi.yaml's config block: :data:`SCHEMA`).

    Args:
        raw: config values as strings, keys with or without the ``gpu-lab:`` namespace
            (``{"gpu-lab:cpus": "8"}``); keys of other namespaces are ignored.
        variants: every cluster variant's record, in the order errors list them (the registry's).
        env: environment for the ``GPULAB_CHART_PATH`` override (default ``os.environ``).

    Raises:
        ConfigError: every problem at once: unknown keys, bad types, values above
            :data:`BOUNDS`, unsafe names, a chart version not ``vMAJOR.MINOR.PATCH``, an image
            without a pinned tag or digest, timeouts <= 0, an unknown cluster kind, a
            ``gpuStack`` or queue layer the variant does not offer; what the variants' settings
            refuse of their own keys (:func:`_variant_settings`: each variant's ``check``, the
            chosen one's ``resolve``), and a variant-only key set for another variant.
    """
    env = os.environ if env is None else env
    r, known = _Reader(raw), {v.name: v for v in variants}
    cluster, chosen = _cluster(r, known)
    node, (owner, _) = _node(r), _device_plugin(r)
    own = _variant_settings(known.values(), chosen, r, env)
    host = _host(r, chosen, own)
    images = _images(r)
    gpu = gpu_config.parse(r.get, r.problems, NAMESPACE)
    operator, smoke_gpus = _operator(r, chosen, env, owner, gpu.mig_strategy)
    timeouts = {k: r.pos_int(k) for k in ("smokeTimeoutSeconds", "clusterTimeoutSeconds")}
    stack = _gpu_stack(r, chosen, env, gpu)
    if r.flag("benchmarkPod") and own.simulated:
        r.problems.append(
            f"{NAMESPACE}:benchmarkPod=true in a simulated lab: there is no GPU to measure, and a "
            "simulated figure must never pass for a measured one; set benchmarkPod=false"
        )
    if r.problems or chosen is None:  # an unknown cluster is one of the problems
        raise ConfigError(r.problems)
    return LabConfig(
        cluster=cluster,
        **node,
        device_plugin_owner=owner,
        **host,
        **images,
        smoke_gpus=smoke_gpus,
        smoke_timeout_seconds=timeouts["smokeTimeoutSeconds"],
        compute_check=r.flag("computeCheck"),
        cluster_timeout_seconds=timeouts["clusterTimeoutSeconds"],
        benchmark_pod=r.flag("benchmarkPod"),
        simulated=own.simulated,
        operator=operator,
        gpu=gpu,
        **stack,
        # runtimeClass when set, else the variant's node runtime decides.
        smoke_runtime_class=stack["device_plugin_chart"].runtime_class
        or chosen.smoke_runtime_class(operator.nri_plugin),
        variant_settings=own,
    )


def _queue_problems(
    r: _Reader, chosen: VariantSpec | None, fleet: fleet_config.FleetSettings, gpu: gpu_config.GpuSettings
) -> None:
    """``queues: true`` where it cannot be proven: a variant that does not offer it (its reason),
    ``gpuStack: dra`` (no counted GPU resource to give a quota of), MIG ``mixed`` (a quota per
    MIG profile is not what the proof covers)."""
    if chosen is not None and not chosen.queues:
        r.problems.append(
            f"{NAMESPACE}:queues=true is not offered on cluster={chosen.name}: "
            f"{chosen.queues_note}; unset queues"
        )
    if fleet.dra:
        r.problems.append(
            f"{NAMESPACE}:queues=true with gpuStack=dra: the ClusterQueue's quota is of the counted GPU "
            "resource, which no device plugin advertises in DRA mode; unset one of them"
        )
    if gpu.mig_strategy == "mixed":
        r.problems.append(
            f"{NAMESPACE}:queues=true with migStrategy=mixed: the quota would be one per MIG profile, which "
            "the queue proof does not cover; use migStrategy single or none"
        )


def _auto_choice(key: str, values: dict[str, object], problems: list[str]) -> None:
    """``toolkit``, ``cdi``: an explicit ``true``/``false`` becomes a bool in ``values``;
    ``auto`` is removed, so ``values`` holds the key only when it was set (the variants tell
    the two apart). A string, not a bool, because the engine hands the program every default
    of Pulumi.yaml's config block as if it were set: a bool default could not say "unset"."""
    if key not in values:
        return
    choice = str(values.pop(key)).strip().lower()
    if choice == "auto":
        return
    try:
        values[key] = _coerce("bool", choice)
    except ValueError:
        problems.append(f"{NAMESPACE}:{key}={choice!r} is not one of auto, true, false")


def _check_pinned(key: str, image: str, example: str, problems: list[str]) -> None:
    """A line in ``problems`` unless ``image`` is a reference pinned by a tag (not latest) or a digest."""
    m = IMAGE.match(image)
    if not m:
        problems.append(
            f"{NAMESPACE}:{key}={image!r} is not a valid image reference "
            "(registry/repository:tag or @sha256:<digest>, no spaces or shell characters)"
        )
    elif not (m.group("tag") or m.group("digest")) or m.group("tag") == "latest":
        problems.append(
            f"{NAMESPACE}:{key}={image!r} is not pinned; use repo:tag (not latest) or "
            f"repo@sha256:<digest>, e.g. {example}"
        )


def _variant_settings(
    variants: Iterable[VariantSpec], chosen: VariantSpec | None, r: _Reader, env: Mapping[str, str]
) -> VariantSettings:
    """The variants' own keys: each variant's settings check the format and bounds of its keys
    (one stack file may carry several), a setting that means something for one variant only is
    refused for the others, and the chosen variant's settings are resolved (its checks that
    apply only then, e.g. the kubeconfig read).

    Returns the chosen variant's settings (:data:`NO_SETTINGS` when the cluster is unknown).
    """
    cluster = chosen.name if chosen else r.text("cluster")
    for v in variants:
        v.settings.check(r.get, r.problems)
        if v is chosen:
            continue
        for key in v.exclusive_keys:
            if r.get(key) not in ("", None):
                r.problems.append(
                    f"{NAMESPACE}:{key} applies to cluster={v.name} only (got cluster={cluster!r})"
                )
        for key, value in v.exclusive_settings:
            if r.get(key) == value:
                shown = str(value).lower() if isinstance(value, bool) else value
                r.problems.append(
                    f"{NAMESPACE}:{key}={shown} applies to cluster={v.name} only (got cluster={cluster!r})"
                )
    return chosen.settings.resolve(r.get, r.values, r.problems, env) if chosen else NO_SETTINGS


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
