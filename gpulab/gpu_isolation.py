"""Did each container see exactly the GPUs it was given? The check behind "one GPU each".

The kubelet's device manager gives each container of a Pod its own devices, but what the
container *sees* is up to the node's runtime: a device plugin that passes the allocation in a
way the runtime does not read (CDI annotations that never reach the runtime, CDI devices that
cri-dockerd drops) leaves the runtime with the image's ``NVIDIA_VISIBLE_DEVICES=all``, and
every container sees every GPU while the scheduler's count stays right. So a count proves
nothing; the GPUs each container lists (``nvidia-smi -L`` in it, gpulab.smoke_gpus) do.
NVIDIA's nvkind CI asserts the same for its DRA Pod ("expected exactly 1 GPU", ruling out
"all host GPUs leaked into the pod": NVIDIA/nvkind .github/workflows/gpu-e2e.yaml).

Units, by what one container was given:

* ``gpu``: one whole GPU (``nvidia.com/gpu``, no sharing): it must list exactly one GPU, no
  two containers the same one, each among the host's when those are known;
* ``shared``: one time-slicing replica (``timeSlicingReplicas`` > 1, or
  ``nvidia.com/gpu.shared``): exactly one GPU, among the host's; two containers may share one;
* ``mig``: one MIG device: exactly one MIG device, no two containers the same one, and at
  most its parent GPU.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

UNIT_GPU: Final = "gpu"
UNIT_SHARED: Final = "shared"
UNIT_MIG: Final = "mig"
UNITS: Final = (UNIT_GPU, UNIT_SHARED, UNIT_MIG)

#: Kinds of :class:`Problem`: a container listed nothing; more than it was given; the same
#: GPU as another container; a GPU the host does not have.
NONE_LISTED: Final = "none-listed"
EXTRA: Final = "extra"
SHARED: Final = "shared"
FOREIGN: Final = "foreign"


@dataclass(frozen=True)
class Problem:
    """One way a container's listing differs from what it was given: ``kind`` (one of
    :data:`NONE_LISTED`, :data:`EXTRA`, :data:`SHARED`, :data:`FOREIGN`) and ``text`` (the
    sentence, naming the container(s) and UUIDs)."""

    kind: str
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Seen:
    """What one container listed: ``container`` its name, ``gpus`` the GPU UUIDs
    (``GPU-...``), ``mig`` the MIG device UUIDs (``MIG-...``), each in listing order."""

    container: str
    gpus: tuple[str, ...] = ()
    mig: tuple[str, ...] = ()


def _shown(uuids: Sequence[str]) -> str:
    return ", ".join(uuids)


def problems(seen: Sequence[Seen], unit: str, host: Collection[str] | None = None) -> list[Problem]:
    """Every way ``seen`` differs from one ``unit`` per container (module docstring), one line
    each, in container order; ``[]`` when each container saw exactly what it was given.

    Args:
        seen: one entry per container of the Pod.
        unit: ``gpu``, ``shared`` or ``mig`` (what each container was allocated).
        host: the host's GPU UUIDs (``hostGpus``), None when not known (no host probe, an
            existing cluster): then membership is not checked.

    Raises:
        ValueError: an unknown ``unit``.
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    found: list[Problem] = []
    for s in seen:
        if unit == UNIT_MIG:
            if not s.mig:
                found.append(Problem(NONE_LISTED, f"{s.container} listed no MIG device, it was given 1"))
            elif len(s.mig) > 1:
                found.append(
                    Problem(EXTRA, f"{s.container} saw {len(s.mig)} MIG devices ({_shown(s.mig)}), given 1")
                )
            if len(s.gpus) > 1:
                found.append(
                    Problem(
                        EXTRA,
                        f"{s.container} saw {len(s.gpus)} GPUs ({_shown(s.gpus)}) beside its MIG device",
                    )
                )
        elif not s.gpus:
            text = f"{s.container} listed no GPU (no nvidia-smi -L line), it was given 1"
            found.append(Problem(NONE_LISTED, text))
        elif len(s.gpus) > 1:
            text = f"{s.container} saw {len(s.gpus)} GPUs ({_shown(s.gpus)}), it was given 1"
            found.append(Problem(EXTRA, text))
        if host is not None:
            foreign = [u for u in s.gpus if u not in host]
            if foreign:
                found.append(Problem(FOREIGN, f"{s.container} saw {_shown(foreign)}, not a GPU of the host"))
    if unit != UNIT_SHARED:
        found += _shared(seen, unit)
    return found


def _shared(seen: Sequence[Seen], unit: str) -> list[Problem]:
    """One problem per GPU (or MIG device) that two or more containers listed."""
    holders: dict[str, list[str]] = {}
    for s in seen:
        for u in s.mig if unit == UNIT_MIG else s.gpus:
            holders.setdefault(u, []).append(s.container)
    return [
        Problem(
            SHARED,
            f"{' and '.join(names)} {'both' if len(names) == 2 else 'all'} saw {u} (each was given its own)",
        )
        for u, names in holders.items()
        if len(names) > 1
    ]


def covered(seen: Sequence[Seen]) -> list[str]:
    """The distinct GPU UUIDs the containers listed, in first-seen order."""
    out: list[str] = []
    for s in seen:
        out += [u for u in s.gpus if u not in out]
    return out


def from_outputs(per_container: Mapping[str, object]) -> list[Seen]:
    """``computeGpuUuids`` (``{"vectoradd-0": {"gpus": [...], "mig": [...]}}``) as
    :class:`Seen` entries, in container order; malformed entries read as nothing seen."""
    out: list[Seen] = []
    for name, entry in per_container.items():
        gpus = entry.get("gpus") if isinstance(entry, Mapping) else None
        mig = entry.get("mig") if isinstance(entry, Mapping) else None
        out.append(
            Seen(
                str(name),
                tuple(str(u) for u in gpus) if isinstance(gpus, list) else (),
                tuple(str(u) for u in mig) if isinstance(mig, list) else (),
            )
        )
    return out


def to_outputs(seen: Sequence[Seen]) -> dict[str, dict[str, list[str]]]:
    """The inverse of :func:`from_outputs`: what the compute check exports."""
    return {s.container: {"gpus": list(s.gpus), "mig": list(s.mig)} for s in seen}


def unit_for(resource: str, replicas: int) -> str:
    """The unit a container of ``resource`` gets: ``mig`` for ``nvidia.com/mig-*``, ``shared``
    under time-slicing (``replicas`` > 1 or ``nvidia.com/gpu.shared``), else ``gpu``."""
    if resource.startswith("nvidia.com/mig-"):
        return UNIT_MIG
    if replicas > 1 or resource.endswith(".shared"):
        return UNIT_SHARED
    return UNIT_GPU
