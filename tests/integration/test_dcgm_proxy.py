"""The DCGM scrape through a real API server's service proxy (gpulab.kube.dcgm).

A simulated cluster (``python -m variants.sim.ctl``: real kube-apiserver, etcd, controllers)
gets the GPU Operator's exporter Service as the operator makes it (``nvidia-dcgm-exporter``,
port 9400 named ``gpu-metrics``, in ``gpu-operator``), its endpoint pointing at a stand-in
exporter on this machine that serves the laid-out H200 answer (tests/data/dcgm/h200-1gpu.txt).
The scrape then goes the way it goes on a GPU lab: the kubernetes client, the API server's
``services/nvidia-dcgm-exporter:9400/proxy/metrics``, the endpoint. The API server proxies
only to an endpoint address that is a Pod's IP (the endpoint's ``targetRef``) and never to
loopback, so the stand-in listens on this machine's own address and a Pod that kwok does not
manage carries that address in its status.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.kube import dcgm as kube_dcgm
from tests.integration.test_simcluster import Cluster, _cli, _up

# One module-scoped lab, its tests in order: one worker runs them all (make test: --dist loadgroup).
pytestmark = [pytest.mark.sim, pytest.mark.xdist_group("dcgm-proxy")]

ANSWER = (Path(__file__).resolve().parents[1] / "data" / "dcgm" / "h200-1gpu.txt").read_bytes()
H200 = "GPU-00000000-0000-4000-8000-000000000000"
POD = "nvidia-dcgm-exporter-stand-in"


def _own_address() -> str | None:
    """This machine's address on its default route (no packet is sent), None without one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.254", 9))
            address: str = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


class _Exporter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Exporter.hits.append(self.path)
        body = ANSWER if self.path == "/metrics" else b"404 page not found\n"
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture(scope="module")
def exporter() -> Iterator[tuple[str, int]]:
    address = _own_address()
    if address is None:
        pytest.skip("no non-loopback address: the API server does not proxy to loopback")
    server = http.server.ThreadingHTTPServer((address, 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield address, int(server.server_address[1])
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = _up(tmp_path_factory.mktemp("sim"), "it-dcgm", 1)
    try:
        yield c
    finally:
        _cli("down", "--name", c.name, "--workdir", str(c.workdir))


def _api(cluster: Cluster) -> Any:
    from kubernetes import client, config

    conf = client.Configuration()
    config.load_kube_config_from_dict(
        yaml.safe_load(cluster.kubeconfig.read_text()), client_configuration=conf
    )
    return client.ApiClient(conf)


def _service(address: str, port: int) -> str:
    """The operator's Service, and an endpoint on a stand-in Pod with this machine's address:
    the API server proxies only to endpoint addresses that are a Pod's IP (``targetRef``)."""
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: gpu-operator}}
---
apiVersion: v1
kind: Service
metadata:
  name: nvidia-dcgm-exporter
  namespace: gpu-operator
  labels: {{app: nvidia-dcgm-exporter}}
spec:
  ports: [{{name: gpu-metrics, port: 9400, targetPort: {port}, protocol: TCP}}]
---
apiVersion: v1
kind: Endpoints
metadata:
  name: nvidia-dcgm-exporter
  namespace: gpu-operator
subsets:
- addresses: [{{ip: "{address}", targetRef: {{kind: Pod, name: {POD}, namespace: gpu-operator}}}}]
  ports: [{{name: gpu-metrics, port: {port}, protocol: TCP}}]
"""


def _stand_in_pod(cluster: Cluster, address: str) -> None:
    """A Pod bound to a node kwok does not manage (so nothing rewrites its status), its IP
    this machine's: what the exporter's Pod is to the API server."""
    cluster.kubectl(
        "apply",
        "-f",
        "-",
        input_text=f"""
apiVersion: v1
kind: Namespace
metadata: {{name: gpu-operator}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {POD}, namespace: gpu-operator, labels: {{app: nvidia-dcgm-exporter}}}}
spec:
  nodeName: stand-in-host
  containers: [{{name: nvidia-dcgm-exporter, image: stand-in}}]
""",
    )
    status = (
        '{"status":{"phase":"Running","podIP":"%s","podIPs":[{"ip":"%s"}],"hostIP":"%s","hostIPs":[{"ip":"%s"}]}}'
        % ((address,) * 4)
    )
    cluster.kubectl(
        "-n", "gpu-operator", "patch", "pod", POD, "--subresource=status", "--type=merge", "-p", status
    )


def test_scrape_through_the_api_servers_service_proxy(cluster: Cluster, exporter: tuple[str, int]) -> None:
    address, port = exporter
    _stand_in_pod(cluster, address)
    cluster.kubectl("apply", "-f", "-", input_text=_service(address, port))
    api = _api(cluster)
    # The proxy answers once the Service's endpoint (and its mirrored EndpointSlice) is seen.
    doc = kube_dcgm.dcgm_scrape(api, seconds=2, interval=1, wait=60)
    metrics = doc.dcgm_metrics
    assert metrics["error"] is None, metrics
    assert list(metrics["gpus"]) == [H200]
    g = metrics["gpus"][H200]
    assert (g["driverVersion"], g["utilPercent"], g["fbUsedMiB"], g["powerW"], g["tempC"]) == (
        "580.159.04",
        7.0,
        493.0,
        143.826,
        39.0,
    )
    assert metrics["scrapes"] >= 2 and "/metrics" in _Exporter.hits


def test_an_exporter_not_ready_is_reported_not_raised(cluster: Cluster, exporter: tuple[str, int]) -> None:
    """The exporter's Pod not Ready (its readiness probe waits 45 s): the endpoint is listed
    under ``notReadyAddresses`` and the proxy answers 503."""
    _stand_in_pod(cluster, exporter[0])
    not_ready = _service(*exporter).replace("- addresses:", "- notReadyAddresses:")
    cluster.kubectl("apply", "-f", "-", input_text=not_ready)
    time.sleep(2)  # the EndpointSlice mirror follows
    metrics = kube_dcgm.dcgm_scrape(_api(cluster), seconds=1, interval=1, wait=3).dcgm_metrics
    assert metrics["gpus"] == {} and metrics["error"] is not None
    assert metrics["error"].startswith(
        "no answer from gpu-operator/nvidia-dcgm-exporter:9400/metrics in 3s: HTTP 503"
    )
    assert "no endpoints available" in metrics["error"]


def test_no_such_service_is_reported(cluster: Cluster) -> None:
    metrics = kube_dcgm.dcgm_scrape(_api(cluster), "default", seconds=1, interval=1, wait=2).dcgm_metrics
    assert "HTTP 404" in metrics["error"]
