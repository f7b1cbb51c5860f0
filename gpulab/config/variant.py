"""The record of a cluster variant: the data in which variants differ, declared once.

A variant (``variants/<name>/``) is this record plus a handful of verbs
(``variants.base.Variant``: preflight, create, status, delete, kubeconfig, GPU expectation).
The record sits here, on the floor config parsing stands on, so config parsing
(gpulab.config.lab), the shared components (components/gpu_operator.py), the policies and
the operations read the same record and nothing mirrors it as a protocol. Every field is
data: a constant, a template, or the variant's settings type; the few methods are pure
functions of the fields (and of ``k3sNriPlugin``, a chart value every variant shares).

:class:`VariantSettings` is the base of every variant's own settings (``variants/<name>/
settings.py``): a frozen dataclass of the keys that mean something for that variant only,
with its ``check`` (format and bounds, whichever variant is chosen) and ``resolve`` (the
checks that apply when it is chosen, and the settings parsed). ``LabConfig.variant_settings``
carries the chosen variant's; only that variant reads them (``LabConfig.settings``).

No Pulumi, no I/O; a variant's policies are plain checks (:class:`CommandPolicy`), which the
policy pack wraps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gpulab.core import fixes
from gpulab.core.findings import Finding

#: ``get(key)``: a config key's parsed value, or its default (Pulumi.yaml).
Getter = Callable[[str], object]


@dataclass(frozen=True)
class VariantSettings:
    """The settings of a variant with no keys of its own, and the base of every variant's
    settings type (a frozen dataclass whose defaults are Pulumi.yaml's)."""

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """Append one line per bad value of this variant's own keys (format, bounds), whichever
        variant is chosen: one stack file may carry several variants' keys."""

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> VariantSettings:
        """The settings when this variant is chosen, after the checks that apply only then (one
        line per problem appended). ``values``: the keys set, coerced (``toolkit`` and ``cdi``
        only when set to true or false); ``env``: the environment (e.g. ``$KUBECONFIG``)."""
        return cls()

    @property
    def simulated(self) -> bool:
        """True when no operator process runs in this lab (its work is simulated, labelled)."""
        return False

    @property
    def capture(self) -> str | None:
        """The capture ``hostProbe: capture`` reads when ``capture`` is empty (None: the first)."""
        return None


#: The settings of a variant with no keys of its own (and of a bare ``LabConfig()``).
NO_SETTINGS: Final = VariantSettings()


@dataclass(frozen=True)
class Tool:
    """A binary the variant runs on this machine, and how to get it."""

    name: str
    fix: str


@dataclass(frozen=True)
class CommandPolicy:
    """A policy a variant brings on the command of one of its steps (the policy pack runs it on
    every ``command:local:Command`` of that step: policy/validators/variant_policies.py).

    Attributes:
        name: the policy's stable kebab-case name; description: its imperative sentence.
        step: the step whose command it reads (one of the record's ``steps`` or ``direct_steps``).
        check: ``(the Command's create: its JSON-encoded argv, the policy's settings) -> findings``
            (gpulab.core.findings.Finding, one per item; not evaluated when unreadable).
        properties: the policy's config schema (JSON schema by key; defaults = expected values).
    """

    name: str
    description: str
    step: str
    check: Callable[[Sequence[str] | str, Mapping[str, Any]], list[Finding]]
    properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


#: :attr:`VariantSpec.endpoint_fix` of a variant that declares none.
DEFAULT_ENDPOINT_FIX: Final = (
    "make the cluster answer at {recorded} again, or make the lab anew at {live} with "
    "`GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab`: the stack's Kubernetes "
    "provider was built with the recorded address, and Pulumi would replace every object of the lab "
    "to use another one"
)
DEFAULT_QUEUES_NOTE: Final = (
    "the queue layer is proven on the simulated lab only so far (issue 39 item 4, the real node, "
    "is still open)"
)


@dataclass(frozen=True)
class VariantSpec:
    """Everything constant in which one cluster variant differs from another.

    What the lab may do with its cluster:
        name: the ``gpu-lab:cluster`` value and the stack name; its helper is
            ``variants.<name>.ctl`` (:attr:`ctl`), its files under ``.state/<name>/``.
        owns_cluster: the lab creates and deletes the cluster (an unreachable cluster confirmed
            gone may be pruned from the state, the provider may drop unreachable objects, the
            chart's CRDs of another version may be upgraded; output ``ownsCluster``).
        gpu_stacks: the ``gpuStack`` values offered (gpulab.config.fleet.GPU_STACKS);
            ``gpu_stack_note`` why the others are not, ``dra_note`` why ``dra`` is not where
            the variant has a reason of its own (:meth:`refusal`).
        queues: the queue layer (``queues``: Kueue) is offered; ``queues_note`` why not.

    Its config:
        settings: its settings type (:class:`VariantSettings`: its own keys, checked and parsed).
        exclusive_settings: ``(key, value)`` settings that mean something for this variant only,
            refused for every other one; ``exclusive_keys``: keys whose any non-empty value is.
        bounds: ``(lowest, highest)`` inclusive of each numeric key of its own (Pulumi.yaml
            states each highest), checked by its settings' ``check``.
        default_host_probe: ``hostProbe: auto`` resolved: ``nvidia-smi``, ``capture`` or ``off``.
        simulated_fields: output keys whose values are simulated when its lab is
            (``LabConfig.simulated``): the operator's, and the host's where a capture stands in.

    Its node runtime and what the GPU Operator's chart needs there:
        node_runtime: the container runtime on the GPU node the operator's toolkit would
            configure: ``docker``, ``containerd``, ``k3s``, ``none`` (no containers run) or
            ``unknown`` (policy ``toolkit-fits-runtime``).
        runtime_injects_gpus: the node's runtime injects GPUs before the operator runs
            (minikube ``--gpus=all``, kind the nvkind way): the toolkit defaults off
            (:meth:`toolkit`; policy ``operator-toolkit-redundant``).
        cdi: ``cdi.enabled`` when ``gpu-lab:cdi`` is unset (:meth:`cdi_enabled`): the chart's
            own default, on, unless the node's runtime reads no CDI (the variant's settings
            then refuse ``cdi=true``).
        device_list: the device plugin's ``DEVICE_LIST_STRATEGY`` that the node's runtime honours
            so each container gets exactly its GPUs (None: the chart's choice,
            ``cdi-annotations,cdi-cri`` with CDI, else ``envvar``: NVIDIA/gpu-operator v26.7.0
            ``transformDevicePluginCtrForCDI``); ``device_list_reason`` why, with sources.
        runtime_class: the smoke Pod's ``runtimeClassName`` (None: the node's default runtime).
        containerd: ``(config dir, socket)`` of the node's containerd where it is the
            distribution's own (k3s); policy ``toolkit-fits-runtime`` expects the toolkit there.
        toolkit_env: the operator toolkit's ``toolkit.env`` when it is on (k3s: its containerd).

    This machine, and its cluster outside the engine:
        tools: binaries it runs here (preflight names each missing one's fix).
        bundle_tools: tool -> the argv printing its version, for the debug bundle.
        steps: its helper's subcommands and their stable step names (``{"up": "kind-cluster"}``);
            ``direct_steps``: ``(tool, verb)`` run directly and theirs.
        endpoint_fix: the first fix when its cluster answers at another API server endpoint
            than recorded, over ``{profile}``, ``{stack}``, ``{recorded}``, ``{live}``.
        start_or_delete_hint: the first fix for its cluster that exists but does not answer,
            over ``{profile}`` and ``{workdir}``.
        node_command: how a fix runs a command on its GPU node from this host, over
            ``{profile}`` and ``{cmd}`` (``"minikube -p {profile} ssh -- {cmd}"``; ``"{cmd}"``
            where this host is the node; the default where the lab cannot reach the node).
        queue_controller: the helper's subcommands ``(start, stop)`` that run Kueue's controller
            as a process of the cluster (the sim), given ``--name`` and ``--workdir``; None: the
            chart's Pod runs it.
        policies: its policies on its own steps' commands (:class:`CommandPolicy`), which the
            policy pack runs beside its own.
        device_plugin_addon: whether its cluster runs a device plugin of its own (minikube's
            ``nvidia-device-plugin`` addon), read from its steps' commands: ``(step -> the
            Command's create) -> (on, what says so)``, None when none of its steps is there;
            the policy ``single-device-plugin-owner`` asks it. None: it has no such addon.
    """

    name: str
    owns_cluster: bool = True
    gpu_stacks: tuple[str, ...] = ("install",)
    gpu_stack_note: str = ""
    dra_note: str = ""
    queues: bool = False
    queues_note: str = DEFAULT_QUEUES_NOTE
    settings: type[VariantSettings] = VariantSettings
    exclusive_settings: tuple[tuple[str, object], ...] = ()
    exclusive_keys: tuple[str, ...] = ()
    bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    default_host_probe: str = "nvidia-smi"
    simulated_fields: tuple[str, ...] = ()
    node_runtime: str = "unknown"
    runtime_injects_gpus: bool = False
    cdi: bool = True
    device_list: str | None = None
    device_list_reason: str = ""
    runtime_class: str | None = None
    containerd: tuple[str, str] | None = None
    toolkit_env: tuple[tuple[str, str], ...] = ()
    tools: tuple[Tool, ...] = ()
    bundle_tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    steps: Mapping[str, str] = field(default_factory=dict)
    direct_steps: Mapping[tuple[str, str], str] = field(default_factory=dict)
    endpoint_fix: str = DEFAULT_ENDPOINT_FIX
    start_or_delete_hint: str = "make the API server reachable"
    node_command: str = fixes.ANY_NODE
    queue_controller: tuple[str, str] | None = None
    policies: tuple[CommandPolicy, ...] = ()
    device_plugin_addon: Callable[[Mapping[str, Sequence[str] | str]], tuple[bool, str] | None] | None = None

    @property
    def ctl(self) -> str:
        """The variant's helper module, run as ``python -m variants.<name>.ctl``."""
        return f"variants.{self.name}.ctl"

    def workdir(self, profile: str) -> str:
        """Where the helper keeps cluster ``profile``'s files: ``.state/<name>/<profile>``,
        relative to the project directory."""
        return f".state/{self.name}/{profile}"

    def refusal(self, stack: str) -> str:
        """Why ``gpuStack: <stack>`` is refused on this variant ("": no reason recorded)."""
        return self.dra_note if stack == "dra" and self.dra_note else self.gpu_stack_note

    def toolkit(self, requested: bool | None) -> bool:
        """The operator's toolkit on or off, given ``gpu-lab:toolkit`` (None: unset): as set,
        else off where the node's runtime already injects GPUs."""
        return (not self.runtime_injects_gpus) if requested is None else requested

    def cdi_enabled(self, requested: bool | None, nri_plugin: bool) -> bool:
        """``cdi.enabled``, given ``gpu-lab:cdi`` (None: unset): as set, else on with the NRI
        plugin (which needs it), else :attr:`cdi`."""
        return (self.cdi or nri_plugin) if requested is None else requested

    def device_list_strategy(self, nri_plugin: bool) -> str | None:
        """:attr:`device_list`; None (the chart's choice) where the operator's NRI plugin
        (``k3sNriPlugin``) injects the CDI devices, into any runtime class."""
        return None if nri_plugin else self.device_list

    def smoke_runtime_class(self, nri_plugin: bool) -> str | None:
        """:attr:`runtime_class`; None with the NRI plugin (it injects into any runtime class)."""
        return None if nri_plugin else self.runtime_class

    def moved_fix(self, profile: str, stack: str, recorded: str, live: str) -> str:
        """:attr:`endpoint_fix` filled in."""
        return self.endpoint_fix.format(profile=profile, stack=stack, recorded=recorded, live=live)

    def hint(self, profile: str) -> str:
        """:attr:`start_or_delete_hint` filled in."""
        return self.start_or_delete_hint.format(profile=profile, workdir=self.workdir(profile))

    def node(self, profile: str) -> str:
        """:attr:`node_command` for cluster ``profile``: a template of ``{cmd}`` only
        (gpulab.core.fixes.on_node)."""
        return self.node_command.replace("{profile}", profile)

    def queue_controller_argv(self, profile: str) -> tuple[list[str], list[str]] | None:
        """The helper's argv that starts Kueue's controller (and waits until the API server
        reaches its webhooks) and the one that stops it (success when gone); None: the chart's
        Pod runs it."""
        if self.queue_controller is None:
            return None
        where = ["--name", profile, "--workdir", self.workdir(profile)]
        start, stop = self.queue_controller
        return (
            ["python", "-m", self.ctl, start, *where],
            ["python", "-m", self.ctl, stop, *where],
        )
