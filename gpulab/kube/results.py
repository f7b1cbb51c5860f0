"""What each cluster-side check prints, typed: one frozen record per check.

Each ``python -m gpulab.kube <check>`` prints one JSON object on stdout (:mod:`gpulab.kube.cli`);
the component that ran it (components/) reads it back. Both go through the check's record here:
the check returns it and the command prints :meth:`CheckRecord.to_json`; the component reads
it with :meth:`CheckRecord.from_json` and uses attributes, never key strings.

A record's JSON keys are its field names in camelCase (``smoke_gpu_uuids`` -> ``smokeGpuUuids``);
each field's type annotation is its shape, checked by :meth:`CheckRecord.from_json`, which names
every key of a wrong shape at once (as gpulab.core.outputs.LabOutputs.from_json does for the
stack outputs). A key the JSON lacks reads as None (a check of an earlier version, or a test's
shorter stand-in); a key this version does not know is ignored. :meth:`CheckRecord.to_json`
writes every field, None as null, except those marked :data:`OPTIONAL_KEY` (left out when None,
as the checks always did: ``smokeClaim`` only on the DRA path).

A new key: a field of the record (a docstring line saying what it is), the check sets it, and
the component reads the attribute.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Final, Self, Union

from gpulab.core.errors import GpuLabError
from gpulab.core.outputs import shown_value


class CheckResultError(GpuLabError, ValueError):
    """A check printed JSON that does not have its record's shape.

    ``problems``: one line per bad key, ``"<key>: expected <shape>, got <value> (<type>)"``;
    the message names the command, lists them all and the first fix.
    """

    def __init__(self, command: str, problems: Iterable[str]) -> None:
        self.command = command
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(
            f"{command} printed a result of the wrong shape ({len(self.problems)} key(s)):\n{lines}\n"
            "  first fix: the command and the program come from different versions of gpu-lab; "
            "run make lab from one checkout"
        )


class _Bad(Exception):
    """A value that does not fit its shape; the argument says what was expected."""


#: Scalars: (what one is called, what many are called).
_SCALARS: Final[dict[Any, tuple[str, str]]] = {
    str: ("a string", "strings"),
    int: ("an integer", "integers"),
    bool: ("true or false", "booleans"),
    float: ("a number", "numbers"),
    Any: ("any value", "values"),
}


def _describe(hint: Any) -> tuple[str, str]:
    """(singular, plural) of a shape, e.g. ``("a list of strings", "lists of strings")``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        one, many = _describe(inner[0]) if len(inner) == 1 else ("a value", "values")
        return f"{one} or null", f"{many} or nulls"
    if origin is list:
        one = f"a list of {_describe(args[0])[1]}"
        return one, f"lists of {_describe(args[0])[1]}"
    if origin is dict:
        what = _describe(args[1])[1]
        return ("an object", "objects") if args[1] is Any else (f"an object of {what}", f"objects of {what}")
    return _SCALARS[hint]


def _check(value: Any, hint: Any) -> None:
    """Raise :class:`_Bad` when ``value`` (parsed JSON) does not fit ``hint``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        for a in inner:
            try:
                _check(value, a)
                return
            except _Bad:
                pass
        raise _Bad(_describe(hint)[0])
    if hint is Any:
        return
    if origin is list:
        if not isinstance(value, list):
            raise _Bad(_describe(hint)[0])
        for v in value:
            try:
                _check(v, args[0])
            except _Bad:
                raise _Bad(_describe(hint)[0]) from None
        return
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise _Bad(_describe(hint)[0])
        for v in value.values():
            try:
                _check(v, args[1])
            except _Bad:
                raise _Bad(_describe(hint)[0]) from None
        return
    ok = {
        str: lambda v: isinstance(v, str),
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        bool: lambda v: isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    }[hint]
    if not ok(value):
        raise _Bad(_describe(hint)[0])


def camel(name: str) -> str:
    """A field name as its JSON key: ``smoke_gpu_uuids`` -> ``smokeGpuUuids``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


#: A field's metadata: the check prints its key only when it has a value (``smokeClaim``).
OPTIONAL_KEY: Final = types.MappingProxyType({"optional_key": True})


#: :func:`_shapes` of each record class, read once.
_SHAPES: Final[dict[type, tuple[tuple[str, str, Any, bool], ...]]] = {}


def _shapes(cls: type) -> tuple[tuple[str, str, Any, bool], ...]:
    """(attribute, JSON key, type hint, optional key) of each field of a record class."""
    if cls not in _SHAPES:
        hints = typing.get_type_hints(cls)
        _SHAPES[cls] = tuple(
            (f.name, camel(f.name), hints[f.name], bool(f.metadata.get("optional_key")))
            for f in fields(cls)
            if not f.metadata.get("not_a_key")
        )
    return _SHAPES[cls]


