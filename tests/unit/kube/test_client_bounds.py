"""Every API call the lab makes has a bound, and a failure names what did not answer.

Against local stand-ins for an API server (a socket that accepts and never answers, as a
frozen etcd makes list calls hang; and one whose /readyz reports etcd failed, as
kube-apiserver's verbose readiness does), through the real kubernetes client.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from gpulab.kube import client as kube


def kubeconfig(url: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
            "users": [{"name": "u", "user": {"token": "t"}}],
        }
    )


@pytest.fixture
def silent() -> Iterator[str]:
    """An address that accepts connections and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


#: kube-apiserver's /version (answered without etcd).
VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.3",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2026-11-01T00:00:00Z",
    "goVersion": "go1.26.8",
    "compiler": "gc",
    "platform": "linux/amd64",
}
#: kube-apiserver's /readyz?verbose while etcd does not answer.
READYZ = "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]informer-sync ok\nreadyz check failed\n"


class _Etcdless(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        kind = "text/plain"
        if self.path.startswith("/version"):
            body, code, kind = json.dumps(VERSION), 200, "application/json"
        elif self.path.startswith("/readyz"):
            body = READYZ
            code = 500
        else:
            body, code = "", 504
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def etcd_frozen() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Etcdless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_call_without_its_own_timeout_still_ends(silent: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    monkeypatch.setattr(kube, "REQUEST_TIMEOUT", (1.0, 1.0))
    api = kube.load_clients(kubeconfig(silent))
    t0 = time.monotonic()
    with pytest.raises(Exception):  # noqa: B017 (urllib3's timeout error, whichever class)
        client.CoreV1Api(api).list_node()
    # Without the bound it would wait for ever (the server never answers); 30 s leaves room for
    # a loaded machine running the suite in parallel.
    assert time.monotonic() - t0 < 30


def test_ping_of_a_server_that_never_answers_names_it_within_its_bound(silent: str) -> None:
    api = kube.load_clients(kubeconfig(silent))
    t0 = time.monotonic()
    with pytest.raises(kube.GateError) as e:
        kube.ping(api, timeout=1)
    assert time.monotonic() - t0 < 15
    assert f"the API server at {silent} did not answer within 1s" in str(e.value)


def test_ping_when_etcd_does_not_answer_names_etcd(etcd_frozen: str) -> None:
    # /version is answered without etcd: it alone proves nothing about the cluster.
    api = kube.load_clients(kubeconfig(etcd_frozen))
    with pytest.raises(kube.GateError) as e:
        kube.ping(api, timeout=2)
    assert "etcd did not answer the API server" in str(e.value)
    assert "readyz failed: etcd" in str(e.value)
    assert kube.readiness(api) == (False, ["etcd"])


def test_a_wait_gives_up_on_an_api_server_that_stays_away() -> None:
    import urllib3

    now = [0.0]

    def down() -> None:
        raise urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out")  # type: ignore[arg-type]

    w = kube.Waiter(
        timeout=600,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        unavailable_limit=30,
    )
    with pytest.raises(kube.GateError) as e:
        w.until("the nodes", down, lambda: "diagnosis")
    assert re.search(r"gave up waiting for the nodes: no answer for 3\ds", str(e.value)), str(e.value)
    assert now[0] < 40  # not the 600 s timeout


def test_a_short_outage_is_waited_out() -> None:
    import urllib3

    now = [0.0]
    answers = iter([urllib3.exceptions.ProtocolError("reset")] * 3 + [None, "ok"])

    def flaky() -> str | None:
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    w = kube.Waiter(timeout=600, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert w.until("x", flaky, lambda: "d") == "ok"
