"""gpulab.kube.dcgm: the scrape through the API server's service proxy, its waits and failures
(a fake clock and a fake exporter; the proxy itself against a real API server is in
tests/integration/test_dcgm_proxy.py)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpulab.kube import cli
from gpulab.kube import dcgm as kube_dcgm
from gpulab.kube.results import DcgmResult

DATA = Path(__file__).resolve().parents[2] / "data" / "dcgm"
H200 = "GPU-00000000-0000-4000-8000-000000000000"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


class Unavailable(Exception):
    """What the kubernetes client raises for the proxy's 503 (ApiException's attributes)."""

    status = 503
    reason = "Service Unavailable"
    body = '{"message":"no endpoints available for service \\"nvidia-dcgm-exporter\\""}'


def exporter(answers: list[Any]) -> Any:
    """A fetch() answering in turn: text, or an exception to raise; the last answer repeats."""

    def fetch() -> str:
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return str(answer)

    return fetch


def sampler(answers: list[Any], **kw: Any) -> tuple[kube_dcgm.Sampler, Clock]:
    clock = Clock()
    return kube_dcgm.Sampler(exporter(answers), clock=clock, sleep=clock.sleep, **kw), clock


def test_samples_every_interval_for_the_given_seconds() -> None:
    text = (DATA / "h200-1gpu.txt").read_text()
    s, clock = sampler([text], seconds=10, interval=2)
    doc = kube_dcgm.dcgm_scrape(None, sampler=s)
    metrics = doc.dcgm_metrics
    assert metrics["scrapes"] == 6 and metrics["seconds"] == 10.0 and clock.pauses == [2] * 5
    assert list(metrics["gpus"]) == [H200] and metrics["error"] is None
    assert metrics["gpus"][H200]["samples"] == 6
    assert doc.measured_at.endswith("+00:00")


def test_waits_for_a_starting_exporter_then_samples() -> None:
    text = (DATA / "h200-1gpu.txt").read_text()
    s, clock = sampler([Unavailable(), Unavailable(), text], seconds=4, interval=2, wait=60)
    metrics = kube_dcgm.dcgm_scrape(None, sampler=s).dcgm_metrics
    assert metrics["error"] is None and metrics["scrapes"] == 3
    assert clock.pauses[:2] == [1.0, 2.0]  # backing off while it starts


def test_an_exporter_that_never_answers_is_a_finding_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    s, _ = sampler([Unavailable()], wait=30, interval=2)
    metrics = kube_dcgm.dcgm_scrape(None, sampler=s).dcgm_metrics
    assert metrics["gpus"] == {} and metrics["scrapes"] == 0
    assert metrics["error"].startswith(
        "no answer from gpu-operator/nvidia-dcgm-exporter:9400/metrics in 30s: HTTP 503 Service Unavailable: "
    )
    assert "no endpoints available" in metrics["error"]
    assert "DCGM exporter not answering yet" in capsys.readouterr().err


def test_an_answer_that_is_not_prometheus_text_is_reported() -> None:
    s, _ = sampler(["<html>404 page not found</html>"], wait=5)
    metrics = kube_dcgm.dcgm_scrape(None, sampler=s).dcgm_metrics
    assert "not Prometheus text: line 1" in metrics["error"]


def test_an_answer_without_gpus_is_reported() -> None:
    s, _ = sampler(["# HELP go_goroutines x\ngo_goroutines 12\n"], seconds=2)
    metrics = kube_dcgm.dcgm_scrape(None, sampler=s).dcgm_metrics
    assert (
        metrics["error"]
        == "the exporter answered but reported no GPU (no DCGM_FI_* sample carries a UUID label)"
    )


def test_a_failed_scrape_in_the_middle_is_skipped() -> None:
    text = (DATA / "h200-1gpu.txt").read_text()
    s, _ = sampler([text, ConnectionResetError("reset"), text], seconds=4, interval=2)
    metrics = kube_dcgm.dcgm_scrape(None, sampler=s).dcgm_metrics
    assert metrics["scrapes"] == 2 and metrics["error"] is None


def test_scrape_once_goes_through_the_service_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    class FakeCore:
        def __init__(self, api: Any) -> None:
            self.api = api

        def connect_get_namespaced_service_proxy_with_path(
            self, name: str, ns: str, path: str, **kw: Any
        ) -> Any:
            calls.append((self.api, name, ns, path, kw))
            return SimpleNamespace(data=b'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1"} 40\n')

    from kubernetes import client

    monkeypatch.setattr(client, "CoreV1Api", FakeCore)
    text = kube_dcgm.scrape_once("api", "gpu-operator", "nvidia-dcgm-exporter", 9400, "metrics")
    assert text == 'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1"} 40\n'
    ((api, name, ns, path, kw),) = calls
    assert (api, name, ns, path) == ("api", "nvidia-dcgm-exporter:9400", "gpu-operator", "metrics")
    assert kw["_preload_content"] is False and kw["_request_timeout"] == kube_dcgm.REQUEST_TIMEOUT


def test_the_subcommand_prints_one_json_object(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Any] = {}

    def fake(api: Any, args: Any) -> DcgmResult:
        seen.update(vars(args))
        return DcgmResult(dcgm_metrics={"gpus": {}}, measured_at="2026-12-01T09:00:32+00:00")

    monkeypatch.setattr(cli, "load_clients", lambda: "api")
    monkeypatch.setattr(kube_dcgm, "from_args", fake)
    assert cli.main(["dcgm", "--seconds", "4", "--interval", "1"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"dcgmMetrics": {"gpus": {}}, "measuredAt": "2026-12-01T09:00:32+00:00"}
    assert (seen["namespace"], seen["service"], seen["port"], seen["seconds"], seen["wait"]) == (
        "gpu-operator",
        "nvidia-dcgm-exporter",
        9400,
        4.0,
        120.0,
    )


def test_an_exporter_whose_image_is_refused_stops_the_wait_early_with_the_cause() -> None:
    """NVIDIA/dcgm-exporter#31's Pod ("Failed to pull image nvcr.io/nvidia/k8s/dcgm-exporter...")
    seen through the stop rule: the wait ends at the first unanswered scrape, not after --wait."""
    said = "the wait for the DCGM exporter stopped after 0s: image x cannot be pulled [pull-refused]"
    s, clock = sampler([Unavailable()], wait=120, interval=2, stop=lambda after: said)
    metrics = kube_dcgm.dcgm_scrape(None, sampler=s).dcgm_metrics
    assert metrics["error"] == said and metrics["scrapes"] == 0
    assert clock.now < 1


def test_the_exporter_stop_reads_its_pods_through_the_stop_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from kubernetes import client

    image = "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
    pod = {
        "metadata": {"name": "nvidia-dcgm-exporter-x", "namespace": "gpu-operator", "uid": "d1"},
        "spec": {"nodeName": "n1", "containers": [{"name": "nvidia-dcgm-exporter", "image": image}]},
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {
                    "name": "nvidia-dcgm-exporter",
                    "image": image,
                    "state": {"waiting": {"reason": "ErrImagePull", "message": f"{image}: 401 Unauthorized"}},
                }
            ],
        },
    }
    seen: dict[str, Any] = {}

    class Core:
        def __init__(self, api: Any) -> None:
            pass

        def list_namespaced_pod(self, ns: str, label_selector: str = "") -> Any:
            seen["selector"] = label_selector
            return SimpleNamespace(items=[pod])

        def list_namespaced_event(self, ns: str) -> Any:
            return SimpleNamespace(items=[])

        def list_node(self) -> Any:
            return SimpleNamespace(items=[{"metadata": {"name": "n1"}, "status": {}}])

    class Api:
        def sanitize_for_serialization(self, obj: Any) -> Any:
            return obj

    monkeypatch.setattr(client, "CoreV1Api", Core)
    text = kube_dcgm.exporter_stop(Api(), "gpu-operator")(3.0)
    assert seen["selector"] == "app=nvidia-dcgm-exporter"
    assert text is not None and text.startswith("the wait for the DCGM exporter stopped after 3s")
    assert "gpu-lab:dcgmExporterImage" in text and "[pull-refused]" in text