@dataclass(frozen=True)
class CheckRecord:
    """The base of every check's record: :meth:`from_json` and :meth:`to_json` (module docstring).

    ``COMMAND``: the command that prints it (``"gpulab.kube smoke"``), named in errors.
    """

    COMMAND: ClassVar[str] = "gpulab.kube"

    @classmethod
    def from_json(cls, raw: Any) -> Self:
        """The record of a check's printed JSON (a dict; absent keys None, unknown keys ignored).

        Raises:
            CheckResultError: ``raw`` is not an object, or any value has the wrong shape (every
                bad key named, e.g. ``smokeEvents: expected a list of strings, got 'x' (str)``).
        """
        if not isinstance(raw, Mapping):
            raise CheckResultError(cls.COMMAND, [f"<document>: expected an object, got {shown_value(raw)}"])
        values: dict[str, Any] = {}
        problems: list[str] = []
        for attr, key, hint, _ in _shapes(cls):
            if key not in raw:
                continue
            try:
                _check(raw[key], hint)
            except _Bad as bad:
                problems.append(f"{key}: expected {bad.args[0]}, got {shown_value(raw[key])}")
                continue
            values[attr] = raw[key]
        if problems:
            raise CheckResultError(cls.COMMAND, problems)
        return cls(**values)

    @classmethod
    def from_stdout(cls, text: str) -> Self:
        """The record of what the command printed: the JSON object on its last stdout line
        (``{}``, every field None, when it printed nothing).

        Raises:
            CheckResultError: the last line is not JSON, or as :meth:`from_json`.
        """
        lines = text.strip().splitlines() if text else []
        try:
            raw = json.loads(lines[-1]) if lines else {}
        except ValueError as exc:
            raise CheckResultError(cls.COMMAND, [f"<last stdout line>: not JSON: {exc}"]) from exc
        return cls.from_json(raw)

    def to_json(self) -> dict[str, Any]:
        """What the command prints: ``{key: value}`` of every field (None as null), less the
        :data:`OPTIONAL_KEY` fields without a value."""
        return {
            key: getattr(self, attr)
            for attr, key, _, optional in _shapes(type(self))
            if not (optional and getattr(self, attr) is None)
        }


@dataclass(frozen=True)
class PingResult(CheckRecord):
    """``python -m gpulab.kube ping`` (gpulab.kube.client.ping): the API server answers, is ready
    and serves this cluster's data.

    Attributes:
        kubernetes_version: the API server's gitVersion (``"v1.36.3"``).
        kube_system_uid: Namespace ``kube-system``'s UID (the cluster's identity).
    """

    COMMAND: ClassVar[str] = "gpulab.kube ping"

    kubernetes_version: str | None = None
    kube_system_uid: str | None = None


# --- the GPU stack's readiness ---------------------------------------------------------------


@dataclass(frozen=True)
class GateResult(CheckRecord):
    """``python -m gpulab.kube gate`` (gpulab.kube.gate): the GPU Operator's stack is ready.

    Attributes:
        gpu_resource: the whole-GPU resource counted (``nvidia.com/gpu``, or
            ``nvidia.com/gpu.shared`` under time-slicing's rename).
        allocatable_gpus, capacity_gpus: node allocatable and capacity of it, summed over the
            GPU nodes (None where no node has the key).
        mig_resources: ``{"nvidia.com/mig-1g.18gb": 7}`` summed over nodes, ``{}`` without MIG.
        cluster_policy_state: ClusterPolicy ``status.state`` (``"ready"``), None where not waited on.
        device_plugin_pods: ``[{"name", "phase", "ready", "restarts", "simulated"}]``.
        kubernetes_version: the API server's gitVersion (``"v1.36.3"``).
        measured_at: when the gate read them (UTC ISO 8601).
    """

    COMMAND: ClassVar[str] = "gpulab.kube gate"

    gpu_resource: str | None = None
    allocatable_gpus: int | None = None
    capacity_gpus: int | None = None
    mig_resources: dict[str, int] | None = None
    cluster_policy_state: str | None = None
    device_plugin_pods: list[dict[str, Any]] | None = None
    kubernetes_version: str | None = None
    measured_at: str | None = None


