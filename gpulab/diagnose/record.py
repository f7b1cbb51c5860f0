"""The diagnosis' finding (:class:`Diagnosis`) and the names every diagnosis shares."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.core import names
from gpulab.core.findings import Finding, Status

GPU_RESOURCE: Final = names.GPU_RESOURCE
SHARED_GPU_RESOURCE: Final = names.SHARED_GPU_RESOURCE
DEFAULT_PROFILE: Final = names.DEFAULT_PROFILE
DEFAULT_PROBE_IMAGE: Final = names.DEFAULT_PROBE_IMAGE

Json = Mapping[str, Any]


class Diagnosis(Finding):
    """One diagnosis: the lab's finding record (status ``fail``), made with the diagnosis' names.

    ``row``: stable kebab-case id of the troubleshooting row (the table in
    :mod:`gpulab.diagnose`; the record's ``id``); ``object``: the failing object (its
    ``subject``), e.g.
    ``"pod gpu-operator/nvidia-device-plugin-daemonset-x2k/container nvidia-device-plugin"``,
    ``"node minikube"``, ``"daemonset gpu-operator/nvidia-container-toolkit-daemonset"``;
    ``reason``: one sentence, what is wrong (its ``observed``); ``detail``: the evidence, e.g.
    an event message, the last log line, counts (its ``evidence``); ``fix``: the first
    reaction, as commands to run; ``blocking``: False when the lab still works (e.g. the DCGM
    exporter); ``variant``: a sub-case of the row (e.g. ``"not-registered"``), ``""`` when none.

    The attributes ``row``, ``object``, ``reason`` and ``detail`` read the record's fields.
    ``dataclasses.replace`` does not apply (it would call this constructor with the record's
    field names); build a new one.
    """

    def __init__(
        self,
        row: str,
        object: str,
        reason: str,
        detail: str,
        fix: str,
        blocking: bool = True,
        variant: str = "",
    ) -> None:
        super().__init__(
            row,
            Status.FAIL,
            reason,
            fix=fix,
            subject=object,
            evidence=detail,
            blocking=blocking,
            variant=variant,
        )
