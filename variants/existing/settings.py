"""The existing variant's own settings: how the cluster is reached and what it must show.

Every key's type and default is Pulumi.yaml's (gpulab.config.schema); the patterns and bounds
are here. The kubeconfig file and context are resolved and read when the variant is chosen
(variants/existing/config.py); the rest is as config holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE, bound_problems
from gpulab.config.variant import VariantSettings
from variants.base import Getter, get_flag, get_int

#: The allowed range of the existing variant's numeric keys, inclusive (Pulumi.yaml states it).
BOUNDS: Final[Mapping[str, tuple[int, int]]] = {
    "expectedGpus": (0, 10_000),  # every GPU node of a cluster, summed
}


@dataclass(frozen=True)
class ExistingSettings(VariantSettings):
    """How the lab reaches a cluster somebody else runs, and what it expects there.

    Attributes:
        kubeconfig_path: the kubeconfig file, absolute (``kubeconfigPath``, else the first file
            of ``$KUBECONFIG``, else ``~/.kube/config``); read, never written. Resolved, never
            empty once parsed for cluster=existing.
        kube_context: the context in it (``kubeContext``, else the file's current-context).
        expected_gpus: ``expectedGpus``, physical GPUs the cluster's GPU nodes should advertise
            in total (a count; 0 only with ``gpuStack: found``, where each node's labels say).
        remove_crds: ``removeCrds``, destroy also deletes the CRDs the chart installed.
        simulated_operands: ``simulatedOperands``, no operator process runs there (e.g. a kwok
            cluster): the lab makes labelled stand-ins (``LabConfig.simulated``).
    """

    kubeconfig_path: str = ""
    kube_context: str = ""
    expected_gpus: int = schema.default("expectedGpus")
    remove_crds: bool = schema.default("removeCrds")
    simulated_operands: bool = schema.default("simulatedOperands")

    @property
    def simulated(self) -> bool:
        """A cluster where no operator process runs (e.g. a kwok cluster): stand-ins, labelled."""
        return self.simulated_operands

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """One line per bad ``expectedGpus`` (negative, above :data:`BOUNDS`), whichever variant is
        chosen."""
        expected = get_int(get, "expectedGpus")
        if expected < 0:
            problems.append(f"{NAMESPACE}:expectedGpus={expected} must be >= 0")
        problems += bound_problems(get, BOUNDS)

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> ExistingSettings:
        """:func:`parse` with the kubeconfig file and context resolved and read now
        (variants/existing/config.py), ``expectedGpus`` >= 1 unless the GPU stack is found (each
        node's labels then say), and no ``removeCrds`` with a found stack (no chart of the lab's)."""
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
        return parse(get, reached["kubeconfig_path"], reached["kube_context"])


def parse(get: Getter, kubeconfig_path: str, kube_context: str) -> ExistingSettings:
    """The settings, with the kubeconfig file and context already resolved (config.py)."""
    return ExistingSettings(
        kubeconfig_path=kubeconfig_path,
        kube_context=kube_context,
        expected_gpus=get_int(get, "expectedGpus"),
        remove_crds=get_flag(get, "removeCrds"),
        simulated_operands=get_flag(get, "simulatedOperands"),
    )