@dataclass(frozen=True)
class FleetResult(GateResult):
    """``python -m gpulab.kube fleet`` (gpulab.kube.fleet): every GPU node gated, then smoke and
    compute Pods on each; the gate's fields (``devicePluginPods`` rows carry their ``node``,
    ``migResources`` is ``{}``) and:

    Attributes:
        nodes: one row per GPU node (gpulab.core.outputs.NodeRow's keys).
        nodes_summary: ``"3 nodes, 20 GPUs: 19 allocatable; node gpu-b has 7 of 8"``.
        nodes_passed: how many rows passed every check.
        expected_gpus: physical GPUs, summed over the nodes' expectations less their replicas.
        time_slicing_replicas: the replicas every node's GFD labels give, else 1.
        device_plugin_found: ``namespace/name`` of the device-plugin DaemonSets found by labels.
    """

    COMMAND: ClassVar[str] = "gpulab.kube fleet"

    nodes: list[dict[str, Any]] | None = None
    nodes_summary: str | None = None
    nodes_passed: int | None = None
    expected_gpus: int | None = None
    time_slicing_replicas: int | None = None
    device_plugin_found: list[str] | None = None


@dataclass(frozen=True)
class DraGateResult(CheckRecord):
    """``python -m gpulab.kube dra-gate`` (gpulab.kube.dra.gate): the DeviceClass exists and every
    GPU node has a ResourceSlice of the driver.

    Attributes:
        dra_slices: per GPU node ``{"node", "pool", "devices": [{"name", "uuid", "productName"}],
            "simulated"}`` (gpulab.kube.dra.slice_rows).
        allocatable_gpus: the GPUs the slices publish.
        device_class: the DeviceClass waited for (``gpu.nvidia.com``).
        kubernetes_version, measured_at: as :class:`GateResult`'s.
    """

    COMMAND: ClassVar[str] = "gpulab.kube dra-gate"

    dra_slices: list[dict[str, Any]] | None = None
    allocatable_gpus: int | None = None
    device_class: str | None = None
    kubernetes_version: str | None = None
    measured_at: str | None = None


# --- the GPU Pods ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmokeResult(CheckRecord):
    """``python -m gpulab.kube smoke`` (gpulab.kube.smoke): the smoke Pod succeeded, what it printed.

    Attributes:
        smoke_phase: ``"Succeeded"``.
        smoke_driver_version, smoke_cuda_version: the nvidia-smi header's (CUDA None on old drivers).
        smoke_events: the Pod's event reasons in order (``["Scheduled", "Pulled", ...]``).
        smoke_node: the node it ran on.
        smoke_gpu_uuids: the GPUs its ``nvidia-smi -L`` listed (None: it listed none).
        smoke_log_simulated: the log was the sim lab's.
        smoke_started_at, measured_at: when its container started and finished (UTC ISO 8601).
        smoke_claim: ``gpuStack: dra`` only (printed only then): the claim as allocated and
            reserved, ``{"claim", "podClaim", "devices", "reservedFor", "reservedForPod",
            "uuidsMatch"}`` (gpulab.kube.dra.smoke_claim).
    """

    COMMAND: ClassVar[str] = "gpulab.kube smoke"

    smoke_phase: str | None = None
    smoke_driver_version: str | None = None
    smoke_cuda_version: str | None = None
    smoke_events: list[str] | None = None
    smoke_node: str | None = None
    smoke_gpu_uuids: list[str] | None = None
    smoke_log_simulated: bool | None = None
    smoke_started_at: str | None = None
    measured_at: str | None = None
    smoke_claim: dict[str, Any] | None = field(default=None, metadata=OPTIONAL_KEY)


@dataclass(frozen=True)
class ComputeResult(CheckRecord):
    """``python -m gpulab.kube compute`` (gpulab.kube.compute): vectorAdd passed in every container.

    Attributes:
        compute_phase: ``"Succeeded"``; compute_result: ``"passed"`` (else the check failed).
        compute_gpus: containers that passed, one GPU each.
        compute_gpu_uuids: ``{container: {"gpus": [UUID], "mig": [UUID]}}`` (what each listed).
        compute_node: the node it ran on; compute_log_simulated: a log was the sim lab's.
        compute_started_at, measured_at: when its containers started and finished (UTC ISO 8601).
    """

    COMMAND: ClassVar[str] = "gpulab.kube compute"

    compute_phase: str | None = None
    compute_result: str | None = None
    compute_gpus: int | None = None
    compute_gpu_uuids: dict[str, Any] | None = None
    compute_node: str | None = None
    compute_log_simulated: bool | None = None
    compute_started_at: str | None = None
    measured_at: str | None = None


@dataclass(frozen=True)
class DcgmResult(CheckRecord):
    """``python -m gpulab.kube dcgm`` (gpulab.kube.dcgm): the DCGM exporter sampled.

    Attributes:
        dcgm_metrics: gpulab.kube.dcgm_metrics.summarize's dict (the ``dcgmMetrics`` output).
        measured_at: when the scrape ended (UTC ISO 8601).
    """

    COMMAND: ClassVar[str] = "gpulab.kube dcgm"

    dcgm_metrics: dict[str, Any] | None = None
    measured_at: str | None = None


