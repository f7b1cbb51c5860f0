"""The existing variant: any cluster a kubeconfig reaches; the lab does not own it.

It installs the GPU Operator (``gpuStack: install``) or finds the GPU stack installed
(``gpuStack: found``: no chart, so no CRD of the lab's and no ``expectedGpus`` needed; every
GPU node checked by components/fleet.py).

Folder: ``settings.py`` (its own config keys: ExistingSettings), ``config.py`` (the kubeconfig
file and context resolved), ``component.py`` (ExistingCluster: the kubeconfig context
flattened, a read-only census, the optional CRD clean-up), ``ctl.py`` (the helper: kubeconfig
reading, census, CRD removal).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from variants.base import (
    OPERATOR_FIELDS,
    Capabilities,
    ConfigRules,
    Getter,
    GpuExpectation,
    Lifecycle,
    Runner,
    Variant,
    get_int,
    run_quietly,
)
from variants.existing import settings
from variants.existing.settings import ExistingSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.host.facts import HostFacts


class _Config(ConfigRules):
    """The existing cluster's config: its kubeconfig resolved, its expected GPUs, the operands
    it may simulate, and no host probe (the cluster is not this host)."""

    def check_keys(self, get: Getter, problems: list[str]) -> None:
        settings.check(get, problems)

    def resolve(
        self, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> ExistingSettings:
        # Here, not at the top: it imports the helper, which `python -m variants.existing.ctl`
        # would otherwise run twice.
        from variants.existing.config import resolve_kubeconfig

        expected = get_int(get, "expectedGpus")
        found = get("gpuStack") == "found"
        if found and bool(get("removeCrds")):
            problems.append(
                "gpu-lab:removeCrds=true with gpuStack=found: the lab installs no chart, so it has no CRD "
                "of its own to remove (the found stack's are someone else's); unset removeCrds"
            )
        # A found stack: each node's expectation comes from its labels (gpulab.kube.fleet).
        if expected < 1 and not found:
            problems.append(
                f"gpu-lab:expectedGpus={expected}: cluster=existing needs the number of physical GPUs its "
                "nodes should advertise in total (>= 1); allocatable is compared with it"
            )
        reached = resolve_kubeconfig(str(get("kubeconfigPath")), str(get("kubeContext")), env, problems)
        return settings.parse(get, reached["kubeconfig_path"], reached["kube_context"])

    def simulated(self, get: Getter) -> bool:
        # A cluster where no operator process runs (e.g. a kwok cluster): stand-ins, labelled.
        return bool(get("simulatedOperands"))

    def default_host_probe(self) -> str:
        return "off"  # the cluster is not this host

    def simulated_fields(self, cfg: LabConfig) -> list[str]:
        """The host facts are not simulated (there are none, or they are this host's), but
        everything an operator process would have produced is."""
        return list(OPERATOR_FIELDS) if cfg.simulated else []


class _Lifecycle(Lifecycle):
    """A cluster somebody else runs: where it answers now is what the user's kubeconfig says."""

    def live_kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the program reads at every run (variants.existing.component): the context of the
        # configured kubeconfig file, minified.
        from variants.existing.config import resolve_kubeconfig
        from variants.existing.ctl import KubeconfigError, load_kubeconfig

        problems: list[str] = []
        where = resolve_kubeconfig(str(get("kubeconfigPath")), str(get("kubeContext")), os.environ, problems)
        if problems:
            return None
        try:
            return load_kubeconfig(where["kubeconfig_path"], where["kube_context"])[0]
        except KubeconfigError:
            return None

    def foreign_kubeconfig(self, cfg: LabConfig) -> str | None:
        """The context's kubeconfig, flattened (variants.existing.ctl.load_kubeconfig; raises its
        KubeconfigError): the cluster is somebody else's."""
        from variants.existing import ctl

        own = cfg.settings(ExistingSettings)
        return ctl.load_kubeconfig(own.kubeconfig_path, own.kube_context)[0]


class Existing(Variant):
    """A cluster somebody else runs: operator, smoke test and checks only (see module docstring)."""

    name = "existing"
    capabilities = Capabilities(owns_cluster=False, gpu_stacks=("install", "device-plugin", "dra", "found"))
    config = _Config(
        name,
        exclusive_settings=(("simulatedOperands", True), ("removeCrds", True)),
        # Only a cluster the lab does not own holds objects it did not make (gpulab.config.adopt).
        exclusive_keys=("adoptExisting",),
        bounds=settings.BOUNDS,
    )
    local = _Lifecycle(
        name,
        # The program reads the user's kubeconfig at every run; a new address for the same
        # cluster would replace the Kubernetes provider and with it every object of the lab.
        endpoint_fix=(
            "the context the lab uses (gpu-lab:kubeconfigPath, gpu-lab:kubeContext) now names {live}, not "
            "{recorded} where the stack was built: point that context's cluster back at the recorded "
            "address (`kubectl config set-cluster <its cluster> --server={recorded}`), or make the lab "
            "anew at the new address with `GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make "
            "lab` (destroy reaches the cluster through the recorded address in the stack's state; Pulumi "
            "would replace every object of the lab to use another one)"
        ),
        steps={"census": "existing-census", "crd-plan": "existing-crd-cleanup"},
    )

    def cluster(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        from variants.existing.component import ExistingArgs, ExistingCluster

        own = cfg.settings(ExistingSettings)
        return ExistingCluster(
            "existing",
            ExistingArgs(
                kubeconfig_path=own.kubeconfig_path,
                context=own.kube_context,
                crds=_chart_crds(cfg),
                remove_crds=own.remove_crds,
                timeout_seconds=cfg.operator.timeout_seconds,
                adopted=cfg.adopt_existing,
            ),
            opts,
        )

    def gpu_expectation(self, cfg: LabConfig, facts: HostFacts | None) -> GpuExpectation:
        # The cluster is not this host: the config promises the count; with a found stack and
        # no expectedGpus, each node's labels do (gpulab.kube.fleet), summed by the fleet check.
        expected = cfg.settings(ExistingSettings).expected_gpus
        if cfg.fleet.per_node and expected < 1:
            return GpuExpectation(None, True, "node labels (gpulab.kube.fleet)")
        return GpuExpectation(expected, True, "config:expectedGpus" if facts is None else None)


def _chart_crds(cfg: LabConfig) -> list[str]:
    """The CRDs the lab's chart brings (the census keeps those that existed before): none for a
    found GPU stack (no chart goes in); NFD's for NVIDIA's device plugin chart, whose NFD
    subchart carries them; the GPU Operator chart's otherwise."""
    from variants.existing import ctl

    if cfg.fleet.found:
        return []
    if cfg.fleet.device_plugin:
        return sorted(ctl.NFD_CRDS) if cfg.operator.nfd else []
    return ctl.operator_crds(cfg.operator.chart_path, cfg.operator.nfd)


VARIANT = Existing()
