"""The plain-text report (:mod:`gpulab.diagnose.formatting`)."""

from __future__ import annotations

from gpulab import diagnose
from gpulab.diagnose import Diagnosis


def test_render_numbers_blocks_with_all_fields() -> None:
    d = Diagnosis(
        row="operator-pending",
        object="pod gpu-operator/x",
        reason="Pending",
        detail="0/1 nodes are available: 1 Insufficient cpu.",
        fix="give the node >= 4 CPUs",
        variant="insufficient-cpu",
    )
    text = diagnose.render([d, d])
    assert text.startswith("[1] operator-pending (insufficient-cpu), blocking\n")
    assert "\n[2] operator-pending" in text
    for field in ("object: pod gpu-operator/x", "reason: Pending", "detail: 0/1", "fix:    give"):
        assert field in text