@dataclass(frozen=True)
class BenchmarkResult(CheckRecord):
    """``python -m gpulab.kube benchmark`` (gpulab.kube.benchmark): the TFLOPS Pod's document.

    The document is gpulab.tflops's (its own schema, ``"schema": "gpulab.dev/tflops/v2"``): the
    fields the lab reads are typed here, and ``document`` keeps the whole as the Pod printed it,
    which is what the command prints (:meth:`to_json`).

    Attributes:
        results: per dtype ``{"tflops", "burst", "sustained", ...}`` (gpulab.tflops.report).
        reference: the plain loop's measurement, None when not run.
        measured_at: when the Pod measured (UTC ISO 8601).
        document: every key the Pod printed.
    """

    COMMAND: ClassVar[str] = "gpulab.kube benchmark"

    results: dict[str, Any] | None = None
    reference: dict[str, Any] | None = None
    measured_at: str | None = None
    document: dict[str, Any] = field(default_factory=dict, metadata={"not_a_key": True})

    @classmethod
    def from_json(cls, raw: Any) -> Self:
        """:meth:`CheckRecord.from_json`, keeping the whole document.

        Raises:
            CheckResultError: as :meth:`CheckRecord.from_json`.
        """
        return replace(super().from_json(raw), document=dict(raw))

    def to_json(self) -> dict[str, Any]:
        """The document as the Pod printed it."""
        return dict(self.document)


# --- a guest's permissions, the queues -------------------------------------------------------


@dataclass(frozen=True)
class AccessResult(CheckRecord):
    """``python -m gpulab.kube access`` (gpulab.kube.access): every permission the lab needs, granted.

    Attributes:
        namespace: the lab's namespace (``labNamespace``).
        allowed: each permission asked, described (``"create pods in namespace gpu-lab"``).
    """

    COMMAND: ClassVar[str] = "gpulab.kube access"

    namespace: str | None = None
    allowed: list[str] | None = None


@dataclass(frozen=True)
class QueueProofResult(CheckRecord):
    """``python -m gpulab.kube queues`` (gpulab.kube.queues.prove): Kueue admits all or nothing.

    Attributes:
        measured_at: when the proof ended (UTC ISO 8601, ``Z``).
        namespace, local_queue, cluster_queue: where the proof ran.
        resource: the GPU resource of the quota; quota: the ClusterQueue's nominalQuota read back;
        measured_allocatable: what the gate measured; quota_matches_allocatable: the two equal.
        queueing_strategy: the ClusterQueue's (``BestEffortFIFO``).
        jobs: the two whole-quota Jobs, ``[{"job", "role", "gpus", "workload", "createdAt",
            "admittedAt", "finishedAt", "waitedSeconds", "pending"}]`` (gpulab.kube.queues.job_row).
        gang: the over-quota Job, never admitted: ``{"job", "pods", "perPod", "total", "admitted",
            "podsCreated", "suspended", "reason", "message", "observedSeconds"}``.
        unqueued_pod: the Pod without the queue label: ``{"pod", "queueLabel", "workload",
            "admissionGate", "phase"}``.
    """

    COMMAND: ClassVar[str] = "gpulab.kube queues"

    measured_at: str | None = None
    namespace: str | None = None
    local_queue: str | None = None
    cluster_queue: str | None = None
    resource: str | None = None
    quota: int | None = None
    measured_allocatable: int | None = None
    quota_matches_allocatable: bool | None = None
    queueing_strategy: str | None = None
    jobs: list[dict[str, Any]] | None = None
    gang: dict[str, Any] | None = None
    unqueued_pod: dict[str, Any] | None = None


@dataclass(frozen=True)
class QueueCensusResult(CheckRecord):
    """``python -m gpulab.kube queues-census`` (gpulab.kube.queues.census): what of Kueue is left.

    Attributes:
        leftovers: ``["customresourcedefinition/<name>", "namespace/kueue-system", ...]``; empty:
            nothing left.
    """

    COMMAND: ClassVar[str] = "gpulab.kube queues-census"

    leftovers: list[str] | None = None


@dataclass(frozen=True)
class QueueSweepResult(CheckRecord):
    """``python -m gpulab.kube queues-sweep`` (gpulab.kube.queues.sweep): Kueue's aggregated
    ClusterRoles deleted after its release.

    Attributes:
        deleted: the ClusterRoles deleted (``"clusterrole/<name>"``).
    """

    COMMAND: ClassVar[str] = "gpulab.kube queues-sweep"

    deleted: list[str] | None = None
