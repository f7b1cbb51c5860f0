"""The sim variant: a real control plane with a kwok node that advertises GPUs, no GPU needed.

Folder: ``settings.py`` (its own config key, ``simGpus``, and the capture it defaults to:
SimSettings), ``component.py`` (SimCluster), ``ctl/`` (the helper: kwokctl's binary runtime on
loopback, the node, the Stages and logs; rendering, process control and its CLI),
``stages/`` (the kwok Stages). What is simulated and what is real: README.md, "The
simulated lab".
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core import names
from gpulab.host import preflight
from variants.base import (
    HOST_FIELDS,
    OPERATOR_FIELDS,
    Capabilities,
    ConfigRules,
    Getter,
    GpuExpectation,
    HostNeeds,
    Lifecycle,
    OperatorNeeds,
    Runner,
    Tool,
    Variant,
    get_int,
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


class _Config(ConfigRules):
    """The sim lab's config: its own keys, the fleet and smoke checks, the capture it reads."""

    def check_keys(self, get: Getter, problems: list[str]) -> None:
        settings.check(get, problems)

    def default_capture(self, get: Getter) -> str:
        return settings.default_capture(get)

    def resolve(
        self, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> SimSettings:
        _fleet_problems(get, problems)
        sim_gpus, replicas = (get_int(get, k) for k in ("simGpus", "timeSlicingReplicas"))
        smoke = str(get("smokeGpus"))
        smoke_gpus = int(smoke) if smoke.isdigit() else 0  # "all": the node's own count
        # simGpus=0 is the node without GPUs the gate must refuse (it fails before the smoke Pod);
        # with simMigDevices the smoke Pod's resource is checked against the MIG plan instead.
        if sim_gpus and not get("simMigDevices") and smoke_gpus > sim_gpus * replicas:
            # The scheduler would leave the Pod Pending until smokeTimeoutSeconds: say it now.
            problems.append(
                f"gpu-lab:smokeGpus={smoke_gpus} is more than the simulated node offers "
                f"(simGpus={sim_gpus} x timeSlicingReplicas={replicas}); lower smokeGpus or raise simGpus"
            )
        return settings.parse(get)

    def simulated(self, get: Getter) -> bool:
        return True

    def default_host_probe(self) -> str:
        return "capture"  # a real H200 capture shipped in gpulab/host/captures, labelled simulated

    def simulated_fields(self, cfg: LabConfig) -> list[str]:
        # The host facts come from a capture, and no operator process runs.
        return [*HOST_FIELDS, *OPERATOR_FIELDS]


class _Lifecycle(Lifecycle):
    """The simulated control plane's processes in the helper's work dir (the record itself)."""

    def gone(self, profile: str, root: Path, run: Runner = run_quietly) -> tuple[bool | None, str]:
        workdir = root / self.workdir(profile)
        there = workdir.exists()
        return not there, f"the sim cluster directory {workdir} {'exists' if there else 'is gone'}"

    def start_or_delete_hint(self, profile: str) -> str:
        return (
            f"remove it with `GPULAB_STACK=sim make destroy` (or `python -m variants.sim.ctl down "
            f"--name {profile} --workdir {self.workdir(profile)}`)"
        )

    def local_status(self, profile: str, root: Path) -> str | None:
        from variants.sim.ctl.cluster import recorded_identity
        from variants.sim.ctl.process import Paths
        from variants.sim.ctl.supervise import describe_down, down_record, states

        paths = Paths(profile, root / self.workdir(profile))
        if not paths.workdir.exists():
            return f"the sim cluster's directory {self.workdir(profile)} is gone"
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

    def live_kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command printed at create: the work dir's kubeconfig, which every
        # `up` writes again from `kwokctl get kubeconfig` (variants.sim.ctl.cluster).
        from variants.sim.ctl.process import Paths

        try:
            return Paths(profile, root / self.workdir(profile)).kubeconfig.read_text(encoding="utf-8")
        except OSError:
            return None

    def local_files(self, profile: str, root: Path) -> dict[str, Path]:
        from variants.sim.ctl.process import Paths

        paths = Paths(profile, root / self.workdir(profile))
        found = {f"sim/{f.name}": f for f in sorted((paths.cluster_dir / "logs").glob("*.log"))}
        # Kueue's controller, where the queue layer runs it as a process (variants/sim/ctl/queues.py).
        kueue_log = paths.cluster_dir / "kueue" / "kueue.log"
        if kueue_log.is_file():
            found["sim/kueue.log"] = kueue_log
        for extra in ("logs/supervisor.log", "down.json", "identity.json", "ports.json"):
            if (paths.workdir / extra).is_file():
                found[f"sim/{extra.rsplit('/', 1)[-1]}"] = paths.workdir / extra
        return found

    def queue_controller(self, profile: str) -> tuple[list[str], list[str]] | None:
        # Kueue's controller as a process of the sim (variants/sim/ctl/queues.py): a kwok Pod
        # would run nothing.
        where = ["--name", profile, "--workdir", self.workdir(profile)]
        argv = ["python", "-m", self.ctl]
        return [*argv, "queues-up", *where], [*argv, "queues-down", *where]

    def leftover(self, profile: str, root: Path) -> tuple[list[str], str] | None:
        workdir = self.workdir(profile)
        if not (root / workdir).exists():
            return None
        return (
            ["python", "-m", self.ctl, "down", "--name", profile, "--workdir", workdir],
            f"the sim cluster {profile!r} ({workdir})",
        )


class _Host(HostNeeds):
    """The sim's tools, and with the queue layer Kueue's controller (built, never downloaded)."""

    def host_findings(self, cfg: LabConfig) -> Sequence[Finding]:
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


class Sim(Variant):
    """The simulated lab (see module docstring)."""

    name = "sim"
    capabilities = Capabilities(gpu_stacks=("install", "device-plugin", "dra", "found"), queues=True)
    config = _Config(name, exclusive_keys=("simMigDevices", "simNodes"), bounds=settings.BOUNDS)
    operator = OperatorNeeds(node_runtime="none")  # kwok nodes run no containers
    host = _Host(
        name,
        tools=(
            Tool("kwokctl", _BUILD),
            Tool("kube-apiserver", _BUILD),
            Tool("etcd", _BUILD),
            Tool("kwok", _BUILD),
            Tool("kubectl", _BUILD),
        ),
        bundle_tools={"kwokctl": ("kwokctl", "--version"), "etcd": ("etcd", "--version")},
    )
    local = _Lifecycle(
        name,
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
        steps={"up": "sim-cluster", "queues-up": "sim-kueue-controller"},
    )

    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
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
                **self.local.named_cluster(cfg),
            ),
            opts,
        )

    def gpu_expectation(self, cfg: LabConfig, facts: HostFacts | None) -> GpuExpectation:
        """A simulated fleet (``simNodes``): the GPUs its nodes' labels say, summed (simulated);
        one node: the capture's, as every lab's host."""
        if cfg.fleet.sim_nodes:
            from variants.sim.ctl.fleet import parse_node_specs

            total = sum(n.gpus for n in parse_node_specs(cfg.fleet.sim_nodes))
            return GpuExpectation(total, True, "config:simNodes (simulated)")
        return super().gpu_expectation(cfg, facts)


def _fleet_problems(get: Getter, problems: list[str]) -> None:
    """``simNodes``: each ``NAME=GPUS[/ADVERTISED]`` (variants.sim.ctl.fleet), only with
    ``gpuStack: found`` (the simulated fleet's stack is found installed, as on a cluster the lab
    does not own) or ``device-plugin`` (the lab installs NVIDIA's chart, then checks each node)."""
    from variants.sim.ctl.fleet import parse_node_specs

    items = [i.strip() for i in str(get("simNodes")).split(",") if i.strip()]
    if not items:
        return
    try:
        parse_node_specs(items)
    except ValueError as exc:
        problems.append(f"gpu-lab:simNodes={get('simNodes')!r}: {exc}")
    if get("gpuStack") not in ("found", "device-plugin"):
        problems.append(
            "gpu-lab:simNodes needs gpu-lab:gpuStack=found or device-plugin (a fleet's nodes are checked "
            "one by one: found installed, or NVIDIA's device plugin chart installed by the lab)"
        )


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
