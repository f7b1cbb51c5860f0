"""The DCGM scrape: what the GPU Operator's DCGM exporter reports while the compute check runs.

``python -m gpulab.kube dcgm`` (components/dcgm.py runs it after the smoke check, beside the
compute check). It reads the exporter's ``/metrics`` through the API server's service proxy
(``GET /api/v1/namespaces/<ns>/services/nvidia-dcgm-exporter:9400/proxy/metrics``, the
kubernetes client's ``connect_get_namespaced_service_proxy_with_path``): no port-forward, no
route from this machine to the Pod network, only the lab's kubeconfig. The API server picks one
of the Service's ready endpoints per request (one per GPU node), so on a single-node lab every
scrape reaches the node's exporter.

First it waits up to ``--wait`` seconds for an answer (the exporter may still be starting;
the wait stops early when the exporter's Pods say it will not come: :func:`exporter_stop`),
then samples every ``--interval`` seconds for ``--seconds`` in all, and prints::

    {"dcgmMetrics": <gpulab.kube.dcgm_metrics.summarize>, "measuredAt": "2026-12-01T09:00:40+00:00"}

It exits 0 even when the exporter never answers or answers something unreadable: that is a
finding (``dcgmMetrics.error``, which the checklist item ``dcgm-reports-gpus`` fails on with the
exporter's logs as the first fix), not a reason to stop the lab's ``pulumi up``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.core.errors import GpuLabError
from gpulab.core.names import DCGM_EXPORTER_PORT, DCGM_EXPORTER_SERVICE, OPERATOR_NAMESPACE
from gpulab.kube import client as kube
from gpulab.kube import dcgm_metrics as dcgm
from gpulab.kube.results import DcgmResult

#: Seconds one proxied request may take.
REQUEST_TIMEOUT: Final = 10.0
#: The exporter Pods' label (gpu-operator v26.7.0 assets/state-dcgm-exporter/0800_daemonset.yaml).
EXPORTER_LABEL: Final = "app=nvidia-dcgm-exporter"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``dcgm`` subcommand's options."""
    p.add_argument("--namespace", default=OPERATOR_NAMESPACE, help="the operator's namespace")
    p.add_argument("--service", default=DCGM_EXPORTER_SERVICE)
    p.add_argument("--port", type=int, default=DCGM_EXPORTER_PORT)
    p.add_argument("--path", default="metrics")
    p.add_argument("--seconds", type=float, default=10, help="how long to sample, in seconds")
    p.add_argument("--interval", type=float, default=2, help="seconds between two scrapes")
    p.add_argument("--wait", type=float, default=120, help="seconds to wait for the first answer")


def _text(body: Any) -> str:
    """The body of a proxied GET: a urllib3 response (``_preload_content=False``), bytes or str."""
    data = getattr(body, "data", body)
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return str(data)


def scrape_once(api: Any, namespace: str, service: str, port: int, path: str) -> str:
    """One ``GET`` of the exporter's metrics through the service proxy; the response text.

    Raises:
        kubernetes.client.rest.ApiException: the API server's answer (503 when the Service has
            no ready endpoint, 404 when there is no such Service), or a connection error.
    """
    from kubernetes import client

    body = client.CoreV1Api(api).connect_get_namespaced_service_proxy_with_path(
        f"{service}:{port}", namespace, path, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
    )
    return _text(body)


def _why(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None)
    body = getattr(exc, "body", None)
    if status is not None:
        detail = f"HTTP {status} {reason or ''}".strip()
        return f"{detail}: {str(body)[:300]}" if body else detail
    return f"{type(exc).__name__}: {exc}"


@dataclass
class Sampler:
    """Scrapes with the clock and pause injectable (tests). ``fetch()`` returns the metrics text."""

    fetch: Callable[[], str]
    seconds: float = 10
    interval: float = 2
    wait: float = 120
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    errors: list[str] = field(default_factory=list)
    #: Asked after each unanswered scrape with the seconds waited: a text when the exporter's
    #: Pods say it will not come (a refused image, node pressure: :func:`exporter_stop`).
    stop: Callable[[float], str | None] | None = None

    def _try(self) -> list[dcgm.Sample] | None:
        try:
            return dcgm.parse_exposition(self.fetch())
        except dcgm.DcgmParseError as exc:
            self.errors.append(f"the exporter's answer is not Prometheus text: {exc}")
        # The kubernetes client raises ApiException, urllib3 and socket errors: all mean "no
        # answer this time"; the next scrape may get one, and the last reason is reported.
        except Exception as exc:
            self.errors.append(_why(exc))
        return None

    def run(self) -> tuple[list[list[dcgm.Sample]], float]:
        """The scrapes that answered, and the seconds sampled (0 when none answered)."""
        start = self.clock()
        first: list[dcgm.Sample] | None = None
        pause = min(1.0, self.interval)
        while first is None:
            first = self._try()
            if first is not None:
                break
            if self.clock() - start >= self.wait:
                return [], 0.0
            stopped = self.stop(self.clock() - start) if self.stop is not None else None
            if stopped:
                self.errors.append(stopped)
                return [], 0.0
            print(f"[gpulab] DCGM exporter not answering yet ({self.errors[-1]}); retrying", file=sys.stderr)
            self.sleep(pause)
            pause = min(pause * 2, self.interval * 2, 10.0)
        began = self.clock()
        scrapes = [first]
        while self.clock() - began + self.interval <= self.seconds:
            self.sleep(self.interval)
            got = self._try()
            if got is not None:
                scrapes.append(got)
        return scrapes, self.clock() - began


