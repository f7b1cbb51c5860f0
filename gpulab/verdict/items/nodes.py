"""The node table and checklist item ``every-gpu-node-passes``: one row per GPU node.

The single-host lab is a fleet of one. With a GPU stack found installed (``gpuStack: found``)
the rows are the fleet check's (output ``nodes``, gpulab.kube.fleet): each node gated against
what GPU Feature Discovery's labels say, then a smoke and a compute Pod pinned to it. A lab
that installs the operator has no per-node check: its one row is derived from the single-Pod
checks (the gate's allocatable, the smoke Pod's node, the compute result), marked ``derived``.

The item exists where the rows are the fleet check's: ``pass`` when every node passed;
``fail`` naming each node that did not, with its first failure and fix (a node that fails
never hides the others: the passing ones are listed too); ``not-evaluated`` when the rows are
not known yet (a preview).
"""

from __future__ import annotations

from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.findings import Finding, Status
from gpulab.core.outputs import LabOutputs

ITEM_ID: Final = "every-gpu-node-passes"
TITLE: Final = "Every GPU node advertises what its labels say, and its Pods see its GPUs"
EXPECTED: Final = (
    "each GPU node: allocatable equal to GPU Feature Discovery's nvidia.com/gpu.count (else the pool's "
    "configured count, else capacity), a pinned smoke Pod listing that many distinct GPUs, a pinned "
    "compute Pod passing on each"
)
#: What the item reads.
KEYS: Final = (o.NODES, o.NODES_SUMMARY)
PASS: Final = "pass"
View = LabOutputs


def rows(view: View) -> tuple[list[dict[str, Any]], bool]:
    """(the node table, derived): the fleet check's rows, or the fleet of one derived from the
    single-Pod outputs (``derived`` True); ``[]`` when nothing is known."""
    if isinstance(view.nodes, list):
        return [dict(r) for r in view.nodes], False
    if view.smoke_node is None and view.allocatable_gpus is None:
        return [], True
    smoke = {"Succeeded": PASS}.get(str(view.smoke_phase), "fail" if view.smoke_phase else "not-tested")
    compute = {"passed": PASS, "not-tested": "not-tested"}.get(str(view.compute_result), "fail")
    row = {
        "node": view.smoke_node or "?",
        "product": ", ".join(view.host_gpu_models or []) or None,
        "expected": view.host_gpu_count,
        "expectedSource": "the lab's host GPUs (the single-Pod checks)",
        "allocatable": view.allocatable_gpus,
        "gate": "not-tested" if view.allocatable_gpus is None else _gate(view),
        "smoke": smoke,
        "compute": compute,
        "dcgm": "not-tested" if view.dcgm_metrics is None else "read",
        "firstFailure": None,
        "fix": None,
    }
    checks = [row["gate"], row["smoke"], row["compute"]]
    row["status"] = PASS if all(c == PASS for c in checks) else ("fail" if "fail" in checks else "not-tested")
    return [row], True


def _gate(view: View) -> str:
    expected = view.host_gpu_count
    if expected is None:
        return "not-tested"
    return PASS if view.allocatable_gpus == expected * view.time_slicing_replicas else "fail"


def summary(view: View) -> str | None:
    """The fleet check's summary line, or None without one."""
    return view.nodes_summary


def items(view: View) -> list[Finding]:
    """``[every-gpu-node-passes]`` where the lab ran the per-node checks; ``[]`` otherwise."""
    if not view.has(o.NODES):
        return []  # a lab from before the per-node checks
    if view.is_unknown(o.NODES):
        return [_finding(Status.NOT_EVALUATED, "the node table is known after deployment", "", False)]
    table = view.nodes
    if not isinstance(table, list):
        return []
    sim = view.simulated(list(KEYS))
    if not table:
        return [_finding(Status.FAIL, "no GPU node", "scripts/kubectl get nodes --show-labels", sim)]
    failed = [r for r in table if r.get("status") == "fail"]
    untested = [r for r in table if r.get("status") not in (PASS, "fail")]
    passed = [str(r.get("node")) for r in table if r.get("status") == PASS]
    head = view.nodes_summary or f"{len(table)} nodes"
    if not failed and untested:
        # Nothing failed, but not every node was tested: never a pass.
        said = "; ".join(f"{r.get('node')}: {r.get('notTested') or 'not tested'}" for r in untested)
        fixes_ = "; ".join(f"{r.get('node')}: {r.get('fix')}" for r in untested if r.get("fix"))
        return [
            _finding(
                Status.NOT_TESTED, f"{head}; not tested: {said}; passed: {', '.join(passed)}", fixes_, sim
            )
        ]
    if not failed:
        return [_finding(Status.PASS, f"{head}; passed: {', '.join(passed)}", "", sim)]
    lines = [f"{r.get('node')}: {r.get('firstFailure') or 'failed'}" for r in failed]
    fixes = [f"{r.get('node')}: {r.get('fix')}" for r in failed if r.get("fix")]
    observed = f"{head}; failed: {'; '.join(lines)}" + (f"; passed: {', '.join(passed)}" if passed else "")
    return [_finding(Status.FAIL, observed, "; ".join(fixes), sim)]


def _finding(status: Status, observed: str, fix: str, sim: bool) -> Finding:
    return Finding(ITEM_ID, status, observed, EXPECTED, fix, simulated=sim, title=TITLE)
