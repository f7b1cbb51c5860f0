"""The sim variant: a real control plane with a kwok node that advertises GPUs, no GPU needed.

Folder: ``settings.py`` (its own config key, ``simGpus``, and the capture it defaults to:
SimSettings), ``component.py`` (SimCluster), ``ctl/`` (the helper: kwokctl's binary runtime on
loopback, the node, the Stages and logs; rendering, process control and its CLI),
``stages/`` (the kwok Stages). What is simulated and what is real: README.md, "The
simulated lab".
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core import names
from gpulab.host import preflight
from variants.base import (
    HOST_FIELDS,
    OPERATOR_FIELDS,
    Getter,
    GpuExpectation,
    Runner,
    Status,
    Tool,
    Variant,
    VariantSpec,
    named_cluster,
    run_quietly,
)
from variants.sim import settings
from variants.sim.settings import SimSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.host.facts import HostFacts
    from gpulab.host.preflight import Finding

#: Kueue's controller binary in the sim's bin dir (variants.sim.ctl.queues.BINARY; toolchain/sim/build.sh).
QUEUE_CONTROLLER = "kueue"
_BUILD = "run `make toolchain` (builds the simulated control plane)"


class Sim(Variant):
    """The simulated lab (see module docstring)."""

    spec = VariantSpec(
        name="sim",
        gpu_stacks=("install", "device-plugin", "dra", "found"),
        queues=True,
        settings=SimSettings,
        exclusive_keys=("simMigDevices", "simNodes"),
        bounds=settings.BOUNDS,
        # A real H200 capture shipped in gpulab/host/captures, labelled simulated.
        default_host_probe="capture",
        # The host facts come from a capture, and no operator process runs.
        simulated_fields=(*HOST_FIELDS, *OPERATOR_FIELDS),
        node_runtime="none",  # kwok nodes run no containers
        tools=(
            Tool("kwokctl", _BUILD),
            Tool("kube-apiserver", _BUILD),
            Tool("etcd", _BUILD),
            Tool("kwok", _BUILD),
            Tool("kubectl", _BUILD),
        ),
        bundle_tools={"kwokctl": ("kwokctl", "--version"), "etcd": ("etcd", "--version")},
        # The sim keeps its ports for as long as it exists (variants/sim/ctl/ports.py), so a new
        # endpoint means its kubeconfig was rewritten, e.g. to another address of the same API
        # server (kwokctl's certificate names localhost, 127.0.0.1 and ::1: kwok v0.8.0
        # pkg/kwokctl/pki/pki.go, DefaultAltNames).
        endpoint_fix=(
            "the sim cluster {profile}'s kubeconfig (.state/sim/{profile}/kubeconfig.yaml) now names "
            "{live}, not {recorded} where the stack read it at create: put the recorded address back in "
            "that file, or make the lab anew with "
            "`GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab` (Pulumi would replace "
            "every object of the lab to use another address)"
        ),
        start_or_delete_hint=(
            "remove it with `GPULAB_STACK=sim make destroy` (or `python -m variants.sim.ctl down "
            "--name {profile} --workdir {workdir}`)"
        ),
        steps={"up": "sim-cluster", "queues-up": "sim-kueue-controller"},
        # Kueue's controller as a process of the sim (variants/sim/ctl/queues.py): a kwok Pod
        # would run nothing.
        queue_controller=("queues-up", "queues-down"),
    )

    def preflight(self, cfg: LabConfig) -> Sequence[Finding]:
        """With the queue layer, Kueue's controller (built, never downloaded)."""
        if not cfg.queues.enabled:
            return []
        found = shutil.which(QUEUE_CONTROLLER)
        return [
            preflight.Finding(
                "tool-kueue",
                found is not None,
                f"Kueue's controller ({QUEUE_CONTROLLER}) is {'at ' + found if found else 'not built'} "
                "(queues: the sim runs it)",
                "run `make toolchain` with Go on PATH (toolchain/sim/build.sh kueue builds cmd/kueue v0.19.0 "
                "from the Go module proxy), or unset gpu-lab:queues",
            )
        ]

    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.sim.component import SimArgs, SimCluster
        from variants.sim.ctl.render import CAPTURES

        own = cfg.settings(SimSettings)
        # The helper picks the capture by GPU count; name it only when config chose another.
        default_capture = CAPTURES.get(own.gpus or 1)

        return SimCluster(
            "sim",
            SimArgs(
                gpus=own.gpus,
                replicas=cfg.operator.time_slicing_replicas,
                rename=cfg.operator.time_slicing_rename,
                mig_devices=cfg.gpu.sim_mig_devices,
                mig_strategy=cfg.gpu.mig_strategy,
                capture=None if cfg.effective_capture == default_capture else cfg.effective_capture,
                smoke_gpus=_smoke_listing(cfg),
                fleet=cfg.fleet.sim_nodes,
                preinstalled=cfg.fleet.found,
                dra=cfg.fleet.dra,
                # A found stack: the lab's Pods live in its own namespace.
                log_namespace=cfg.fleet.namespace if cfg.fleet.per_node else names.WORKLOAD_NAMESPACE,
                **named_cluster(self.spec, cfg),
            ),
            opts,
        )

    def status(self, profile: str, root: Path, run: Runner = run_quietly) -> Status:
        """The simulated control plane's processes in the helper's work dir (the record itself):
        gone with the directory; its components' states, why it went down; its logs."""
        workdir = root / self.spec.workdir(profile)
        there = workdir.exists()
        evidence = f"the sim cluster directory {workdir} {'exists' if there else 'is gone'}"
        return Status(
            not there, evidence, _local_note(self.spec, profile, root), _local_files(self.spec, profile, root)
        )

    def delete(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        """Its work dir: the helper's ``down`` stops every process and removes it."""
        workdir = self.spec.workdir(profile)
        if not (root / workdir).exists():
            return None
        return (
            ["python", "-m", self.spec.ctl, "down", "--name", profile, "--workdir", workdir],
            f"the sim cluster {profile!r} ({workdir})",
        )

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command printed at create: the work dir's kubeconfig, which every
        # `up` writes again from `kwokctl get kubeconfig` (variants.sim.ctl.cluster).
        from variants.sim.ctl.process import Paths

        try:
            return Paths(profile, root / self.spec.workdir(profile)).kubeconfig.read_text(encoding="utf-8")
        except OSError:
            return None

    def gpu_expectation(self, cfg: LabConfig, facts: HostFacts | None) -> GpuExpectation:
        """A simulated fleet (``simNodes``): the GPUs its nodes' labels say, summed (simulated);
        one node: the capture's, as every lab's host."""
        if cfg.fleet.sim_nodes:
            from variants.sim.ctl.fleet import parse_node_specs

            total = sum(n.gpus for n in parse_node_specs(cfg.fleet.sim_nodes))
            return GpuExpectation(total, True, "config:simNodes (simulated)")
        return super().gpu_expectation(cfg, facts)


def _local_note(spec: VariantSpec, profile: str, root: Path) -> str | None:
    """What the work dir tells when the API server does not answer, in one sentence; None when
    every component runs and the identity is recorded."""
    from variants.sim.ctl.cluster import recorded_identity
    from variants.sim.ctl.process import Paths
    from variants.sim.ctl.supervise import describe_down, down_record, states

    paths = Paths(profile, root / spec.workdir(profile))
    if not paths.workdir.exists():
        return f"the sim cluster's directory {spec.workdir(profile)} is gone"
    down = down_record(paths.workdir)
    if down is not None:
        return f"the sim cluster {profile!r} is down: {describe_down(down)}"
    comps = states(paths.cluster_dir / "pids")
    odd = {c: s for c, s in comps.items() if s != "running"}
    if odd:
        return f"the sim cluster {profile!r}: " + ", ".join(f"{c} {s}" for c, s in odd.items())
    if recorded_identity(paths) is None:
        return f"the sim cluster {profile!r} has no recorded identity (an interrupted create)"
    return None


def _local_files(spec: VariantSpec, profile: str, root: Path) -> dict[str, Path]:
    """The work dir's logs and records worth a debug bundle (bundle name -> path)."""
    from variants.sim.ctl.process import Paths

    paths = Paths(profile, root / spec.workdir(profile))
    found = {f"sim/{f.name}": f for f in sorted((paths.cluster_dir / "logs").glob("*.log"))}
    # Kueue's controller, where the queue layer runs it as a process (variants/sim/ctl/queues.py).
    kueue_log = paths.cluster_dir / "kueue" / "kueue.log"
    if kueue_log.is_file():
        found["sim/kueue.log"] = kueue_log
    for extra in ("logs/supervisor.log", "down.json", "identity.json", "ports.json"):
        if (paths.workdir / extra).is_file():
            found[f"sim/{extra.rsplit('/', 1)[-1]}"] = paths.workdir / extra
    return found


def _smoke_listing(cfg: LabConfig) -> int | None:
    """How many GPUs the smoke Pod's simulated log lists: what the Pod is given
    (gpulab.config.gpus.smoke_gpu_count: one under time-slicing or MIG, ``smokeGpus`` when set);
    None (all) for ``smokeGpus: all`` of whole GPUs. A real runtime lists only what it
    injected, and pods-see-every-gpu fails a Pod that lists more than it was allocated."""
    if cfg.smoke_gpus >= 1:
        return cfg.smoke_gpus
    if cfg.operator.time_slicing_replicas > 1 or cfg.gpu.mig_strategy != "none":
        return 1
    return None


VARIANT = Sim()
