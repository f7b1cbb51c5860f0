"""The one interface every cluster variant implements, and the rest of the lab calls.

The shape is NVIDIA holodeck's provider interface (pkg/provider/provider.go: one interface of
few verbs, one folder per environment kind): :class:`Variant` is one record, ``spec``
(gpulab.config.variant.VariantSpec: every constant in which variants differ, declared once,
below config parsing, so config, components and policies read it and nothing mirrors it),
and six verbs: ``preflight``, ``create``, ``status``, ``delete``, ``kubeconfig`` and
``gpu_expectation``. Everything a variant is lives in ``variants/<name>/``; the registry
(``variants/registry.py``) is the only place that knows the names.

This module imports no Pulumi: config parsing and preflight use it before any resource
exists; ``create`` imports the variant's component lazily. It also holds what the variants'
helpers share: :func:`ctl_main` (a subcommand's JSON and exit code), :func:`refuse_cdi`,
:func:`missing_tools`, the output keys whose values are simulated where no operator runs
(:data:`OPERATOR_FIELDS`), and what their settings modules read config with (:func:`get_int`
and its siblings; their bounds are checked with gpulab.config.lab.bound_problems, the core
keys' own check).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final

from gpulab.config.variant import Getter, Tool, VariantSpec
from gpulab.core import outputs as out
from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from gpulab.host import preflight

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.core.findings import Finding
    from gpulab.host.facts import HostFacts

__all__ = ["Getter", "Tool", "Variant", "VariantSpec"]


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


def as_root(argv: Sequence[str], euid: int | None = None) -> list[str]:
    """``argv`` as root, for a variant that installs its distribution on this host (k3s,
    MicroK8s): unchanged when the helper is root (effective uid ``euid``, default this
    process's), else through ``sudo -n --`` (non-interactive: it fails instead of asking for a
    password; the variant's preflight checks that first)."""
    uid = os.geteuid() if euid is None else euid
    return list(argv) if uid == 0 else ["sudo", "-n", "--", *argv]


@dataclass(frozen=True)
class RootSteps:
    """The host steps a variant runs as root through ``sudo -n`` (:func:`as_root`: k3s's
    installer, the MicroK8s snap), and its two preflight checks on them, worded once.

    ``stack``: the ``GPULAB_STACK`` value the fixes name; ``steps``: what runs as root, in
    words; ``why_root``: why those steps need root (said when sudo is missing);
    ``sudo_check``/``not_under_sudo_check``: the findings' check ids."""

    stack: str
    steps: str
    why_root: str
    sudo_check: str
    not_under_sudo_check: str

    def check_sudo(self, euid: int, run: cmd.Probe = cmd.probe) -> preflight.Finding:
        """The root steps can run without a prompt: the helper is root (``euid`` 0), or
        ``sudo -n true`` succeeds (credentials cached by ``sudo -v``, or a NOPASSWD rule).
        ``run`` runs it; its exit code ``None`` means sudo is not installed."""
        if euid == 0:
            return preflight.Finding(self.sudo_check, True, f"running as root: {self.steps} need no sudo")
        rc, _, err = run(["sudo", "-n", "true"])
        if rc == 0:
            return preflight.Finding(
                self.sudo_check,
                True,
                f"sudo -n works: only {self.steps} run as root; Pulumi, .venv and .state stay yours",
            )
        if rc is None:
            return preflight.Finding(
                self.sudo_check,
                False,
                f"sudo is not installed: {self.why_root}",
                "install sudo, or run the lab as root itself (not through sudo)",
            )
        said = err.strip().splitlines()[0] if err.strip() else f"exit {rc}"
        return preflight.Finding(
            self.sudo_check,
            False,
            f"sudo asks for a password (sudo -n true: {said}); the lab runs {self.steps} as root "
            "with sudo -n, which never prompts",
            "sudo -v (sudo keeps your credentials for its timestamp_timeout, 15 minutes by default), then "
            f"GPULAB_STACK={self.stack} make lab as yourself; not sudo make lab",
        )

    def check_not_under_sudo(self, euid: int, sudo_user: str | None) -> preflight.Finding:
        """The lab itself is not run through sudo (root, ``euid`` 0, with ``SUDO_USER`` set):
        sudo's ``secure_path`` drops the user's PATH (their ``pulumi`` would look missing and
        the offline toolchain would be built instead), and what the lab writes in the checkout
        (``.venv``, ``.state``, ``stacks/``) would become root's."""
        if euid != 0 or not sudo_user:
            return preflight.Finding(self.not_under_sudo_check, True, "not run through sudo")
        return preflight.Finding(
            self.not_under_sudo_check,
            False,
            f"the lab runs as root through sudo (SUDO_USER={sudo_user}): sudo's secure_path dropped your "
            "PATH (your pulumi) and the checkout's .venv and .state would become root's",
            f"run it as {sudo_user}: GPULAB_STACK={self.stack} make lab (its root steps ask sudo -n "
            f"themselves); if an earlier sudo run left root-owned files: sudo chown -R {sudo_user}: "
            ".venv .state stacks",
        )


def ready_nodes(nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the nodes (JSON dicts, ``kubectl get nodes -o json``'s items) whose Ready
    condition is True."""
    return [
        str((n.get("metadata") or {}).get("name"))
        for n in nodes
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (n.get("status") or {}).get("conditions") or []
        )
    ]


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
    runtime does not read CDI (``why``): for a variant's settings' ``resolve``."""
    if values.get("cdi") is True:
        problems.append(
            f"gpu-lab:cdi=true with cluster={name}: {why}; leave cdi unset (the {name} lab "
            "turns it off) or set it to false"
        )


def named_cluster(spec: VariantSpec, cfg: LabConfig) -> dict[str, Any]:
    """The arguments of a cluster the helper makes in a work dir (kind, sim): ``name`` (the
    profile), ``workdir`` (``spec.workdir``) and ``timeout_seconds``."""
    return {
        "name": cfg.profile,
        "workdir": spec.workdir(cfg.profile),
        "timeout_seconds": cfg.cluster_timeout_seconds,
    }


def missing_tools(spec: VariantSpec, which: Callable[[str], str | None] = shutil.which) -> list[Finding]:
    """One failed Finding per binary of ``spec.tools`` that is not on PATH (preflight, the
    debug bundle)."""
    return [
        preflight.Finding(
            f"tool-{t.name}", False, f"{t.name} is not on PATH (needed by the {spec.name} lab)", t.fix
        )
        for t in spec.tools
        if which(t.name) is None
    ]


@dataclass(frozen=True)
class Status:
    """What this machine can tell of a variant's cluster outside the engine (:meth:`Variant.status`).

    Attributes:
        gone: the cluster no longer exists (True), exists (False), or this machine cannot tell
            (None: the caller then keeps the state).
        evidence: what ``gone`` was read from, in words.
        note: when its API server does not answer, what else this machine knows (its processes,
            why it went down), in one sentence; None when nothing.
        files: its log files on this machine worth a debug bundle (bundle name -> path).
    """

    gone: bool | None
    evidence: str
    note: str | None = None
    files: Mapping[str, Path] = field(default_factory=dict)


class Variant(ABC):
    """One kind of cluster (minikube, kind, k3s, an existing cluster, the simulated one): its
    record and six verbs, after NVIDIA holodeck's provider interface (pkg/provider/provider.go:
    dry run, create, status, delete). Everything a variant is lives in ``variants/<name>/``.

    Class attributes:
        spec: the record (gpulab.config.variant.VariantSpec): every constant in which it differs
            from another variant, its settings type included; config parsing, the shared
            components and the policies read it.

    The verbs: :meth:`preflight` (this machine, before anything exists), :meth:`create` (its
    cluster component), :meth:`status` (whether its cluster is gone, what this machine knows of
    it), :meth:`delete` (what the lab left by its own record), :meth:`kubeconfig` (where its
    cluster answers now) and :meth:`gpu_expectation` (what allocatable must add up to).
    """

    spec: ClassVar[VariantSpec]

    @property
    def name(self) -> str:
        """``spec.name``: the ``gpu-lab:cluster`` value."""
        return self.spec.name

    def preflight(self, cfg: LabConfig) -> Sequence[Finding]:
        """Every host check this variant needs, passing ones included (after its tools,
        :func:`missing_tools`); none by default."""
        return []

    @abstractmethod
    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        """The component that yields the cluster's kubeconfig and version."""

    def status(self, profile: str, root: Path, run: Runner = run_quietly) -> Status:
        """What this machine can tell of cluster ``profile`` (``root``: the project directory;
        ``run`` runs the variant's status commands). By default: a cluster the lab does not own,
        never gone."""
        return Status(False, f"the lab does not own {self.name} clusters")

    def delete(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        """What the lab started for cluster ``profile`` by its own record on disk (not the stack's
        state): (the helper's argv that removes it, success when already gone; what it is), or
        None. ``make destroy`` runs it after ``pulumi destroy``, so a cluster whose create was
        interrupted before it reached the state is removed too. None by default."""
        return None

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        """The kubeconfig (YAML text) its own tool gives for cluster ``profile`` now: where the
        cluster answers (``make lab``/``verify``/``destroy`` compare it with the endpoint recorded
        at create, ops.endpoint), and for a cluster the lab does not own
        (``spec.owns_cluster`` false) what preflight reads before anything exists
        (gpulab.kube.takeover). ``get`` reads the stack's config. None: this machine cannot tell
        (no tool, no file, not readable without a password).

        Raises:
            gpulab.core.errors.GpuLabError: a kubeconfig the variant must read cannot be read.
        """
        return None

    def gpu_expectation(self, cfg: LabConfig, facts: HostFacts | None) -> GpuExpectation:
        """Physical GPUs allocatable must add up to: by default, the host's."""
        return GpuExpectation(facts.count if facts else None)
