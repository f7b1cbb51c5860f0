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
from pathlib import Path
from typing import TYPE_CHECKING

from gpulab.core.errors import GpuLabError
from variants.base import (
    OPERATOR_FIELDS,
    Getter,
    GpuExpectation,
    Runner,
    Variant,
    VariantSpec,
    run_quietly,
)
from variants.existing import settings
from variants.existing.settings import ExistingSettings

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig
    from gpulab.host.facts import HostFacts


class Existing(Variant):
    """A cluster somebody else runs: operator, smoke test and checks only (see module docstring)."""

    spec = VariantSpec(
        name="existing",
        owns_cluster=False,
        gpu_stacks=("install", "device-plugin", "dra", "found"),
        settings=ExistingSettings,
        exclusive_settings=(("simulatedOperands", True), ("removeCrds", True)),
        # Only a cluster the lab does not own holds objects it did not make (gpulab.config.adopt).
        exclusive_keys=("adoptExisting",),
        bounds=settings.BOUNDS,
        default_host_probe="off",  # the cluster is not this host
        # With simulatedOperands the host facts are not simulated (there are none, or they are
        # this host's), but everything an operator process would have produced is.
        simulated_fields=OPERATOR_FIELDS,
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

    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
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

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        """The configured context (``kubeconfigPath``, ``kubeContext``; ``$KUBECONFIG``), flattened:
        what the program reads at every run (variants.existing.component), and what preflight reads
        the cluster with (somebody else's).

        Raises:
            GpuLabError: the file or context cannot be used (variants.existing.ctl.KubeconfigError
                among them).
        """
        from variants.existing.config import resolve_kubeconfig
        from variants.existing.ctl import load_kubeconfig

        problems: list[str] = []
        where = resolve_kubeconfig(str(get("kubeconfigPath")), str(get("kubeContext")), os.environ, problems)
        if problems:
            raise GpuLabError("; ".join(problems))
        return load_kubeconfig(where["kubeconfig_path"], where["kube_context"])[0]

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
