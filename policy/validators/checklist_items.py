"""The chapter's checklist items as stack policies, one per :mod:`gpulab.verdict.checklist` item
(``device-plugin-stable``, ``allocatable-matches-gpus``, ``driver-version-matches``,
``events-scheduled-and-pulled``, ``baseline-card-complete``, ``compute-works``,
``dcgm-reports-gpus``, ``pods-see-every-gpu``): each runs
:func:`gpulab.verdict.checklist.evaluate` on the stack outputs, so they share one check factory and
live in one module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from gpulab.core import outputs as out
from gpulab.core.names import DEFAULT_PROFILE
from gpulab.verdict import checklist
from policy.stack_context import StackContext
from policy.validators.findings import NOT_EVALUATED, Finding
from policy.validators.props import UNKNOWN, has_unknown, lab_setting
from policy.validators.spec import _STR, MANDATORY, Settings, Spec, _int
from policy.validators.stack_view import Res, StackCheck, _stack_outputs


def _replicas(cfg: Settings, ctx: StackContext) -> int:
    value = cfg.get("timeSlicingReplicas") or lab_setting(ctx, "timeSlicingReplicas") or 1
    try:
        return max(1, int(value))
    except (TypeError, ValueError):
        return 1


def checklist_outputs(resources: Sequence[Res], cfg: Settings) -> tuple[dict[str, Any], str | None]:
    """The stack exports for :func:`gpulab.verdict.checklist.evaluate`, with pack-config overrides
    (``expectedGpus`` -> host GPU count, ``hostDriverVersion``) applied."""
    outputs, urn = _stack_outputs(resources)
    outputs = {k: (UNKNOWN if has_unknown(v) else v) for k, v in outputs.items()}
    if cfg.get("expectedGpus") is not None:
        outputs[out.HOST_GPU_COUNT] = int(cfg["expectedGpus"])
    if cfg.get("hostDriverVersion"):
        outputs[out.HOST_DRIVER_VERSION] = str(cfg["hostDriverVersion"])
    return outputs, urn


def checklist_check(item_id: str) -> StackCheck:
    """The stack check for one :mod:`gpulab.verdict.checklist` item."""

    def check(resources: list[Res], cfg: Settings, ctx: StackContext) -> list[Finding]:
        outputs, urn = checklist_outputs(resources, cfg)
        profile = lab_setting(ctx, "profile") or DEFAULT_PROFILE
        items = {
            i.id: i
            for i in checklist.evaluate(outputs, time_slicing_replicas=_replicas(cfg, ctx), profile=profile)
        }
        it = items[item_id]
        found = replace(it, subject=urn)
        if not outputs:
            found = replace(found, status=NOT_EVALUATED, observed="the stack has no outputs yet")
        elif ctx.dry_run is True and it.status != NOT_EVALUATED:
            # A preview may still see the last deployment's outputs; they prove nothing now.
            found = replace(
                found, status=NOT_EVALUATED, observed=f"{checklist.KNOWN_AFTER_DEPLOYMENT} (preview)"
            )
        return [found]

    return check


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
                "description": "default: the stack's gpu-lab:timeSlicingReplicas, else 1",
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
)
