"""The API client and the waits every cluster-side check shares.

The kubeconfig arrives as YAML text in the ``GPULAB_KUBECONFIG`` environment variable (a
secret; never argv). :class:`Waiter` polls a check with backoff and progress lines, riding out
an API server that is briefly unavailable; a wait that fails raises :class:`GateError` whose
message is the live diagnosis (:mod:`gpulab.diagnose.live`). Talks to the API server through the
official ``kubernetes`` Python client.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from gpulab.core import yamlio
from gpulab.core.errors import GpuLabError
from gpulab.core.rawapi import pod_log, raw_get
from gpulab.diagnose.live import Context
from gpulab.diagnose.live import diagnosis as _diagnose
from gpulab.kube.results import PingResult

KUBECONFIG_ENV = "GPULAB_KUBECONFIG"
#: The annotation of a run-once Pod (smoke, compute, benchmark) naming the inputs of the
#: check that reads it: a digest of the check's arguments (components/command.py
#: ``check_inputs``). The Pod is replaced whenever it changes, and a check refuses a Pod
#: made for other inputs (it would read an old run as this one).
CHECK_INPUTS_ANNOTATION = "gpulab.dev/check-inputs"
#: Every API request's bound unless the call gives its own: (connect, read) seconds. The
#: client's default is none at all, so one list call against a frozen etcd would wait for
#: the API server's own 60 s request timeout (and a dead TCP peer for ever).
REQUEST_TIMEOUT: tuple[float, float] = (5.0, 30.0)
#: How long a wait keeps retrying an API server that does not answer at all, in seconds,
#: before it fails naming what did not answer (k3s restarts within it when the operator's
#: toolkit reconfigures its containerd).
UNAVAILABLE_LIMIT: float = 120.0


class GateError(GpuLabError, RuntimeError):
    """A wait failed or timed out; the message is the diagnosis (first failing object, fix)."""


def load_clients(kubeconfig_text: str | None = None) -> Any:
    """An ``ApiClient`` for the kubeconfig text (default: ``$GPULAB_KUBECONFIG``).

    Raises:
        GateError: no kubeconfig given, or it does not parse.
    """
    from kubernetes import client, config

    text = kubeconfig_text if kubeconfig_text is not None else os.environ.get(KUBECONFIG_ENV)
    if not text:
        raise GateError(f"${KUBECONFIG_ENV} is empty: the cluster component gave no kubeconfig")
    try:
        cfg = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise GateError(f"${KUBECONFIG_ENV} is not valid YAML: {exc}") from exc
    conf = client.Configuration()
    config.load_kube_config_from_dict(cfg, client_configuration=conf)
    # A refused connection is retried once, not urllib3's three times with back-off.
    conf.retries = 1
    api = client.ApiClient(conf)
    bound_requests(api)
    return api


def bound_requests(api: Any, timeout: tuple[float, float] | None = None) -> Any:
    """Give every request of ``api`` (a ``kubernetes`` ``ApiClient``) a bound: ``timeout``
    (default :data:`REQUEST_TIMEOUT`, (connect, read) seconds) wherever the call passes no
    ``_request_timeout`` of its own. Returns ``api``."""
    rest = api.rest_client
    request = rest.request
    bound = timeout or REQUEST_TIMEOUT

    def bounded(*args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        return request(*args, _request_timeout=_request_timeout or bound, **kwargs)

    rest.request = bounded
    return api


def readiness(api: Any, timeout: float = 5) -> tuple[bool, list[str]]:
    """The API server's ``/readyz?verbose``: (ready, the names of the checks that failed,
    e.g. ``["etcd"]``: kube-apiserver lists each check as ``[+]name ok`` or ``[-]name failed``).
    A server that does not answer at all raises the client's error."""
    status, body = raw_get(api, "/readyz", [("verbose", "true")], timeout)
    if 200 <= status < 300:
        return True, []
    text = body.decode(errors="replace")
    failed = [line[3:].split(" failed", 1)[0].strip() for line in text.splitlines() if line.startswith("[-]")]
    return False, failed or [f"HTTP {status}"]


