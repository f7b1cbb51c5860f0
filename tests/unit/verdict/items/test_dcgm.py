"""Checklist item ``dcgm-reports-gpus`` (gpulab.verdict.items.dcgm): each status, from outputs."""

from __future__ import annotations

import copy
from typing import Any

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import checklist

H200 = "GPU-00000000-0000-4000-8000-000000000000"


def item(outputs: dict[str, Any]) -> checklist.Item:
    (found,) = [i for i in checklist.evaluate(LabOutputs.from_json(outputs)) if i.id == "dcgm-reports-gpus"]
    return found


def test_registered_after_compute_in_the_checklist() -> None:
    ids = [i.id for i in checklist.evaluate(LabOutputs.from_json({}))]
    assert (
        ids.index("dcgm-reports-gpus")
        == ids.index("compute-works") + 1
        == checklist.ITEM_IDS.index("dcgm-reports-gpus")
    )


def test_passes_when_the_exporter_reports_the_hosts_gpus(real: dict[str, Any]) -> None:
    found = item(real)
    assert found.status == checklist.PASS and not found.simulated
    assert found.observed.startswith(f"1 GPU(s), as the host: {H200} (7.0%, 493.0 MiB, 143.826 W, 39.0 C)")
    assert "6 scrape(s) over 10.0 s" in found.observed
    assert "kubectl -n gpu-operator logs ds/nvidia-dcgm-exporter" in found.fix
    assert found.title.startswith("DCGM exporter reports exactly the node's GPUs")


def test_fails_on_a_missing_or_a_foreign_gpu(real: dict[str, Any]) -> None:
    other = copy.deepcopy(real)
    other[o.DCGM_METRICS]["gpus"] = {"GPU-ffffffff": other[o.DCGM_METRICS]["gpus"][H200]}
    found = item(other)
    assert found.status == checklist.FAIL
    assert found.observed == (
        f"the exporter reports 1 GPU(s), the host has 1: not reported: {H200}; not on the host: GPU-ffffffff"
    )
    none = copy.deepcopy(real)
    none[o.DCGM_METRICS]["gpus"] = {}
    assert item(none).status == checklist.FAIL and "reports 0 GPU(s)" in item(none).observed


def test_fails_when_the_exporter_did_not_answer(real: dict[str, Any]) -> None:
    real[o.DCGM_METRICS] = {
        "gpus": {},
        "scrapes": 0,
        "seconds": 0,
        "error": "no answer from x in 120s: HTTP 503",
    }
    found = item(real)
    assert found.status == checklist.FAIL
    assert found.observed == "DCGM exporter: no answer from x in 120s: HTTP 503"
    assert "logs ds/nvidia-dcgm-exporter" in found.fix
    assert checklist.overall(checklist.evaluate(LabOutputs.from_json(real))) == "fail"


def test_compares_counts_where_the_host_uuids_are_unknown(real: dict[str, Any]) -> None:
    """An existing cluster with hostProbe off: hostGpus unknown, hostGpuCount from expectedGpus."""
    real[o.HOST_GPUS] = None
    real[o.HOST_GPU_COUNT] = 1
    found = item(real)
    assert found.status == checklist.PASS and "the host count is 1 (UUIDs unknown" in found.observed
    real[o.HOST_GPU_COUNT] = 2.0  # the engine hands numbers to policies as floats
    assert item(real).status == checklist.FAIL
    real[o.HOST_GPU_COUNT] = None
    assert item(real).status == checklist.NOT_EVALUATED


def test_not_observable_in_the_simulated_lab(sim: dict[str, Any]) -> None:
    found = item(sim)
    assert found.status == checklist.NOT_OBSERVABLE and found.simulated
    assert found.observed.startswith("not observable in simulation: no DCGM exporter process runs")
    assert checklist.overall(checklist.evaluate(LabOutputs.from_json(sim))) == "pass"


def test_not_tested_with_the_exporter_off(real: dict[str, Any], sim: dict[str, Any]) -> None:
    for outputs in (real, sim):
        outputs[o.OPERATOR_COMPONENTS]["dcgmExporter"] = False
        outputs[o.DCGM_METRICS] = None
        found = item(outputs)
        assert found.status == checklist.Status.NOT_TESTED
        assert (
            found.observed == "not tested: the DCGM exporter is switched off in this lab (dcgmExporter=false)"
        )


def test_not_evaluated_before_a_scrape(real: dict[str, Any]) -> None:
    del real[o.DCGM_METRICS]  # a stack from before this check
    found = item(real)
    assert found.status == checklist.NOT_EVALUATED and "dcgmMetrics not known yet" in found.observed
    real[o.DCGM_METRICS] = None
    assert "no scrape recorded" in item(real).observed
    real[o.DCGM_METRICS] = checklist.UNKNOWN  # a preview
    assert item(real).status == checklist.NOT_EVALUATED


def test_mig_utilisation_and_a_pod_hostname_are_said_not_counted(real: dict[str, Any]) -> None:
    mig = copy.deepcopy(real)
    g = mig[o.DCGM_METRICS]["gpus"][H200]
    g.update(utilPercent=None, migInstances=7, notComparable={"utilPercent": "not comparable under MIG: ..."})
    mig[o.DCGM_METRICS]["hostnamesNotNodes"] = ["nvidia-dcgm-exporter-abcde"]
    found = item(mig)
    assert found.status == checklist.PASS  # the same GPUs: the readings' meaning is said, not failed
    assert f"{H200} (493.0 MiB, 143.826 W, 39.0 C, utilPercent not comparable under MIG)" in found.observed
    assert (
        "hostname nvidia-dcgm-exporter-abcde: the exporter's hostname label names no node" in found.observed
    )
