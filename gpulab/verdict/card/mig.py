"""The card's MIG section: the strategy, each MIG resource allocatable against expected, and each
host GPU's MIG mode (shared by the Markdown and the HTML card, and by the summary line).

Built by :func:`mig_section` from the stack outputs (``migStrategy``, ``migResources``,
``expectedMigResources``, ``allocatableGpus``, ``hostGpus``: :mod:`gpulab.core.outputs`)::

    {"strategy": <fact of migStrategy>,
     "resources": [{"resource": "nvidia.com/mig-1g.18gb", "allocatable": 7, "expected": 7,
                    "simulated": bool}],
     "gpus": [{"index": 0, "name": "NVIDIA H200", "migMode": "Enabled",
               "migModePending": "Enabled", "simulated": bool}],
     "rows": [{"label": str, "resource": bool, <fact>}]}

``rows`` are the section as shown (``resource``: the label is a resource name), each a fact
(``value`` the text a person reads, ``source`` the output keys, ``simulated``, ``measuredAt``,
``freshness``: gpulab.verdict.card.model). Under ``single`` the MIG devices are advertised as
``nvidia.com/gpu``, so that row's allocatable is ``allocatableGpus``. ``None`` (no section)
for a stack from before ``migStrategy`` existed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from gpulab.core import outputs as o
from gpulab.core.names import GPU_RESOURCE
from gpulab.core.outputs import LabOutputs

#: ``migStrategy`` values under which the nodes advertise MIG devices.
MIG_ON: Final = ("single", "mixed")

#: Beside ``allocatableGpus`` 0 when MIG resources are advertised instead.
ZERO_GPU_NOTE: Final = "MIG: the GPUs are advertised as MIG devices, see MIG"

Fact = Callable[..., dict[str, Any]]


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): int(v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def resources(outputs: LabOutputs, is_simulated: Callable[[str], bool]) -> list[dict[str, Any]]:
    """One entry per resource MIG makes the nodes advertise (allocatable or expected), sorted."""
    strategy = outputs.mig_strategy
    have = _counts(outputs.mig_resources)
    want = _counts(outputs.expected_mig_resources)
    alloc = outputs.allocatable_gpus
    if strategy == "single" and GPU_RESOURCE in want and isinstance(alloc, int):
        have.setdefault(GPU_RESOURCE, alloc)
    rows = []
    for name in sorted(set(have) | set(want)):
        source = o.ALLOCATABLE_GPUS if name == GPU_RESOURCE else o.MIG_RESOURCES
        rows.append(
            {
                "resource": name,
                "allocatable": have.get(name),
                "expected": want.get(name),
                "simulated": is_simulated(source) or is_simulated(o.EXPECTED_MIG_RESOURCES),
            }
        )
    return rows


def _gpus(outputs: LabOutputs, simulated: bool) -> list[dict[str, Any]]:
    gpus = outputs.host_gpus
    out = []
    for g in gpus if isinstance(gpus, list) else []:
        if isinstance(g, Mapping) and (g.get("migMode") is not None or g.get("migModePending") is not None):
            out.append(
                {
                    "index": g.get("index"),
                    "name": g.get("name"),
                    "migMode": g.get("migMode"),
                    "migModePending": g.get("migModePending"),
                    "simulated": simulated,
                }
            )
    return out


def resource_text(r: Mapping[str, Any]) -> str:
    """``"7 allocatable / 7 expected"`` (``"none allocatable"`` when the nodes show none)."""
    have = r.get("allocatable")
    text = f"{'none' if have is None else have} allocatable"
    if r.get("expected") is not None:
        text += f" / {r['expected']} expected"
    return text


def mode_text(g: Mapping[str, Any]) -> str:
    """``"Enabled (pending Enabled)"``, or ``"Disabled (pending Enabled: takes effect after a
    GPU reset or reboot)"``; ``"Enabled"`` when no pending mode is reported."""
    mode, pending = g.get("migMode"), g.get("migModePending")
    text = str(mode or "not reported")
    if pending is not None and pending != mode:
        text += f" (pending {pending}: takes effect after a GPU reset or reboot)"
    elif pending is not None:
        text += f" (pending {pending})"
    return text


def mig_section(
    outputs: LabOutputs,
    fact: Fact,
    is_simulated: Callable[[str], bool],
    gate: Mapping[str, Any],
    host: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The card's ``mig`` section (module docstring); ``gate`` and ``host`` are the
    measurements (``measuredAt``, ``freshness``) of the readiness gate and the host probe."""
    if not outputs.has(o.MIG_STRATEGY):
        return None
    strategy = fact(o.MIG_STRATEGY)
    res = resources(outputs, is_simulated)
    gpus = _gpus(outputs, is_simulated(o.HOST_GPUS))
    rows: list[dict[str, Any]] = [{"label": "MIG strategy", **strategy}]
    for r in res:
        keys = o.ALLOCATABLE_GPUS if r["resource"] == GPU_RESOURCE else o.MIG_RESOURCES
        rows.append(
            {
                "label": r["resource"],
                "resource": True,
                **fact(keys, resource_text(r), derived=True),
                "source": f"{keys}, {o.EXPECTED_MIG_RESOURCES}",
                "simulated": r["simulated"],
                "measuredAt": gate.get("measuredAt"),
                "freshness": gate.get("freshness"),
            }
        )
    for g in gpus:
        rows.append(
            {
                "label": f"GPU{g['index']} MIG mode" + (f" ({g['name']})" if g.get("name") else ""),
                **fact(o.HOST_GPUS, mode_text(g), derived=True),
                "simulated": g["simulated"],
                "measuredAt": host.get("measuredAt"),
                "freshness": host.get("freshness"),
            }
        )
    return {"strategy": strategy, "resources": res, "gpus": gpus, "rows": rows}


def physical_text(count: Any, gpus: list[Mapping[str, Any]]) -> str:
    """``"1 physical GPU, MIG"``, ``"2 physical GPUs, 1 with MIG"`` or ``"1 physical GPU"``."""
    n = count if isinstance(count, int) else None
    text = f"{'?' if n is None else n} physical GPU{'' if n == 1 else 's'}"
    on = sum(1 for g in gpus if g.get("migMode") == "Enabled")
    if on and n is not None and on >= n:
        return f"{text}, MIG"
    return f"{text}, {on} with MIG" if on else text


def summary_part(section: Mapping[str, Any]) -> str | None:
    """The summary line's MIG counts, ``"MIG 7 nvidia.com/mig-1g.18gb allocatable / 7
    expected"``; None when MIG advertises nothing here (strategy none, no MIG resource)."""
    strategy = (section.get("strategy") or {}).get("value")
    res = section.get("resources") or []
    if strategy not in MIG_ON or not res:
        return None
    parts = []
    for r in res:
        have = "none" if r.get("allocatable") is None else r["allocatable"]
        expected = f" / {r['expected']} expected" if r.get("expected") is not None else ""
        parts.append(f"{have} {r['resource']} allocatable{expected}")
    return "MIG " + ", ".join(parts)
