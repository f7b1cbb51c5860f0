"""The existing variant's own settings: how the cluster is reached and what it must show.

Every key's type and default is Pulumi.yaml's (gpulab.config.schema); the patterns and bounds
are here. The kubeconfig file and context are resolved and read when the variant is chosen
(variants/existing/config.py); the rest is as config holds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE, bound_problems
from variants.base import Getter, get_flag, get_int

#: A kubeconfig context name: EKS (arn:aws:eks:...:cluster/x), GKE (gke_p_z_x), kind-x, ...
KUBE_CONTEXT: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@+=-]{0,252}$")
#: A file path without whitespace, quotes or shell metacharacters.
SAFE_PATH: Final = re.compile(r"^[A-Za-z0-9._/~+@=:-]{1,4096}$")
#: The allowed range of the existing variant's numeric keys, inclusive (Pulumi.yaml states it).
BOUNDS: Final[Mapping[str, tuple[int, int]]] = {
    "expectedGpus": (0, 10_000),  # every GPU node of a cluster, summed
}


@dataclass(frozen=True)
class ExistingSettings:
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


def check(get: Getter, problems: list[str]) -> None:
    """One line per bad ``expectedGpus`` (negative, above :data:`BOUNDS`), whichever variant is
    chosen."""
    expected = get_int(get, "expectedGpus")
    if expected < 0:
        problems.append(f"{NAMESPACE}:expectedGpus={expected} must be >= 0")
    problems += bound_problems(get, BOUNDS)


def parse(get: Getter, kubeconfig_path: str, kube_context: str) -> ExistingSettings:
    """The settings, with the kubeconfig file and context already resolved (config.py)."""
    return ExistingSettings(
        kubeconfig_path=kubeconfig_path,
        kube_context=kube_context,
        expected_gpus=get_int(get, "expectedGpus"),
        remove_crds=get_flag(get, "removeCrds"),
        simulated_operands=get_flag(get, "simulatedOperands"),
    )