def exporter_stop(api: Any, namespace: str, profile: str = "gpu-lab") -> Callable[[float], str | None]:
    """The DCGM wait's stop rule: the exporter's Pods (``app=nvidia-dcgm-exporter`` in
    ``namespace``), their events and nodes through :data:`gpulab.diagnose.stop.POD_RULES`; a
    text (cause and fix) when one will not recover, else None. A read that fails is None (the
    scrape's own error says why)."""
    from kubernetes import client

    from gpulab.diagnose import stop as rules
    from gpulab.kube.client import sanitize

    core = client.CoreV1Api(api)
    clock = rules.StopClock()

    def check(after: float) -> str | None:
        try:
            pods = [
                sanitize(p, api)
                for p in core.list_namespaced_pod(namespace, label_selector=EXPORTER_LABEL).items
            ]
            events = [sanitize(e, api) for e in core.list_namespaced_event(namespace).items]
            nodes = {
                str((d.get("metadata") or {}).get("name")): d
                for d in (sanitize(n, api) for n in core.list_node().items)
            }
        except Exception:  # the scrape's own error reports the API server
            return None
        hits = []
        for pod in pods:
            meta = pod.get("metadata") or {}
            own = [e for e in events if (e.get("involvedObject") or {}).get("uid") == meta.get("uid")]
            node = nodes.get(str((pod.get("spec") or {}).get("nodeName")))
            hits += rules.pod_hits(rules.PodEvidence(pod, own, node, profile, "dcgmExporterImage"))
        hit = clock.decide(hits, after)
        return rules.stop_message("the wait for the DCGM exporter", hit, after) if hit else None

    return check


def dcgm_scrape(
    api: Any,
    namespace: str = OPERATOR_NAMESPACE,
    service: str = DCGM_EXPORTER_SERVICE,
    port: int = DCGM_EXPORTER_PORT,
    path: str = "metrics",
    *,
    seconds: float = 10,
    interval: float = 2,
    wait: float = 120,
    sampler: Sampler | None = None,
) -> DcgmResult:
    """Sample the exporter (see the module docstring); returns what it printed, typed
    (:class:`~gpulab.kube.results.DcgmResult`: ``dcgm_metrics``, ``measured_at``).

    ``dcgmMetrics.error`` is None when at least one scrape answered and parsed; otherwise the
    last reason (an HTTP status and the API server's message, a parse error quoting the line).
    """
    s = sampler or Sampler(
        lambda: scrape_once(api, namespace, service, port, path),
        seconds=seconds,
        interval=interval,
        wait=wait,
        stop=exporter_stop(api, namespace),
    )
    print(
        f"[gpulab] sampling the DCGM exporter {namespace}/{service}:{port}/{path} for {s.seconds:g}s",
        file=sys.stderr,
        flush=True,
    )
    scrapes, sampled = s.run()
    error = None
    if not scrapes and s.errors and " stopped after " in s.errors[-1]:
        error = s.errors[-1]
    elif not scrapes:
        error = f"no answer from {namespace}/{service}:{port}/{path} in {s.wait:g}s: {s.errors[-1]}"
    elif not any(dcgm.gpu_readings(sc) for sc in scrapes):
        error = "the exporter answered but reported no GPU (no DCGM_FI_* sample carries a UUID label)"
    nodes: list[str] | None = None
    with contextlib.suppress(GpuLabError):  # a host label naming a node, or the exporter's Pod
        nodes = kube.node_names(api) if api is not None else None
    summary = dcgm.summarize(
        scrapes, seconds=sampled, where=dcgm.endpoint(namespace), error=error, nodes=nodes
    )
    print(
        f"[gpulab] DCGM exporter: {len(scrapes)} scrape(s), GPUs {sorted(summary['gpus']) or 'none'}"
        + (f"; {error}" if error else ""),
        file=sys.stderr,
        flush=True,
    )
    return DcgmResult(dcgm_metrics=summary, measured_at=datetime.now(UTC).isoformat(timespec="seconds"))


def from_args(api: Any, args: argparse.Namespace) -> DcgmResult:
    """``python -m gpulab.kube dcgm ...`` (options: :func:`add_arguments`)."""
    return dcgm_scrape(
        api,
        args.namespace,
        args.service,
        args.port,
        args.path,
        seconds=args.seconds,
        interval=args.interval,
        wait=args.wait,
    )