def unanswered(api: Any, exc: BaseException | None = None, timeout: float = 5) -> str:
    """Which component did not answer, in words: the API server itself (no connection, no
    answer within ``timeout`` s), or what its readiness check names (``etcd``, ...)."""
    host = api.configuration.host
    try:
        ready, failed = readiness(api, timeout)
    except Exception as probe:  # no answer at all
        why = exc or probe
        return f"the API server at {host} did not answer within {timeout:.0f}s ({_short(why)})"
    if ready:
        return f"the API server at {host} answers and is ready, but the request failed ({_short(exc)})"
    etcd = [c for c in failed if c.startswith("etcd")]
    named = "etcd did not answer the API server" if etcd else "the API server is not ready"
    return f"{named} (the API server at {host}: readyz failed: {', '.join(failed)})"


def _short(exc: BaseException | None) -> str:
    """An error in a few words: the OS error under urllib3's wrappers (``[Errno 111] Connection
    refused``), ``read timed out``, else its class and first line."""
    if exc is None:
        return "no error"
    text = str(exc).strip()
    errno_text = re.search(r"\[Errno -?\d+\] [^'\")(]+", text)
    if errno_text:
        return errno_text.group(0).strip()
    if "timed out" in text.lower():
        return "timed out"
    lines = text.splitlines()
    return f"{type(exc).__name__}: {lines[0][:200] if lines else ''}"


def kube_system_uid(api: Any, timeout: float = 10) -> str:
    """``metadata.uid`` of Namespace ``kube-system`` (the cluster's own identity,
    :mod:`gpulab.kube.identity`), read within ``timeout`` seconds.

    Raises:
        GateError: no answer in time; the message names the component that did not answer.
    """
    from kubernetes import client

    try:
        ns = client.CoreV1Api(api).read_namespace("kube-system", _request_timeout=(min(5, timeout), timeout))
    except Exception as exc:
        if not is_transient(exc) and not isinstance(exc, TimeoutError):
            raise GateError(f"reading Namespace kube-system failed: {_short(exc)}") from exc
        raise GateError(unanswered(api, exc)) from exc
    return str(ns.metadata.uid if ns.metadata else "")


def sanitize(obj: Any, api: Any) -> Any:
    """A client model object as plain JSON (camelCase keys, as ``kubectl -o json``)."""
    return api.sanitize_for_serialization(obj)


def is_transient(exc: BaseException) -> bool:
    """True for errors that say the API server is (briefly) unreachable, not that we are wrong.

    Connection failures (urllib3), and API answers with status 0 (no response), 429 or 5xx.
    """
    import urllib3
    from kubernetes.client.rest import ApiException

    if isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError)):
        return True
    return isinstance(exc, ApiException) and (exc.status in (0, 429) or (exc.status or 0) >= 500)


