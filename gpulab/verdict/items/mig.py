"""Checklist item ``allocatable-matches-gpus`` under MIG (``migStrategy`` single or mixed).

With MIG the GPUs the scheduler hands out are MIG devices, so "allocatable equals the
physical GPUs" becomes "the nodes advertise the MIG devices the lab expected"
(:mod:`gpulab.config.mig`):

* ``mixed``: ``migResources`` (``{"nvidia.com/mig-1g.18gb": 7}``) equals
  ``expectedMigResources``; when that is unknown, some MIG resource is > 0. ``nvidia.com/gpu``
  may be 0 or absent (every GPU has MIG): never "0 GPUs".
* ``single``: ``allocatableGpus`` equals ``expectedMigResources["nvidia.com/gpu"]`` (the MIG
  devices x replicas); when unknown, > 0.

Pure: :mod:`gpulab.verdict.checklist` calls :func:`allocatable_mig` with its reading of the outputs
(``get``, ``unknown``, ``simulated``); None means "not MIG": the item's usual rule applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.names import GPU_RESOURCE
from gpulab.core.outputs import LabOutputs

ITEM: Final = "allocatable-matches-gpus"


#: What the item reads: the typed outputs (gpulab.core.outputs.LabOutputs).
View = LabOutputs


def _counts(value: Any) -> dict[str, int] | None:
    if not isinstance(value, Mapping):
        return None
    return {str(k): int(v) for k, v in value.items() if isinstance(v, (int, float))}


def _show(counts: Mapping[str, int] | None) -> str:
    return ", ".join(f"{r}={n}" for r, n in sorted((counts or {}).items())) or "none"


def allocatable_mig(view: View, fix: str) -> Finding | None:
    """The item under ``migStrategy`` single or mixed; None for ``none`` (or a lab deployed
    before the lab knew MIG: no ``migStrategy`` output)."""
    strategy = view.mig_strategy
    if strategy not in ("single", "mixed"):
        return None
    title = f"Nodes advertise the expected MIG devices (migStrategy {strategy}, step 4)"
    keys = [o.MIG_RESOURCES, o.ALLOCATABLE_GPUS, o.EXPECTED_MIG_RESOURCES]
    sim = view.simulated(keys)
    expected = _counts(view.expected_mig_resources)
    want = _show(expected) if expected else ("some nvidia.com/mig-* > 0" if strategy == "mixed" else "> 0")

    def item(status: Status, observed: str) -> Finding:
        return Finding(ITEM, status, observed, f"advertised == {want}", fix, simulated=sim, title=title)

    unknown = [k for k in keys[:2] if view.unknown(k)]
    if unknown:
        return item(Status.NOT_EVALUATED, f"known after deployment ({', '.join(unknown)} not known yet)")
    if strategy == "mixed":
        have = _counts(view.mig_resources) or {}
        observed = f"MIG resources {_show(have)}; {GPU_RESOURCE} {view.allocatable_gpus}"
        ok = have == expected if expected else any(have.values())
        return item(Status.PASS if ok else Status.FAIL, observed)
    alloc = view.allocatable_gpus
    alloc = int(alloc) if isinstance(alloc, (int, float)) else None
    target = (expected or {}).get(GPU_RESOURCE)
    ok = alloc is not None and (alloc == target if target is not None else alloc > 0)
    return item(Status.PASS if ok else Status.FAIL, f"{GPU_RESOURCE} {alloc} (MIG devices, single strategy)")
