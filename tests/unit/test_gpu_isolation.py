"""gpulab.gpu_isolation: each container saw exactly what it was given, read from the
``nvidia-smi -L`` lines of real captures (tests/data/nvidia-smi, gpulab/captures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab import gpu_isolation as gi
from gpulab import smoke_gpus

ROOT = Path(__file__).resolve().parents[2]
TWO = (ROOT / "tests" / "data" / "nvidia-smi" / "h200-2gpu" / "nvidia-smi-L.txt").read_text()
MIG = (ROOT / "gpulab" / "captures" / "h200-1gpu-mig" / "nvidia-smi-L.txt").read_text()
A, B = smoke_gpus.gpu_uuids(TWO) or []
HOST = {A, B}


def seen(name: str, listing: str) -> gi.Seen:
    return gi.Seen(
        name, tuple(smoke_gpus.gpu_uuids(listing) or ()), tuple(smoke_gpus.mig_uuids(listing) or ())
    )


def line(uuid: str) -> str:
    return next(x for x in TWO.splitlines() if uuid in x)


def test_one_distinct_host_gpu_per_container_is_right() -> None:
    assert gi.problems([seen("vectoradd-0", line(A)), seen("vectoradd-1", line(B))], gi.UNIT_GPU, HOST) == []
    assert gi.covered([seen("vectoradd-0", line(A)), seen("vectoradd-1", line(B))]) == [A, B]


def test_two_containers_on_the_same_gpu_is_a_problem() -> None:
    (p,) = gi.problems([seen("vectoradd-0", line(A)), seen("vectoradd-1", line(A))], gi.UNIT_GPU, HOST)
    assert (
        p.kind == gi.SHARED and str(p) == f"vectoradd-0 and vectoradd-1 both saw {A} (each was given its own)"
    )


def test_a_container_that_saw_every_gpu_is_a_problem_for_each_and_shared() -> None:
    found = gi.problems([seen("vectoradd-0", TWO), seen("vectoradd-1", TWO)], gi.UNIT_GPU, HOST)
    kinds = [p.kind for p in found]
    assert kinds == [gi.EXTRA, gi.EXTRA, gi.SHARED, gi.SHARED]
    assert str(found[0]) == f"vectoradd-0 saw 2 GPUs ({A}, {B}), it was given 1"


def test_none_listed_and_a_foreign_gpu() -> None:
    (none,) = gi.problems([gi.Seen("vectoradd-0")], gi.UNIT_GPU)
    assert none.kind == gi.NONE_LISTED
    (foreign,) = gi.problems([seen("vectoradd-0", line(B))], gi.UNIT_GPU, {A})
    assert foreign.kind == gi.FOREIGN and B in str(foreign)
    assert gi.problems([seen("vectoradd-0", line(B))], gi.UNIT_GPU, None) == []  # host unknown


def test_time_slicing_replicas_may_share_but_not_see_two() -> None:
    assert gi.problems([seen("a", line(A)), seen("b", line(A))], gi.UNIT_SHARED, HOST) == []
    (p,) = gi.problems([seen("a", TWO)], gi.UNIT_SHARED, HOST)
    assert p.kind == gi.EXTRA


def test_mig_one_device_under_its_parent() -> None:
    lines = MIG.splitlines()
    one = "\n".join(lines[:2])
    assert gi.problems([seen("vectoradd-0", one)], gi.UNIT_MIG) == []
    every = gi.problems([seen("vectoradd-0", MIG)], gi.UNIT_MIG)
    assert [p.kind for p in every] == [gi.EXTRA] and "saw 7 MIG devices" in str(every[0])
    (none,) = gi.problems([seen("vectoradd-0", lines[0])], gi.UNIT_MIG)
    assert none.kind == gi.NONE_LISTED
    assert gi.problems([seen("a", one), seen("b", one)], gi.UNIT_MIG)[0].kind == gi.SHARED


def test_outputs_round_trip_and_units() -> None:
    entries = [seen("vectoradd-0", line(A)), seen("vectoradd-1", "\n".join(MIG.splitlines()[:2]))]
    assert gi.from_outputs(gi.to_outputs(entries)) == entries
    assert gi.from_outputs({"vectoradd-0": "junk"}) == [gi.Seen("vectoradd-0")]
    assert gi.unit_for("nvidia.com/gpu", 1) == gi.UNIT_GPU
    assert gi.unit_for("nvidia.com/gpu", 4) == gi.UNIT_SHARED
    assert gi.unit_for("nvidia.com/gpu.shared", 1) == gi.UNIT_SHARED
    assert gi.unit_for("nvidia.com/mig-1g.18gb", 1) == gi.UNIT_MIG
    with pytest.raises(ValueError, match="unit must be one of"):
        gi.problems([], "whole")
