"""Checklist item ``compute-works``: a GPU did work, not only answered ``nvidia-smi``.

Evaluated from the compute check's outputs (components/compute.py, gpulab/kube_compute.py):

* ``pass``: ``computeResult`` is ``passed``: the compute Pod reached ``Succeeded`` and its
  vectorAdd log had a ``Test PASSED`` line (the CUDA kernel's sum checked on the CPU);
* ``fail``: ``computeResult`` is ``failed``, or the phase is not ``Succeeded``;
* ``not-tested``: ``computeResult`` is ``not-tested`` (``computeCheck`` off), or the lab was
  deployed by a version without the compute check (no ``computeResult`` at all);
* ``not-observable-in-simulation``: the compute keys are simulated (kwok completed the Pod
  and served a vectorAdd log; no kernel ran);
* ``not-evaluated``: not known yet (a preview, nothing deployed).

Pure: no Pulumi, no I/O. :mod:`gpulab.checklist` calls :func:`compute_works` with its
reading of the outputs (the ``view``: ``outputs``, ``get``, ``unknown``, ``simulated``,
``deployed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol

from gpulab import fixes
from gpulab import outputs as o
from gpulab.findings import Finding, Status
from gpulab.names import COMPUTE_POD, VECTORADD_PASSED

ITEM: Final = "compute-works"
TITLE: Final = f"A CUDA kernel ran on the GPU (kubectl logs {COMPUTE_POD} says {VECTORADD_PASSED})"
EXPECTED: Final = f"compute Pod Succeeded and its vectorAdd log has a {VECTORADD_PASSED!r} line"
#: The overall verdict when the GPU was never shown doing work (gpulab.checklist.overall).
NOT_TESTED_VERDICT: Final = "compute not tested"
_KEYS: Final = (o.COMPUTE_RESULT, o.COMPUTE_PHASE)


class View(Protocol):
    """What the item reads of the outputs (gpulab.checklist's reading)."""

    outputs: Mapping[str, Any]
    deployed: bool
    simulated_lab: bool

    def get(self, key: str) -> Any: ...

    def unknown(self, key: str) -> bool: ...

    def simulated(self, keys: Iterable[str]) -> bool: ...


def _fix() -> str:
    return (
        f"scripts/kubectl logs {COMPUTE_POD} and scripts/kubectl describe pod {COMPUTE_POD}: a CUDA "
        "error in the log, or unsatisfied condition: cuda>=X.Y in the events (pick an older computeImage); "
        "no CUDA device: " + fixes.toolkit(then=f"re-create the compute Pod: {fixes.REMEASURE}")
    )


def compute_works(view: View) -> Finding:
    """The ``compute-works`` item (module docstring: when each status)."""
    sim = view.simulated(_KEYS)

    def item(status: Status, observed: str, fix: str = "") -> Finding:
        return Finding(ITEM, status, observed, EXPECTED, fix or _fix(), simulated=sim, title=TITLE)

    result, phase = view.get(o.COMPUTE_RESULT), view.get(o.COMPUTE_PHASE)
    if result == "not-tested" or (o.COMPUTE_RESULT not in view.outputs and view.deployed):
        why = "computeCheck is off" if result == "not-tested" else "the lab was deployed without it"
        return item(
            Status.NOT_TESTED,
            f"not tested: no compute Pod ran ({why}); nvidia-smi alone does not show the GPU computing",
            fixes.config_set(("computeCheck", "true")),
        )
    if view.unknown(o.COMPUTE_RESULT) or result is None:
        return item(Status.NOT_EVALUATED, f"known after deployment ({o.COMPUTE_RESULT} not known yet)")
    observed = f"compute Pod {phase}, result {result}"
    if sim:
        return item(
            Status.NOT_OBSERVABLE,
            f"{observed}: not observable in simulation (kwok completed the Pod and served a "
            "simulated vectorAdd log; no CUDA kernel ran)",
            "run the lab on a GPU host (make lab there)",
        )
    if result == "passed" and phase == "Succeeded":
        return item(Status.PASS, observed)
    return item(Status.FAIL, observed)
