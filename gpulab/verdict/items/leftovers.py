"""The checklist item ``no-leftovers``: destroy left only what the ``leftovers`` output listed.

For the ``existing`` variant, where the lab does not own the cluster and so cannot delete it
whole. Before destroy the stack's ``leftovers`` output promises what stays (the chart's
CRDs: Helm never deletes them; with ``removeCrds`` only those that were there before the
lab). After destroy a leftover census (``python -m variants.existing.ctl leftovers``, the
shape of :func:`variants.existing.leftovers.census`) lists what is there: the chart's CRDs,
the operator's namespace (gone, or stuck Terminating), and the ``nvidia.com/`` node labels
the operator's stack set that were not on the nodes before the lab (the GPU Operator does
not remove them on uninstall: NVIDIA/gpu-operator#1391).

:func:`evaluate` compares the two: ``pass`` when the census lists nothing the output did not
promise and every object the lab did not create (the ``foreignObjects`` output: UIDs taken
before the lab, in the namespaces it adopted) is still there with its UID, ``fail`` naming each
unpromised leftover with the command that removes it, or each such object gone or replaced,
``not-evaluated`` before destroy (no census). :func:`items` is what the checklist adds: the
item for an existing cluster when a census is given, else nothing.

Inputs: the typed outputs (:class:`gpulab.core.outputs.LabOutputs`) and the census document;
pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import fixes_operator
from gpulab.core.findings import Finding, Status
from gpulab.core.outputs import LabOutputs

__all__ = ["ITEM_ID", "TITLE", "evaluate", "items"]

ITEM_ID: Final = "no-leftovers"
TITLE: Final = "Destroy leaves only the listed leftovers (chart CRDs; no namespace, no node labels)"
_EXPECTED: Final = "after destroy the cluster holds nothing of the lab but what the leftovers output lists"
_CENSUS_CMD: Final = (
    "python -m variants.existing.ctl leftovers --kubeconfig-path <file> --context <ctx> "
    "--outputs .state/outputs-<stack>.json"
)


def _fix(census: Mapping[str, Any], unpromised: list[str]) -> str:
    steps: list[str] = []
    crds = [x.split("/", 1)[1] for x in unpromised if x.startswith("customresourcedefinition/")]
    if crds:
        steps.append(
            fixes_operator.remove_leftover_crds(crds)
            + "; to have destroy remove them: scripts/pulumi config set gpu-lab:removeCrds true"
        )
    ns = census.get("namespace") or {}
    if any(x.startswith("namespace/") for x in unpromised):
        steps.append(str(ns.get("fix") or f"scripts/kubectl get ns {ns.get('name')} -o yaml"))
    labels = census.get("labels") or {}
    for node, keys in sorted(labels.items()):
        keys = [k for k in keys if f"node/{node} label {k}" in unpromised]
        if keys:
            steps.append(fixes_operator.remove_node_labels(node, keys))
    return "; ".join(steps)


def evaluate(outputs: LabOutputs, census: Mapping[str, Any] | None) -> Finding:
    """The ``no-leftovers`` item from the stack ``outputs`` saved before destroy and the
    leftover ``census`` taken after it (None: not taken yet, ``not-evaluated``)."""
    promised = [str(x) for x in outputs.leftovers or []]
    if census is None:
        return Finding(
            ITEM_ID,
            Status.NOT_EVALUATED,
            f"known after destroy: take the leftover census ({_CENSUS_CMD})",
            _EXPECTED,
            _CENSUS_CMD,
            title=TITLE,
        )
    found = [str(x) for x in census.get("leftovers") or []]
    unpromised = [x for x in found if x not in promised]
    touched = _touched(census.get("untouched"))
    if touched:
        return Finding(
            ITEM_ID,
            Status.FAIL,
            f"destroy removed what the lab did not create: {touched}",
            _EXPECTED,
            "restore them from their owner's source (the UIDs before the lab are in the "
            "foreignObjects output); then report it: destroy must delete only the lab's objects",
            title=TITLE,
        )
    gone = [x for x in promised if x not in found]
    if unpromised:
        return Finding(
            ITEM_ID,
            Status.FAIL,
            f"destroy left what the leftovers output did not list: {', '.join(unpromised)}",
            _EXPECTED,
            _fix(census, unpromised),
            title=TITLE,
            evidence=f"promised: {', '.join(promised) or 'nothing'}",
        )
    left = ", ".join(found) or "nothing"
    note = f"; listed but already gone: {', '.join(gone)}" if gone else ""
    checked = (census.get("untouched") or {}).get("checked")
    if checked:
        note += f"; the {checked} object(s) the lab did not create are all there with their UIDs"
    return Finding(
        ITEM_ID,
        Status.PASS,
        f"destroy left {left}, as the leftovers output listed{note}",
        _EXPECTED,
        "",
        title=TITLE,
    )


def _touched(untouched: Any) -> str:
    """``"Kind/ns/name (gone), ..."`` of the census' ``untouched`` part; ``""`` when none."""
    if not isinstance(untouched, Mapping):
        return ""
    gone = [f"{r} (gone)" for r in untouched.get("missing") or []]
    gone += [f"{r} (replaced: another UID)" for r in untouched.get("replaced") or []]
    return ", ".join(gone)


def items(outputs: LabOutputs, census: Mapping[str, Any] | None) -> list[Finding]:
    """What the checklist adds: ``[evaluate(...)]`` for a cluster the lab does not own
    (``ownsCluster`` false: an existing cluster) with a census,
    else ``[]`` (a lab that owns its cluster deletes it whole; before destroy there is
    nothing to count yet, and an item that can only be not-evaluated would fail every
    checklist run)."""
    if outputs.owns_cluster or census is None:
        return []
    return [evaluate(outputs, census)]
