"""The one interface every cluster variant implements, and the rest of the lab calls.

The shape is NVIDIA holodeck's provider interface (one interface, one folder per
environment kind), kept narrow: :class:`Variant` is a name, five facets, its component and its
GPU expectation, and each caller asks the one facet it uses, never the name. The facets:
:class:`Capabilities` (plain facts: does the lab own the cluster, may it find a GPU stack),
:class:`ConfigRules` (its config keys, checked and parsed into its ``settings.py``'s frozen
dataclass, which ``LabConfig.variant_settings`` carries and only the variant reads, with
``cfg.settings(<its type>)``; the defaults it resolves), :class:`OperatorNeeds` (its node
runtime and what the operator's Helm values need), :class:`HostNeeds` (what it needs on this
machine) and :class:`Lifecycle` (its helper, steps and files, whether a cluster it owns is
gone, what the lab left). Everything a variant is lives in ``variants/<name>/``; the registry
(``variants/registry.py``) is the only place that knows the names.

This module imports no Pulumi: config parsing and preflight use it before any resource
exists. ``cluster`` imports the variant's component lazily. It also holds what the variants'
helpers share: :func:`ctl_main` (a subcommand's JSON and exit code), :func:`refuse_cdi`, the
output keys whose values are simulated where no operator runs (:data:`OPERATOR_FIELDS`), and
what their settings modules read config with (:func:`get_int` and its siblings; their
bounds are checked with gpulab.config.lab.bound_problems, the core keys' own check).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from gpulab.config.lab import CAPTURES, NO_SETTINGS, VariantSettings
from gpulab.core import outputs as out
from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from gpulab.host import preflight

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig, OperatorConfig
    from gpulab.core.findings import Finding
    from gpulab.host.facts import HostFacts

#: ``get(key)``: a config key's parsed value, or its default.
Getter = Callable[[str], object]


def get_text(get: Getter, key: str) -> str:
    """``get(key)`` of a string key."""
    return str(get(key))


def get_int(get: Getter, key: str) -> int:
    """``get(key)`` of an integer key (already coerced by config parsing)."""
    return int(str(get(key)))


def get_flag(get: Getter, key: str) -> bool:
    """``get(key)`` of a boolean key."""
    return bool(get(key))


#: ``run(argv)``: a finished process (``returncode``, ``stdout``, ``stderr``), for status checks.
Runner = Callable[[list[str]], cmd.Result]


def run_quietly(argv: list[str]) -> cmd.Result:
    """``argv`` with its output captured (:func:`gpulab.core.run.run`); 120 s at most."""
    return cmd.run(argv, timeout=120)


#: ``() -> (the JSON document to print, the exit code)``: one subcommand of a variant's helper.
Action = Callable[[], tuple[Any, int]]


def ctl_main(
    tag: str,
    action: Action,
    errors: tuple[type[BaseException], ...] = (GpuLabError,),
    *,
    sort_keys: bool = False,
) -> int:
    """Run one subcommand of a variant's helper (``python -m variants.<name>.ctl``).

    Prints the JSON document ``action`` returns on stdout and returns its exit code; an error
    of ``errors`` is printed on stderr as ``<tag>: <message>`` (the message names the cause
    and the fix) and gives exit code 1.
    """
    try:
        doc, code = action()
    except errors as exc:
        print(f"{tag}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(doc, sort_keys=sort_keys))
    return code


#: Output keys an operator process produces; simulated where none runs (the sim lab, an
#: existing cluster with ``simulatedOperands``).
OPERATOR_FIELDS: Final[tuple[str, ...]] = (
    out.ALLOCATABLE_GPUS,
    out.CAPACITY_GPUS,
    out.CLUSTER_POLICY_STATE,
    out.DEVICE_PLUGIN_PODS,
    out.MIG_RESOURCES,
    out.SMOKE_PHASE,
    out.SMOKE_DRIVER_VERSION,
    out.SMOKE_CUDA_VERSION,
    # The compute Pod's execution and log are simulated where the smoke Pod's are.
    out.COMPUTE_PHASE,
    out.COMPUTE_RESULT,
    out.COMPUTE_GPUS,
    out.COMPUTE_GPU_UUIDS,
    # The per-node checks read the same simulated nodes and logs (gpulab.kube.fleet).
    out.NODES,
    out.NODES_SUMMARY,
)
#: Output keys of the host probe; simulated when read from a capture (the sim lab).
HOST_FIELDS: Final[tuple[str, ...]] = (
    out.HOST_GPU_COUNT,
    out.HOST_GPU_MODELS,
    out.HOST_GPUS,
    out.HOST_DRIVER_VERSION,
    out.HOST_MAX_CUDA,
    out.HOST_TOPOLOGY,
    out.NODE_RUNTIME,
)


def started_record(root: Path, variant: str, profile: str) -> Path:
    """``<root>/.state/<variant>/<profile>/started.json``: the helper's record that it started
    cluster ``profile`` (written before it starts one, removed when it deletes it)."""
    return root / ".state" / variant / profile / "started.json"


def record_started(variant: str, profile: str, root: Path | None = None) -> None:
    """Write :func:`started_record` (``root``: the project directory, the helpers' working
    directory)."""
    path = started_record(root or Path.cwd(), variant, profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"variant": variant, "profile": profile}) + "\n", encoding="utf-8")


def clear_started(variant: str, profile: str, root: Path | None = None) -> None:
    """Remove :func:`started_record` (and its directory when empty)."""
    path = started_record(root or Path.cwd(), variant, profile)
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()


@dataclass(frozen=True)
class Tool:
    """A binary the variant runs on this machine, and how to get it."""

    name: str
    fix: str


@dataclass(frozen=True)
class GpuExpectation:
    """What allocatable must add up to, and where that number comes from.

    Attributes:
        physical: physical GPUs the cluster should show (None: unknown, e.g. no probe).
        from_config: the count comes from config, not from this host's probe; it is then
            also the ``hostGpuCount`` output.
        source: the ``hostProbeSource`` output when the variant supplies the count itself
            (``"config:expectedGpus"``), else None (the probe's own source).
    """

    physical: int | None
    from_config: bool = False
    source: str | None = None


def refuse_cdi(name: str, values: Mapping[str, object], problems: list[str], why: str) -> None:
    """Append a problem when ``gpu-lab:cdi`` was set to true although variant ``name``'s node
    runtime does not read CDI (``why``): for a variant's :meth:`ConfigRules.resolve`."""
    if values.get("cdi") is True:
        problems.append(
            f"gpu-lab:cdi=true with cluster={name}: {why}; leave cdi unset (the {name} lab "
            "turns it off) or set it to false"
        )


@dataclass(frozen=True)
class Capabilities:
    """What the lab may do with a variant's cluster: plain facts, no I/O.

    Attributes:
        owns_cluster: the lab creates and deletes the cluster (so an unreachable cluster
            that is confirmed gone may be pruned from the state, the provider may drop
            unreachable objects, and the chart's CRDs of another version may be upgraded).
        gpu_stacks: the ``gpuStack`` values the variant offers (gpulab.config.fleet.GPU_STACKS):
            ``install`` (the GPU Operator) always; ``device-plugin`` (NVIDIA's device plugin chart
            alone) and ``found`` (a GPU stack somebody else installed) where the variant can
            verify them.
        gpu_stack_note: why a ``gpuStack`` value is not offered, named in config's refusal.
        dra_note: why ``gpuStack: dra`` (NVIDIA's DRA driver: GPUs through ResourceClaims, which
            the kubelet hands the runtime as CDI devices) is not offered, where the variant has
            a reason of its own; else ``gpu_stack_note``.
        queues: the queue layer (``queues``: Kueue, gpulab.config.queues) is offered.
        queues_note: why it is not, named in config's refusal.
    """

    owns_cluster: bool = True
    gpu_stacks: tuple[str, ...] = ("install",)
    gpu_stack_note: str = ""
    dra_note: str = ""
    queues: bool = False
    queues_note: str = (
        "the queue layer is proven on the simulated lab only so far (issue 39 item 4, the real node, "
        "is still open)"
    )

    def refusal(self, stack: str) -> str:
        """Why ``gpuStack: <stack>`` is refused on this variant ("" : no reason recorded)."""
        return self.dra_note if stack == "dra" and self.dra_note else self.gpu_stack_note


@dataclass(frozen=True)
class ConfigRules:
    """A variant's config keys: which are its own, their bounds and checks, its settings, and
    the defaults it resolves (pure: config parsing asks it before any resource exists;
    gpulab.config.lab.ConfigFacet is the question).

    Attributes:
        name: the variant's name (``gpu-lab:cluster``), named in its problems.
        exclusive_settings: ``(key, value)`` config settings that mean something for this
            variant only and are refused for every other one.
        exclusive_keys: config keys that apply to this variant only; any non-empty value is
            refused for every other one.
        bounds: the allowed range, ``(lowest, highest)`` inclusive, of each numeric key of this
            variant's own (Pulumi.yaml states each highest); :meth:`check_keys` checks them.
    """

    name: str
    exclusive_settings: tuple[tuple[str, object], ...] = ()
    exclusive_keys: tuple[str, ...] = ()
    bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def check_keys(self, get: Getter, problems: list[str]) -> None:
        """Check the format and :attr:`bounds` of this variant's own keys, whichever variant is
        chosen (one stack file may carry several); append one line per problem."""

    def resolve(
        self, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> VariantSettings:
        """Checks that apply when this variant is chosen; returns its own settings (the frozen
        dataclass of its ``settings.py``, with what it resolves, e.g. the kubeconfig), which
        ``LabConfig.variant_settings`` carries and the variant reads back with
        ``cfg.settings(<its type>)``. Append one line per problem. By default: no settings."""
        return NO_SETTINGS

    def default_capture(self, get: Getter) -> str:
        """The capture ``hostProbe: capture`` reads when ``capture`` is empty."""
        return CAPTURES[0]

    def default_host_probe(self) -> str:
        """``hostProbe: auto`` resolved: ``nvidia-smi``, ``capture`` or ``off``."""
        return "nvidia-smi"

    def simulated(self, get: Getter) -> bool:
        """True when the operator's work is simulated in this variant's lab."""
        return False

    def simulated_fields(self, cfg: LabConfig) -> list[str]:
        """Output keys whose values are simulated in this lab (empty for a real GPU lab)."""
        return []


@dataclass(frozen=True)
class OperatorNeeds:
    """What the GPU Operator's install needs from a variant: its node's container runtime and
    how the chart must be set for it (components.gpu_operator.OperatorVariant and
    gpulab.config.lab.OperatorChoices are the questions; the policies
    ``toolkit-fits-runtime`` and ``operator-toolkit-redundant`` read the facts).

    Attributes:
        node_runtime: the container runtime on the GPU node that the operator's toolkit
            would configure: ``docker``, ``containerd``, ``k3s`` or ``none`` (no containers
            run), or ``unknown`` (policy ``toolkit-fits-runtime``).
        runtime_injects_gpus: the node's container runtime is set up to inject GPUs before the
            operator runs (minikube ``--gpus=all``, kind the nvkind way), so the operator's
            toolkit is redundant there: off by default (policy ``operator-toolkit-redundant``).
        device_list_reason: why the node's runtime needs :meth:`device_list_strategy` (its
            upstream sources); ``""`` where the variant leaves the chart's choice.
    """

    node_runtime: str = "unknown"
    runtime_injects_gpus: bool = False
    device_list_reason: str = ""

    def operator_toolkit(self, requested: bool | None) -> bool:
        """Whether the operator's container toolkit is on, given ``gpu-lab:toolkit``: True or
        False when set, None when unset (``auto``). By default on unless set false; a variant
        whose node runtime already injects GPUs (:attr:`runtime_injects_gpus`) defaults off."""
        if requested is None:
            return not self.runtime_injects_gpus
        return requested

    def operator_cdi(self, requested: bool | None, get: Getter) -> bool:
        """Whether the chart's ``cdi.enabled`` is on, given ``gpu-lab:cdi``: True or False when
        set, None when unset. By default the chart's own default (on, chart >= v25.10); a
        variant whose node runtime does not read CDI defaults it off and refuses it on
        (:func:`refuse_cdi`)."""
        return True if requested is None else requested

    def device_list_strategy(self, op: OperatorConfig) -> str | None:
        """The device plugin's ``DEVICE_LIST_STRATEGY`` that this variant's node runtime honours,
        so each container gets exactly the GPUs allocated to it; None leaves the chart's choice
        (``cdi-annotations,cdi-cri`` with ``cdi.enabled``, else the plugin's default ``envvar``:
        NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go
        ``transformDevicePluginCtrForCDI``; NVIDIA/k8s-device-plugin v0.20.0
        cmd/nvidia-device-plugin/main.go). The ClusterPolicy applies ``devicePlugin.env`` after
        that transform, so the value set here wins (components/gpu_operator.py)."""
        return None

    def helm_values(self, values: dict[str, Any], op: OperatorConfig) -> None:
        """Adjust the operator's chart values to this variant's node runtime, in place."""

    def containerd_paths(self) -> tuple[str, str] | None:
        """``(config dir, socket)`` of the node's containerd where it is the distribution's own,
        not at stock containerd's paths (k3s); None elsewhere. Policy ``toolkit-fits-runtime``
        expects the operator's toolkit pointed there."""
        return None

    def runtime_class(self, cfg: LabConfig) -> str | None:
        """The smoke Pod's ``runtimeClassName`` (None: the node's default runtime)."""
        return None


@dataclass(frozen=True)
class HostNeeds:
    """What a variant needs on this machine (I/O: preflight and the debug bundle ask it).

    Attributes:
        name: the variant's name, named in a missing tool's finding.
        tools: binaries it runs on this machine (preflight names each missing one's fix).
        bundle_tools: the tools whose versions a debug bundle records for this variant
            (``{"kind": ("kind", "version")}``: tool -> the argv printing its version;
            ops.bundle adds them to the tools every lab may use).
    """

    name: str
    tools: tuple[Tool, ...] = ()
    bundle_tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def missing_tools(self, which: Callable[[str], str | None] = shutil.which) -> list[Finding]:
        """One failed Finding per binary of :attr:`tools` that is not on PATH."""

        return [
            preflight.Finding(
                f"tool-{t.name}", False, f"{t.name} is not on PATH (needed by the {self.name} lab)", t.fix
            )
            for t in self.tools
            if which(t.name) is None
        ]

    def host_findings(self, cfg: LabConfig) -> Sequence[Finding]:
        """Every host check this variant needs, passing ones included (after its tools)."""
        return []


#: :attr:`Lifecycle.endpoint_fix` of a variant that declares none.
DEFAULT_ENDPOINT_FIX: Final = (
    "make the cluster answer at {recorded} again, or make the lab anew at {live} with "
    "`GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab`: the stack's Kubernetes "
    "provider was built with the recorded address, and Pulumi would replace every object of the lab "
    "to use another one"
)


@dataclass(frozen=True)
class Lifecycle:
    """A variant's cluster outside the engine: its helper and steps, where it keeps its files,
    whether its cluster is gone, what this machine can tell of it, and what the lab left
    (ops: teardown, repair, bundle; the registry's step names).

    Attributes:
        name: the variant's name: its helper is ``variants.<name>.ctl``, its files under
            ``.state/<name>/``.
        steps: its helper module's subcommands and their stable step names
            (``{"up": "kind-cluster"}``; gpulab.core.argv.step_of).
        direct_steps: ``(tool, verb)`` a program might run directly, not through the helper,
            and their step names (``{("minikube", "start"): "minikube-start"}``).
        endpoint_fix: the first fix when the stack's cluster answers at another API server
            endpoint than the one recorded at create (the same ``kube-system`` UID): a
            template over ``{profile}``, ``{stack}``, ``{recorded}`` and ``{live}``
            (:meth:`moved_fix`); data, each variant's own words.
    """

    name: str
    steps: Mapping[str, str] = field(default_factory=dict)
    direct_steps: Mapping[tuple[str, str], str] = field(default_factory=dict)
    endpoint_fix: str = DEFAULT_ENDPOINT_FIX

    @property
    def ctl(self) -> str:
        """The variant's helper module, run as ``python -m variants.<name>.ctl``."""
        return f"variants.{self.name}.ctl"

    def workdir(self, profile: str) -> str:
        """Where the helper keeps the files of cluster ``profile``: ``.state/<variant>/<profile>``,
        relative to the project directory."""
        return f".state/{self.name}/{profile}"

    def named_cluster(self, cfg: LabConfig) -> dict[str, Any]:
        """The arguments of a cluster the helper makes in a work dir (kind, sim): ``name`` (the
        profile), ``workdir`` (:meth:`workdir`) and ``timeout_seconds``."""
        return {
            "name": cfg.profile,
            "workdir": self.workdir(cfg.profile),
            "timeout_seconds": cfg.cluster_timeout_seconds,
        }

    def foreign_kubeconfig(self, cfg: LabConfig) -> str | None:
        """The kubeconfig (YAML text) of a cluster that is there before the lab and that the lab
        does not own, readable before any resource exists: preflight reads there what the plan
        would take over (gpulab.kube.takeover). None, the default: the lab makes its cluster, so
        nothing of anyone else's is in it.

        Raises:
            gpulab.core.errors.GpuLabError: the kubeconfig cannot be read (the variant's error).
        """
        return None

    def gone(self, profile: str, root: Path, run: Runner = run_quietly) -> tuple[bool | None, str]:
        """Whether this lab's cluster ``profile`` no longer exists: (True|False|None, evidence).

        None: this machine cannot tell (the caller then keeps the state).
        """
        return False, f"the lab does not own {self.name} clusters"

    def start_or_delete_hint(self, profile: str) -> str:
        """The first fix for a cluster of this variant that exists but does not answer."""
        return "make the API server reachable"

    def live_kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        """The kubeconfig this variant's own tool gives for cluster ``profile`` now (what a
        fresh read would give the lab: where the cluster answers now), or None when this
        machine cannot tell (no tool, no file, not readable without a password). Compared
        with the endpoint recorded at create by ``make lab``/``verify``/``destroy``
        (ops.endpoint); ``get`` reads the stack's config."""
        return None

    def moved_fix(self, profile: str, stack: str, recorded: str, live: str) -> str:
        """:attr:`endpoint_fix` filled in."""
        return self.endpoint_fix.format(profile=profile, stack=stack, recorded=recorded, live=live)

    def local_status(self, profile: str, root: Path) -> str | None:
        """What this machine can tell about cluster ``profile`` when its API server does not
        answer (its processes, why it went down), in one sentence; None when nothing."""
        return None

    def local_files(self, profile: str, root: Path) -> dict[str, Path]:
        """Log files of cluster ``profile`` on this machine worth a debug bundle (bundle name ->
        path); empty when the variant keeps none."""
        return {}

    def leftover(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        """What the lab started for cluster ``profile`` by its own record on disk (not the
        stack's state): (the argv that removes it, what it is), or None when there is none.
        ``make destroy`` runs it after ``pulumi destroy``, so a cluster whose create was
        interrupted before it reached the state is removed too. By default: the record
        :func:`record_started` wrote, removed with :meth:`down_argv`."""
        argv = self.down_argv(profile)
        if argv is None or not started_record(root, self.name, profile).exists():
            return None
        return argv, f"the {self.name} cluster {profile!r}"

    def queue_controller(self, profile: str) -> tuple[list[str], list[str]] | None:
        """Where the variant runs Kueue's controller itself rather than as the chart's
        Deployment (the sim: a process of its cluster, variants/sim/ctl/queues.py): the helper's
        argv that starts it and waits until the API server reaches its webhooks, and the one
        that stops it (success when already gone). None, the default: the chart's Pod runs it."""
        return None

    def down_argv(self, profile: str) -> list[str] | None:
        """The helper's argv that deletes cluster ``profile`` (success when already gone), for
        :meth:`leftover`; None where the variant keeps no record."""
        return None


class Variant(ABC):
    """One kind of cluster (minikube, kind, k3s, an existing cluster, the simulated one): a
    name, five facets the rest of the lab asks (each caller the one it uses), its component
    and its GPU expectation. A facet a variant does not declare is the default one, named
    after it (:meth:`__init_subclass__`).

    Class attributes:
        name: the ``gpu-lab:cluster`` value and the stack name.
        capabilities: what the lab may do with its cluster (:class:`Capabilities`).
        config: its config keys, checks, settings and defaults (:class:`ConfigRules`).
        operator: its node runtime and what the operator's chart needs (:class:`OperatorNeeds`).
        host: what it needs on this machine (:class:`HostNeeds`).
        local: its cluster outside the engine (:class:`Lifecycle`).
    """

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities] = Capabilities()
    config: ClassVar[ConfigRules]
    operator: ClassVar[OperatorNeeds] = OperatorNeeds()
    host: ClassVar[HostNeeds]
    local: ClassVar[Lifecycle]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The facets named after the variant that a subclass leaves to the defaults."""
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:
            return
        if "config" not in cls.__dict__:
            cls.config = ConfigRules(name)
        if "host" not in cls.__dict__:
            cls.host = HostNeeds(name)
        if "local" not in cls.__dict__:
            cls.local = Lifecycle(name)

    @abstractmethod
    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        """The component that yields the cluster's kubeconfig and version."""

    def gpu_expectation(self, cfg: LabConfig, facts: HostFacts | None) -> GpuExpectation:
        """Physical GPUs allocatable must add up to: by default, the host's."""
        return GpuExpectation(facts.count if facts else None)
