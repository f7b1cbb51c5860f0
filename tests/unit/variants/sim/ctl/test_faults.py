"""The sim lab's pressure fault (variants.sim.ctl.faults): the kubelet's own condition strings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from variants.sim.ctl import faults


def test_disk_pressure_is_written_as_the_kubelet_writes_it() -> None:
    """kubernetes pkg/kubelet/nodestatus/setters.go (DiskPressureCondition): reason
    KubeletHasDiskPressure, message "kubelet has disk pressure"; cleared: KubeletHasNoDiskPressure."""
    now = datetime(2026, 12, 1, 0, 0, tzinfo=UTC)
    on = faults.pressure_patch("DiskPressure", True, now)["status"]["conditions"][0]
    assert (on["type"], on["status"], on["reason"], on["message"]) == (
        "DiskPressure",
        "True",
        "KubeletHasDiskPressure",
        "kubelet has disk pressure",
    )
    assert on["lastTransitionTime"] == "2026-12-01T00:00:00Z"
    off = faults.pressure_patch("DiskPressure", False, now)["status"]["conditions"][0]
    assert (off["status"], off["reason"], off["message"]) == (
        "False",
        "KubeletHasNoDiskPressure",
        "kubelet has no disk pressure",
    )


def test_an_unknown_condition_is_refused() -> None:
    with pytest.raises(ValueError, match="must be one of"):
        faults.pressure_patch("NetworkUnavailable", True, datetime.now(UTC))
