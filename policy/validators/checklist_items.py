"""The chapter's checklist items as stack policies, one per :mod:`gpulab.verdict.checklist` item
(``device-plugin-stable``, ``allocatable-matches-gpus``, ``driver-version-matches``,
``events-scheduled-and-pulled``, ``baseline-card-complete``, ``compute-works``,
``dcgm-reports-gpus``, ``pods-see-every-gpu``): each runs
:func:`gpulab.verdict.checklist.evaluate` on the stack outputs, so they share one check factory and
live in one module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from gpulab.core import fixes
from gpulab.core.outputs import LabOutputs, OutputsError
from gpulab.verdict import checklist
from gpulab.verdict.items import dra, nodes, queues
from policy.stack_context import StackContext
from policy.validators.findings import FAIL, NOT_EVALUATED, PASS, Finding
from policy.validators.spec import _STR, MANDATORY, Settings, Spec, _int
from policy.validators.stack_view import Res, StackCheck, _stack_outputs, lab_outputs


def _replicas(cfg: Settings) -> int | None:
    """The pack config's ``timeSlicingReplicas`` (>= 1), or None: the outputs' then say."""
    value = cfg.get("timeSlicingReplicas")
    if value is None:
        return None
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return None


def checklist_outputs(
    resources: Sequence[Res], cfg: Settings, ctx: StackContext
) -> tuple[LabOutputs, str | None, bool]:
    """The typed stack outputs for :func:`gpulab.verdict.checklist.evaluate`
    (policy.validators.stack_view.lab_outputs), with pack-config overrides (``expectedGpus``
    -> host GPU count, ``hostDriverVersion``, ``timeSlicingReplicas``) applied; the stack's
    URN; and whether the stack has any output yet.

    Raises:
        gpulab.core.outputs.OutputsError: an export (or an override) has the wrong shape.
    """
    outputs, urn = lab_outputs(resources, ctx, time_slicing_replicas=_replicas(cfg))
    any_output = bool(_stack_outputs(resources)[0])
    if cfg.get("expectedGpus") is not None:
        outputs = outputs.with_values(host_gpu_count=int(cfg["expectedGpus"]))
    if cfg.get("hostDriverVersion"):
        outputs = outputs.with_values(host_driver_version=str(cfg["hostDriverVersion"]))
    return outputs, urn, any_output


def checklist_check(item_id: str) -> StackCheck:
    """The stack check for one :mod:`gpulab.verdict.checklist` item: its finding on the stack's
    URN; ``not-evaluated`` with no outputs yet or in a preview; ``fail`` naming every bad key
    when the outputs do not have the lab's shape; nothing when the item is not this lab's mode's."""

    def check(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
        try:
            outputs, urn, any_output = checklist_outputs(resources, cfg, ctx)
        except OutputsError as exc:
            return [Finding(item_id, FAIL, str(exc), "the stack outputs have the lab's shape", fixes.card())]
        items = {i.id: i for i in checklist.evaluate(outputs)}
        it = items.get(item_id)
        if it is None:  # an item of another mode (gpu-allocated-through-dra: DRA only)
            return []
        found = replace(it, subject=urn)
        if not any_output:
            found = replace(found, status=NOT_EVALUATED, observed="the stack has no outputs yet")
        elif ctx.dry_run is True and it.status != NOT_EVALUATED:
            # A preview may still see the last deployment's outputs; they prove nothing now.
            found = replace(
                found, status=NOT_EVALUATED, observed=f"{checklist.KNOWN_AFTER_DEPLOYMENT} (preview)"
            )
        return [found]

    return check


def nodes_check(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
    """``every-gpu-node-passes``, per node: one finding for each row of the node table
    (gpulab.verdict.items.nodes), so a failing node is its own violation and never hides the
    others; nothing where the lab ran no per-node check (it installs the operator)."""
    try:
        outputs, urn, any_output = checklist_outputs(resources, cfg, ctx)
    except OutputsError as exc:
        return [
            Finding(nodes.ITEM_ID, FAIL, str(exc), "the stack outputs have the lab's shape", fixes.card())
        ]
    items = [i for i in checklist.evaluate(outputs) if i.id == nodes.ITEM_ID]
    if not items or not any_output:
        return []
    if ctx.dry_run is True or items[0].status == NOT_EVALUATED:
        return [
            replace(items[0], subject=urn, status=NOT_EVALUATED, observed=checklist.KNOWN_AFTER_DEPLOYMENT)
        ]
    found = []
    for row in outputs.nodes or []:
        ok = row.get("status") == nodes.PASS
        observed = (
            f"node {row.get('node')}: {row.get('allocatable')} of {row.get('expected')} "
            f"({row.get('expectedSource')}); smoke {row.get('smoke')}, compute {row.get('compute')}"
            + ("" if ok else f"; {row.get('firstFailure')}")
        )
        found.append(
            replace(
                items[0],
                subject=urn,
                status=PASS if ok else FAIL,
                observed=observed,
                fix=row.get("fix") or "",
            )
        )
    return found or [replace(items[0], subject=urn)]


SPECS: Final[tuple[Spec, ...]] = (
    Spec(
        "device-plugin-stable",
        "Keep the device-plugin pods Running with no restarts through the readiness gate.",
        MANDATORY,
        "stack",
        checklist_check("device-plugin-stable"),
    ),
    Spec(
        "allocatable-matches-gpus",
        "Make allocatable nvidia.com/gpu equal the host's GPUs times the time-slicing replicas.",
        MANDATORY,
        "stack",
        checklist_check("allocatable-matches-gpus"),
        {
            "timeSlicingReplicas": {
                **_int(1),
                "description": "default: the outputs' timeSlicingReplicas (as deployed), else 1",
            },
            "expectedGpus": {
                **_int(0),
                "description": "physical GPUs expected; overrides the host probe's count",
            },
        },
    ),
    Spec(
        "driver-version-matches",
        "Make the smoke Pod's driver version equal the host's.",
        MANDATORY,
        "stack",
        checklist_check("driver-version-matches"),
        {"hostDriverVersion": {**_STR, "description": "the host's driver version; overrides the host probe"}},
    ),
    Spec(
        "events-scheduled-and-pulled",
        "Show the smoke Pod scheduled and its image pulled in its events.",
        MANDATORY,
        "stack",
        checklist_check("events-scheduled-and-pulled"),
    ),
    Spec(
        "baseline-card-complete",
        "Record every required field of the baseline card in the stack outputs.",
        MANDATORY,
        "stack",
        checklist_check("baseline-card-complete"),
    ),
    Spec(
        "compute-works",
        "Show a CUDA kernel computing on the GPU: the compute Pod's log says Test PASSED.",
        MANDATORY,
        "stack",
        checklist_check("compute-works"),
    ),
    Spec(
        "dcgm-reports-gpus",
        "Make the DCGM exporter report exactly the node's GPUs, by UUID, with their metrics.",
        MANDATORY,
        "stack",
        checklist_check("dcgm-reports-gpus"),
    ),
    Spec(
        "pods-see-every-gpu",
        "Give one Pod every GPU of the host: its nvidia-smi -L lists the host's GPU UUIDs.",
        MANDATORY,
        "stack",
        checklist_check("pods-see-every-gpu"),
    ),
    Spec(
        dra.ITEM_ID,
        "In DRA mode, give the smoke Pod its GPUs through a ResourceClaim it is seen to hold.",
        MANDATORY,
        "stack",
        checklist_check(dra.ITEM_ID),
    ),
    Spec(
        queues.ITEM_ID,
        "With the queue layer, let Kueue admit a Job's whole GPU quota or none of it, within the quota.",
        MANDATORY,
        "stack",
        checklist_check(queues.ITEM_ID),
    ),
    Spec(
        nodes.ITEM_ID,
        "Make every GPU node advertise what its labels say, and its pinned Pods see its GPUs.",
        MANDATORY,
        "stack",
        nodes_check,
    ),
)