@dataclass
class Waiter:
    """Polls ``check`` until it returns a value, or raises GateError with ``diagnose()``."""

    timeout: float
    #: The longest pause between two checks, in seconds; the first pause is
    #: :attr:`first_interval` and each next one doubles up to this (a state that is already
    #: there, or is reached in a second, is seen at once; a long wait polls gently).
    interval: float = 2.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    first_interval: float = 0.2

    #: Seconds between "still waiting" progress lines.
    progress_every: float = 10.0
    #: Seconds the API server may not answer at all before the wait fails (naming what did
    #: not answer: :func:`unanswered` with :attr:`api`), however long :attr:`timeout` is.
    unavailable_limit: float = UNAVAILABLE_LIMIT
    #: The ApiClient the wait talks to, to say which component did not answer (optional).
    api: Any = None

    def until(
        self,
        what: str,
        check: Callable[[], Any],
        diagnose: Callable[[], str],
        stop: Callable[[float], str | None] | None = None,
    ) -> Any:
        """The first non-None ``check()``; progress lines on stderr (streamed into Pulumi's
        display by the command layer): when the wait starts, every :attr:`progress_every`
        seconds, and when it ends.

        ``stop`` (optional) is asked after every check that found nothing, with the seconds
        the wait has run; a text means the evidence says the state will not recover
        (:mod:`gpulab.diagnose.stop`): the wait ends at once with it, then ``diagnose()``.

        Raises:
            GateError: ``stop`` answered (``"<what> stopped after Ns: ..."``), ``timeout``
                seconds passed (the message is ``diagnose()``), or the API server did not
                answer for :attr:`unavailable_limit` seconds in a row (the message names what
                did not answer).
        """
        start = self.clock()
        deadline = start + self.timeout
        next_note = start + self.progress_every
        pause = min(self.first_interval, self.interval)
        down_since: float | None = None
        print(f"[gpulab] waiting for {what} (up to {self.timeout:.0f}s)", file=sys.stderr, flush=True)
        while True:
            try:
                value = check()
                down_since = None
            except Exception as exc:
                # The API server can drop connections for a while (e.g. k3s restarts when
                # the operator's toolkit reconfigures its containerd): keep waiting, within
                # unavailable_limit.
                if not is_transient(exc):
                    raise
                now = self.clock()
                down_since = now if down_since is None else down_since
                if now - down_since >= self.unavailable_limit:
                    who = unanswered(self.api, exc) if self.api is not None else f"({_short(exc)})"
                    raise GateError(
                        f"gave up waiting for {what}: no answer for {now - down_since:.0f}s: {who}"
                    ) from exc
                print(
                    f"waiting for {what}: API server unavailable ({_short(exc)}); retrying", file=sys.stderr
                )
                value = None
            now = self.clock()
            if value is not None:
                print(f"[gpulab] {what}: yes, after {now - start:.0f}s", file=sys.stderr, flush=True)
                return value
            if stop is not None and down_since is None:
                try:
                    stopped = stop(now - start)
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    stopped = None
                if stopped:
                    raise GateError(f"{stopped}\nthe cluster's diagnosis:\n{diagnose()}")
            if now >= next_note:
                print(f"[gpulab] still waiting for {what} ({now - start:.0f}s)", file=sys.stderr, flush=True)
                next_note = now + self.progress_every
            if now >= deadline:
                raise GateError(f"timed out after {self.timeout:.0f}s waiting for {what}:\n{diagnose()}")
            self.sleep(pause)
            pause = min(pause * 2, self.interval)


def pod_evidence(api: Any, namespace: str, pod: dict[str, Any], profile: str, image_key: str) -> Any:
    """One read of what a run-once Pod's wait stops on (:class:`gpulab.diagnose.stop.PodEvidence`):
    ``pod`` (JSON), this Pod's own events (its UID's), and its node; a Pod not yet on a node
    gets the first node that reports a pressure condition (a single-node lab's node), so a
    taint the scheduler names is checked against the node's own condition."""
    from kubernetes import client

    from gpulab.diagnose import stop

    core = client.CoreV1Api(api)
    meta = pod.get("metadata") or {}
    selector = f"involvedObject.name={meta.get('name')},involvedObject.kind=Pod"
    if meta.get("uid"):
        selector += f",involvedObject.uid={meta['uid']}"
    events = [sanitize(e, api) for e in core.list_namespaced_event(namespace, field_selector=selector).items]
    node_name = (pod.get("spec") or {}).get("nodeName")
    node = None
    if node_name:
        node = sanitize(core.read_node(node_name), api)
    else:
        nodes = [sanitize(n, api) for n in core.list_node().items]
        node = next((n for n in nodes if stop.node_pressure(n)), None)
    return stop.PodEvidence(pod, events, node, profile, image_key)


def foreign_pod(doc: dict[str, Any], inputs: str | None) -> str | None:
    """Why the Pod ``doc`` is not the one this check's run made (its
    :data:`CHECK_INPUTS_ANNOTATION` is not ``inputs``), or None (it is; or ``inputs`` None:
    not checked)."""
    if inputs is None:
        return None
    meta = doc.get("metadata") or {}
    have = (meta.get("annotations") or {}).get(CHECK_INPUTS_ANNOTATION)
    if have == inputs:
        return None
    ns, name = meta.get("namespace"), meta.get("name")
    return (
        f"Pod {ns}/{name} was made for other check inputs ({CHECK_INPUTS_ANNOTATION}={have or 'none'}, "
        f"this check's {inputs}): reading it would report an old run as this one\n"
        f"  fix: re-create it: scripts/kubectl -n {ns} delete pod {name} && make lab"
    )


