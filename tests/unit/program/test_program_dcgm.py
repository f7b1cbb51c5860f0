"""The program under mocks: the DCGM scrape beside the compute check, the topology output, and
the benchmark's burst/sustained figures (components/dcgm.py, program/lab.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab.core import outputs as out
from tests.unit.program_harness import MINIKUBE, run_program
from variants.registry import step_of

V2 = Path(__file__).resolve().parents[2] / "data" / "tflops" / "h200-torch-v2.json"


pytestmark = pytest.mark.usefixtures("no_host_tools")


def test_gpu_lab_scrapes_dcgm_after_the_smoke_check_beside_the_compute_check() -> None:
    run = run_program(MINIKUBE)
    assert run.error is None, run.error
    scrape = run.by_name("dcgm-scrape")
    assert scrape.step == "dcgm-scrape"
    argv = scrape.argv()
    assert argv[:4] == ["python", "-m", "gpulab.kube", "dcgm"]
    assert argv[argv.index("--namespace") + 1] == "gpu-operator"
    assert argv[argv.index("--service") + 1] == "nvidia-dcgm-exporter"
    assert argv[argv.index("--port") + 1] == "9400"
    # After the smoke check (the exporter was ready for the gate); no order with the compute
    # check either way, so the engine runs both at once.
    dcgm = run.by_name("dcgm")
    assert run.urn_of("smoke-check") in dcgm.dependencies
    assert run.urn_of("compute-check") not in dcgm.dependencies + scrape.dependencies
    compute = run.by_name("compute")
    assert run.urn_of("dcgm-scrape") not in compute.dependencies
    assert run.urn_of("dcgm") not in compute.dependencies
    # Re-run whenever the smoke check re-ran (make verify replaces it).
    assert scrape.inputs["triggers"] == ["2026-12-01T09:00:20+00:00"]
    o = run.outputs
    metrics = o[out.DCGM_METRICS]
    assert list(metrics["gpus"]) == ["GPU-00000000-0000-4000-8000-000000000000"]
    assert metrics["gpus"]["GPU-00000000-0000-4000-8000-000000000000"]["driverVersion"] == "580.159.04"
    assert o[out.DCGM_MEASURED_AT] == "2026-12-01T09:00:32+00:00"
    assert out.DCGM_METRICS not in o[out.SIMULATED_FIELDS]


def test_no_scrape_with_the_exporter_off() -> None:
    run = run_program({**MINIKUBE, "dcgmExporter": "false"})
    assert run.error is None, run.error
    assert "dcgm-scrape" not in run.names()
    assert run.outputs[out.DCGM_METRICS] is None and run.outputs[out.DCGM_MEASURED_AT] is None


def test_no_scrape_in_the_simulated_lab_and_its_topology_is_simulated(chart: str) -> None:
    run = run_program({"cluster": "sim", "chartPath": chart, "simGpus": "2"})
    assert run.error is None, run.error
    assert not [r for r in run.registrations if r.step == "dcgm-scrape"]
    o = run.outputs
    assert o[out.DCGM_METRICS] is None
    topo = o[out.HOST_TOPOLOGY]
    assert topo["source"] == "capture:h200-2gpu (nvidia-smi topo -m)"
    codes = [(g["index"], [lk["code"] for lk in g["links"]]) for g in topo["gpus"]]
    assert codes == [(0, ["NV18"]), (1, ["NV18"])]
    assert topo["gpus"][0]["links"][0] == {
        "peer": 1,
        "peerUuid": "GPU-00000001-0000-4000-8000-000000000001",
        "kind": "NV",
        "nvlinks": 18,
        "code": "NV18",
    }
    assert out.HOST_TOPOLOGY in o[out.SIMULATED_FIELDS]
    assert run.by_name("host").inputs["simulated"] is True


def test_the_topology_output_of_a_gpu_lab_is_not_simulated() -> None:
    run = run_program(MINIKUBE)
    topo = run.outputs[out.HOST_TOPOLOGY]
    assert topo["gpus"][0]["cpuAffinity"] == "0-15" and topo["gpus"][0]["numaNode"] == 0
    assert out.HOST_TOPOLOGY not in run.outputs[out.SIMULATED_FIELDS]


def test_benchmark_pod_exports_burst_sustained_and_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit import program_harness

    doc = json.loads(V2.read_text())
    real = program_harness.fake_stdout

    def stdout(purpose: str, gpus: int = 1) -> str:
        return json.dumps(doc) if purpose == "benchmark-result" else real(purpose, gpus)

    monkeypatch.setattr(program_harness, "fake_stdout", stdout)
    run = run_program({**MINIKUBE, "benchmarkPod": "true"})
    assert run.error is None, run.error
    bf16 = run.outputs[out.MEASURED_TFLOPS]["bf16"]
    assert bf16["tflops"] == 667.9
    assert bf16["burst"]["tflops"] == 790.9 and bf16["burst"]["smClockMHz"] == 1980
    assert bf16["sustained"]["smClockMHz"] == 1470 and bf16["sustained"]["powerW"] == 687.1
    assert bf16["reference"]["tflops"] == 797.8 and bf16["reference"]["withinTolerance"] is True
    assert "reference" not in run.outputs[out.MEASURED_TFLOPS]["fp32"]
    assert step_of(run.by_name("benchmark-result").inputs["create"]) == "benchmark-result"
