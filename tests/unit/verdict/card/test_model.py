"""gpulab.verdict.card.model: simulated labelling, secrets, TFLOPS, the checklist and the rest of the card."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict import card
from tests.unit.samples import NOW, tflops_fixture

# A flattened kubeconfig as `kubectl config view --flatten --minify` prints it (keys made up).
KUBECONFIG_TEXT = """\
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUREekNDQWZl
    server: https://192.168.49.2:8443
  name: gpu-lab
contexts:
- context:
    cluster: gpu-lab
    user: gpu-lab
  name: gpu-lab
current-context: gpu-lab
kind: Config
users:
- name: gpu-lab
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdt
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJ
"""
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu3awllsgEwZY\n-----END RSA PRIVATE KEY-----\n"
SECRET_MARKERS = (
    "client-key-data",
    "LS0tLS1CRUdJTi",
    "BEGIN RSA",
    "MIIEowIBAAKCAQEAu3awllsgEwZY",
    "192.168.49.2",
)


def all_facts(c: dict[str, Any]) -> dict[str, dict[str, Any]]:
    facts = {}
    for section in ("host", "cluster", "operator", "smoke"):
        for key, fact in c[section].items():
            if isinstance(fact, dict) and "source" in fact:
                facts[f"{section}.{key}"] = fact
    return facts


# --- simulated lab -------------------------------------------------------------------------


def test_simulated_card_labels_every_simulated_value(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert c["schema"] == "gpulab.dev/baseline-card/v1"
    assert c["simulated"] is True
    sim_fields = set(sim[o.SIMULATED_FIELDS])
    facts = all_facts(c)
    for name, fact in facts.items():
        assert fact["simulated"] is (fact["source"] in sim_fields), name
    assert facts["host.driverVersion"] == {
        "value": "580.159.04",
        "source": "hostDriverVersion",
        "simulated": True,
        "known": True,
        "measuredAt": sim[o.RUN_AT],
        "freshness": "current",
    }
    assert facts["cluster.allocatableGpus"]["simulated"] is True
    assert facts["operator.chartVersion"]["simulated"] is False


def test_simulated_card_checklist_has_pull_not_observable(sim: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    items = {i["id"]: i for i in c["checklist"]["items"]}
    assert items["events-scheduled-and-pulled"]["status"] == "not-observable-in-simulation"
    assert all(i["simulated"] for i in items.values())
    assert c["checklist"]["exitCode"] == 0


def test_simulated_lab_without_field_list_labels_everything(sim: dict[str, Any]) -> None:
    del sim[o.SIMULATED_FIELDS]
    c = card.build_card(LabOutputs.from_json(sim), now=NOW)
    assert all(f["simulated"] for f in all_facts(c).values())


# --- secrets -------------------------------------------------------------------------------


def test_no_kubeconfig_or_pem_anywhere_in_card(sim: dict[str, Any], tmp_path: Path) -> None:
    sim[o.KUBECONFIG] = KUBECONFIG_TEXT
    sim[o.CHART_SOURCE] = PEM  # a secret where none belongs is still caught
    sim[o.SMOKE_IMAGE] = "[secret]"
    c = card.build_card(LabOutputs.from_json(sim), now=NOW, tool_versions={"kubeconfig": KUBECONFIG_TEXT})
    text_json = json.dumps(c)
    text_md = card.render_markdown(c)
    for marker in SECRET_MARKERS:
        assert marker not in text_json, marker
        assert marker not in text_md, marker
    assert "[secret]" not in text_json
    assert c["operator"]["chartSource"]["value"] == "[redacted]"
    assert set(c["redacted"]) >= {
        "kubeconfig",
        "chartSource",
        "smokeImage",
        "toolVersions.kubeconfig",
    }

    # Through the CLI and its files too.
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(sim))
    assert card.main(["--outputs", str(outputs), "--out-dir", str(tmp_path / "out")]) == 0
    for name in ("baseline-card.md", "baseline-card.json"):
        written = (tmp_path / "out" / name).read_text()
        for marker in SECRET_MARKERS:
            assert marker not in written, (name, marker)


def test_sanitize_keeps_plain_values() -> None:
    redacted: list[str] = []
    value = {"a": ["x", 1, None, {"b": "token: abc"}], "c": True}
    assert card.sanitize(value, "", redacted) == {
        "a": ["x", 1, None, {"b": "[redacted]"}],
        "c": True,
    }
    assert redacted == ["a[3].b"]


# --- TFLOPS --------------------------------------------------------------------------------


def test_real_card_with_h200_tflops_fixture(real: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(real), tflops=tflops_fixture(), now=NOW)
    tf = c["measuredTflops"]
    assert tf["status"] == "measured"
    assert tf["simulated"] is False
    assert tf["gpu"] == "NVIDIA H200"
    assert tf["backend"].startswith("torch ")
    bf16 = tf["results"]["bf16"]
    assert bf16["peak"] == 989.5
    assert bf16["fraction"] == pytest.approx(bf16["tflops"] / 989.5, abs=1e-3)
    assert "warning" not in tf
    assert c["checklist"]["result"] == "pass"
    assert bf16["tflops"] == 667.9 and tf["headline"] == "sustained"
    assert bf16["burst"]["tflops"] == 790.9 and bf16["burst"]["smClockMHz"] == 1980
    assert bf16["sustained"]["smClockMHz"] == 1470 and bf16["sustained"]["powerW"] == 687.1
    assert bf16["burst"]["fraction"] == 0.799 and bf16["sustained"]["fraction"] == 0.675
    assert tf["reference"]["tflops"] == 797.8 and tf["reference"]["burstOverReference"] == 0.991
    md = card.render_markdown(c)
    assert "| bf16 | 790.9 (1980 MHz, 120 W) | 667.9 (1470 MHz, 687 W) | 989.5 | 79.9% / 67.5% |" in md
    assert "Reference (plain bf16 `c = a @ b`, 10 products): 797.8 TFLOP/s at 1980 MHz; " in md
    assert "burst / reference 0.991 (within 3%)" in md
    assert "- sustained: back to back after the ramp" in md and "the headline rate" in md
    assert "dense datasheet figures" in md
    assert "H200 Tensor Core GPU datasheet" in md


def test_tflops_from_stack_output_gets_peaks_from_the_host_model(real: dict[str, Any]) -> None:
    real[o.MEASURED_TFLOPS] = {"bf16": 791.4, "fp32": 51.0}
    tf = card.build_card(LabOutputs.from_json(real), now=NOW)["measuredTflops"]
    assert tf["source"] == "stack output measuredTflops"
    assert tf["results"]["bf16"] == {
        "tflops": 791.4,
        "peak": 989.5,
        "fraction": 0.8,
        "burst": None,
        "sustained": None,
    }
    assert tf["headline"] is None  # the older output: one rate, no burst/sustained split
    assert tf["results"]["fp32"]["fraction"] == pytest.approx(51.0 / 67.0, abs=1e-3)


def test_tflops_measured_elsewhere_is_flagged(real: dict[str, Any]) -> None:
    doc = tflops_fixture()
    doc["gpu"] = "NVIDIA A100-SXM4-80GB"
    tf = card.build_card(LabOutputs.from_json(real), tflops=doc, now=NOW)["measuredTflops"]
    assert "measured on NVIDIA A100-SXM4-80GB" in tf["warning"]


def test_no_tflops_says_how_to_measure(real: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    assert c["measuredTflops"]["status"] == "not measured"
    md = card.render_markdown(c)
    assert "Not measured. To measure: on the GPU host: .venv/bin/python -m gpulab.tflops --json" in md
    items = {i["id"]: i for i in c["checklist"]["items"]}
    assert items["baseline-card-complete"]["status"] == "pass"


def test_bad_tflops_document_is_rejected(real: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="results"):
        card.build_card(LabOutputs.from_json(real), tflops={"gpu": "NVIDIA H200"}, now=NOW)


# --- the rest of the card ------------------------------------------------------------------


def test_card_sections_and_boundary_table(real: dict[str, Any]) -> None:
    c = card.build_card(LabOutputs.from_json(real), now=NOW, tool_versions={"pulumi": "3.272.0"})
    assert c["generatedAt"] == "2026-11-30T08:00:00+00:00"
    assert c["host"]["memoryMiBPerGpu"]["value"] == [143771]
    assert c["cluster"]["variant"]["value"] == "minikube"
    assert c["operator"]["components"]["value"]["driver"] is False
    assert c["smoke"]["events"]["value"][0] == "Scheduled"
    assert c["toolVersions"] == {"pulumi": "3.272.0"}
    assert o.KUBECONFIG not in json.dumps(c["host"])
    md = card.render_markdown(c)
    assert "## What the lab still lacks" in md
    for needle in (
        "time-slicing (timeSlicingReplicas) and MIG (migStrategy) as configured",
        "here: 1 replica(s) per GPU, migStrategy none",
        "HAMi, DRA",
        "missing: no governance yet",
        "Kueue, Volcano",
        "topology shown on the card",
        "not used for placement",
        "DCGM exporter's per-GPU metrics scraped and checked (dcgm-reports-gpus",
        "missing: NVIDIA path only",
    ):
        assert needle in md, needle
    assert "semantics not built" not in md
    real[o.OPERATOR_COMPONENTS]["dcgmExporter"] = False
    md_off = card.render_markdown(card.build_card(LabOutputs.from_json(real), now=NOW))
    assert "missing: DCGM exporter switched off in this lab" in md_off


def test_unknown_values_are_not_evaluated(real: dict[str, Any]) -> None:
    for key in (o.ALLOCATABLE_GPUS, o.SMOKE_DRIVER_VERSION, o.DEVICE_PLUGIN_PODS):
        del real[key]
    c = card.build_card(LabOutputs.from_json(real), now=NOW)
    statuses = {i["id"]: i["status"] for i in c["checklist"]["items"]}
    assert statuses["allocatable-matches-gpus"] == "not-evaluated"
    assert statuses["driver-version-matches"] == "not-evaluated"
    assert statuses["device-plugin-stable"] == "not-evaluated"
    assert c["checklist"]["result"] == "not-evaluated"
    assert c["checklist"]["exitCode"] == 1
    assert c["cluster"]["allocatableGpus"] == {
        "value": None,
        "source": "allocatableGpus",
        "simulated": False,
        "known": False,
        "measuredAt": real[o.GATE_MEASURED_AT],
        "freshness": "current",
    }
    assert "(not in the outputs)" in card.render_markdown(c)


def test_build_card_rejects_naive_time(real: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="timezone"):
        card.build_card(LabOutputs.from_json(real), now=datetime(2026, 11, 30))  # naive on purpose


def _dra(match: str | None) -> dict[str, Any]:
    claim = {
        "claim": "gpu-smoke-gpus-x1",
        "podClaim": "gpus",
        "devices": [
            {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "n", "device": "gpu-0", "uuid": "GPU-a"}
        ],
        "reservedFor": ["gpu-smoke"],
        "reservedForPod": True,
        "uuidsMatch": match,
    }
    slices = [{"node": "n", "pool": "n", "devices": [{"name": "gpu-0", "uuid": "GPU-a"}], "simulated": True}]
    return {"deviceClass": "gpu.nvidia.com", "driver": "gpu.nvidia.com", "slices": slices, "claim": claim}


def test_the_card_names_the_allocation_path_and_dra_makes_the_sharing_row_measured(
    sim: dict[str, Any],
) -> None:
    plain = card.build_card(
        LabOutputs.from_json({**sim, o.ALLOCATION_PATH: "device-plugin", o.DRA: None}), now=NOW
    )
    assert plain["smoke"]["allocationPath"]["value"] == "device-plugin"
    row = next(r for r in plain["capabilityBoundary"] if r["capability"].startswith("GPU sharing"))
    assert row["status"].startswith("partial")
    dra = card.build_card(
        LabOutputs.from_json({**sim, o.ALLOCATION_PATH: "dra", o.DRA: _dra("match")}), now=NOW
    )
    assert dra["smoke"]["allocationPath"]["value"] == "dra"
    row = next(r for r in dra["capabilityBoundary"] if r["capability"].startswith("GPU sharing"))
    assert row["status"].startswith("have, measured (dra_support, CNCF Kubernetes AI Conformance)"), row
    assert "n/gpu-0 (GPU-a)" in row["status"] and "simulated" in row["status"]
    # A claim whose devices the container did not see is no evidence.
    unseen = card.build_card(
        LabOutputs.from_json({**sim, o.ALLOCATION_PATH: "dra", o.DRA: _dra(None)}), now=NOW
    )
    row = next(r for r in unseen["capabilityBoundary"] if r["capability"].startswith("GPU sharing"))
    assert row["status"].startswith("partial")
    assert "Allocation path proven" in card.render_markdown(dra)