def pod_times(doc: dict[str, Any]) -> tuple[str | None, str | None]:
    """When a run-once Pod ran: ``(started, finished)``, UTC ISO 8601 as the kubelet wrote them
    (``state.terminated.startedAt`` / ``finishedAt`` of its containers, the earliest start and
    the latest finish; a running container's ``state.running.startedAt``; else the Pod's
    ``status.startTime``); None where the Pod does not say."""
    status = doc.get("status") or {}
    starts: list[str] = []
    ends: list[str] = []
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        done = state.get("terminated") or {}
        running = state.get("running") or {}
        if done.get("startedAt") or running.get("startedAt"):
            starts.append(str(done.get("startedAt") or running.get("startedAt")))
        if done.get("finishedAt"):
            ends.append(str(done["finishedAt"]))
    started = min(starts, key=_instant) if starts else status.get("startTime")
    finished = max(ends, key=_instant) if ends else None
    return (_iso(started), _iso(finished))


def _instant(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def _iso(value: Any) -> str | None:
    """A timestamp (the client's ``datetime`` or the API's text) as UTC ISO 8601 seconds."""
    from datetime import UTC, datetime

    if value in (None, ""):
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when.astimezone(UTC).isoformat(timespec="seconds")


def wait_finished(
    api: Any,
    namespace: str,
    pod: str,
    timeout: float,
    ctx: Context | None,
    interval: float = 2.0,
    image_key: str = "smokeImage",
    inputs: str | None = None,
) -> dict[str, Any]:
    """Wait for a run-once Pod's final phase, ``Succeeded`` or ``Failed`` (a Pod has no
    ``complete`` condition), and return the Pod as JSON (``kubectl get -o json``).

    On every poll that finds it unfinished, the Pod's evidence (:func:`pod_evidence`) goes
    through :data:`gpulab.diagnose.stop.POD_RULES`: a state that will not recover (a pull the
    registry refused, a node under disk pressure, an eviction) ends the wait at once, one
    that may recover after its grace (``image_key``: the config key that sets the Pod's
    image, named in the fix).

    ``inputs``: this check's :data:`CHECK_INPUTS_ANNOTATION` value; a Pod that carries
    another is refused at once (:func:`foreign_pod`), never read as this run.

    Raises:
        GateError: a Pod made for other inputs, stopped (cause, evidence, fix, then the
            diagnosis) or timeout (with the diagnosis).
    """
    from kubernetes import client

    from gpulab.diagnose import stop

    core = client.CoreV1Api(api)
    seen: dict[str, Any] = {}
    clock = stop.StopClock()
    what = f"Pod {namespace}/{pod} to reach phase Succeeded"
    profile = (ctx or Context()).profile

    def done() -> dict[str, Any] | None:
        doc: dict[str, Any] = sanitize(core.read_namespaced_pod(pod, namespace), api)
        foreign = foreign_pod(doc, inputs)
        if foreign:
            raise GateError(foreign)
        seen["pod"] = doc
        return doc if (doc.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

    def stopped(after: float) -> str | None:
        if "pod" not in seen:
            return None
        hit = clock.decide(
            stop.pod_hits(pod_evidence(api, namespace, seen["pod"], profile, image_key)), after
        )
        return stop.stop_message(f"the wait for {what}", hit, after) if hit else None

    waiter = Waiter(timeout, interval, api=api, sleep=pod_change_pause(api, namespace, pod, seen))
    found: dict[str, Any] = waiter.until(what, done, lambda: _diagnose(api, ctx or Context()), stop=stopped)
    return found


def pod_change_pause(api: Any, namespace: str, pod: str, seen: dict[str, Any]) -> Callable[[float], None]:
    """A :class:`Waiter` pause that ends as soon as Pod ``namespace/pod`` changes, as ``kubectl
    wait`` does: a watch from the resourceVersion of the last read (``seen["pod"]``, JSON),
    bounded by the pause (seconds). A run-once Pod's end is seen when it happens, not at the
    next poll. Without a resourceVersion, or when the watch fails (an expired
    resourceVersion: 410, a dropped connection), it sleeps out the pause.
    """
    from kubernetes import client, watch
    from kubernetes.client.rest import ApiException
    from urllib3.exceptions import HTTPError

    core = client.CoreV1Api(api)

    def pause(seconds: float) -> None:
        rv = ((seen.get("pod") or {}).get("metadata") or {}).get("resourceVersion")
        if not rv:
            time.sleep(seconds)
            return
        w = watch.Watch()
        start = time.monotonic()
        try:
            for _change in w.stream(
                core.list_namespaced_pod,
                namespace,
                field_selector=f"metadata.name={pod}",
                resource_version=rv,
                timeout_seconds=max(1, math.ceil(seconds)),
                _request_timeout=(REQUEST_TIMEOUT[0], seconds),
                deserialize=False,
            ):
                break
        except (ApiException, HTTPError, ConnectionError):
            # The pause passed without a change (a read timeout), or the watch failed: the
            # rest of the pause is slept, never a tight loop of reads.
            time.sleep(max(0.0, seconds - (time.monotonic() - start)))
        finally:
            w.stop()

    return pause


def wait_succeeded(
    api: Any,
    what: str,
    namespace: str,
    pod: str,
    timeout: float,
    ctx: Context | None,
    interval: float = 2.0,
    image_key: str = "smokeImage",
    inputs: str | None = None,
) -> str:
    """Wait for a one-container run-once Pod's phase ``Succeeded`` (:func:`wait_finished`).

    Raises:
        GateError: phase ``Failed`` (with the log's last lines and the diagnosis) or timeout
            (with the diagnosis). ``what`` names the Pod's role, e.g. ``"smoke"``.
    """
    from kubernetes import client

    doc = wait_finished(api, namespace, pod, timeout, ctx, interval, image_key, inputs)
    phase = str((doc.get("status") or {}).get("phase"))
    if phase == "Failed":
        tail = pod_log(client.CoreV1Api(api), pod, namespace, tail_lines=20)
        raise GateError(
            f"{what} Pod {namespace}/{pod} failed; log tail:\n{tail}\n{_diagnose(api, ctx or Context())}"
        )
    return phase


def ping(api: Any, timeout: float = 5) -> PingResult:
    """The API server's version and ``kube-system``'s UID when the API server answers, is
    ready (``/readyz``: etcd answers it) and serves this cluster's data (Namespace
    ``kube-system`` read within ``timeout`` seconds); ``/version`` alone is answered without
    etcd, so it proves nothing about the cluster.

    Raises:
        GateError: what did not answer (the API server, or etcd as its readiness check says).
    """
    from kubernetes import client

    try:
        version = client.VersionApi(api).get_code(_request_timeout=timeout).git_version
        ready, _ = readiness(api, timeout)
    except Exception as exc:
        if not is_transient(exc) and not isinstance(exc, TimeoutError):
            raise
        raise GateError(unanswered(api, exc, timeout)) from exc
    if not ready:
        raise GateError(unanswered(api, None, timeout))
    return PingResult(kubernetes_version=version, kube_system_uid=kube_system_uid(api, timeout))


def node_names(api: Any, timeout: float = 5) -> list[str]:
    """The names of the cluster's Nodes (one list request within ``timeout`` seconds), sorted.

    Raises:
        GateError: no answer in time.
    """
    from kubernetes import client

    try:
        nodes = client.CoreV1Api(api).list_node(_request_timeout=(min(5, timeout), timeout)).items
    except Exception as exc:
        raise GateError(f"listing the Nodes failed: {_short(exc)}") from exc
    return sorted(str(n.metadata.name) for n in nodes if n.metadata and n.metadata.name)
