"""Cluster-side checks the lab runs as commands: the readiness gate, the smoke and compute checks.

Run as ``python -m gpulab.kube gate ...`` / ``python -m gpulab.kube smoke ...`` by the
components (as ``pulumi_command.local.Command`` resources, components/command.py). The kubeconfig arrives
as YAML text in the ``GPULAB_KUBECONFIG`` environment variable (a secret; never argv).
Each prints one JSON object on stdout (the facts the stack exports; ``gate`` and ``smoke`` with
``measuredAt``, UTC ISO 8601, when they were read) and exits 0, or prints a diagnosis on stderr and exits 1.

Talks to the API server through the official ``kubernetes`` Python client.

* ``gate`` (:mod:`gpulab.gate`): waits until ClusterPolicy ``cluster-policy`` reports
  ``status.state == ready``, the device-plugin DaemonSet has every desired pod ready and the
  nodes advertise the expected ``nvidia.com/gpu`` (or, under MIG ``mixed``, the
  ``nvidia.com/mig-*`` resources); fails early, with the diagnosis, when the state says
  waiting will not help (:mod:`gpulab.gate_rules`).
* ``smoke``: waits for the smoke Pod's phase ``Succeeded`` (a Pod has no ``complete``
  condition, which is why the chapter's ``kubectl wait --for=condition=complete`` never
  returns), then reads its log (driver and CUDA versions parsed from the nvidia-smi
  header, the GPU UUIDs from its ``nvidia-smi -L`` lines: :mod:`gpulab.smoke_gpus`) and its events.
* ``compute``: each vectorAdd container of the compute Pod (one GPU each) logs ``Test PASSED``
  (:mod:`gpulab.kube_compute`).
* ``dcgm``: what the DCGM exporter reports per GPU, sampled a few seconds (:mod:`gpulab.kube_dcgm`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from gpulab import kube_compute, kube_dcgm
from gpulab.errors import GpuLabError
from gpulab.kube_diagnose import Context
from gpulab.kube_diagnose import diagnosis as _diagnose
from gpulab.names import (
    DEFAULT_PROFILE,
    DEVICE_PLUGIN_DS,
    GPU_RESOURCE,
    OPERATOR_NAMESPACE,
    SMOKE_POD,
    WHOLE_GPU_RESOURCES,
    WORKLOAD_NAMESPACE,
)

KUBECONFIG_ENV = "GPULAB_KUBECONFIG"
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
        cfg = yaml.safe_load(text)
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
    request = api.param_serialize(
        "GET", "/readyz", query_params=[("verbose", "true")], auth_settings=["BearerToken"]
    )
    response = api.call_api(*request, _request_timeout=timeout)
    body = response.read()
    if 200 <= response.status < 300:
        return True, []
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body or "")
    failed = [line[3:].split(" failed", 1)[0].strip() for line in text.splitlines() if line.startswith("[-]")]
    return False, failed or [f"HTTP {response.status}"]


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
    import re

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
    gpulab.identity), read within ``timeout`` seconds.

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


def check_identity(api: Any, kubeconfig: str, env: dict[str, str] | None = None) -> None:
    """Stop unless the cluster is the one the stack recorded (``$GPULAB_CLUSTER_IDENTITY``, else
    the identity embedded in ``kubeconfig``: gpulab.identity.embed; nothing to compare when
    neither is there).

    Raises:
        GateError: another cluster (both named), or no answer (the component named).
    """
    from gpulab import identity

    try:
        recorded = identity.recorded_from_env(env, kubeconfig)
        if recorded is None:
            return
        identity.verify(recorded, identity.read(kubeconfig, api), identity.mismatch_fix(recorded.stack))
    except identity.IdentityError as exc:
        raise GateError(str(exc)) from exc


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

    def until(self, what: str, check: Callable[[], Any], diagnose: Callable[[], str]) -> Any:
        """The first non-None ``check()``; progress lines on stderr (streamed into Pulumi's
        display by the command layer): when the wait starts, every :attr:`progress_every`
        seconds, and when it ends.

        Raises:
            GateError: ``timeout`` seconds passed (the message is ``diagnose()``), or the API
                server did not answer for :attr:`unavailable_limit` seconds in a row (the
                message names what did not answer).
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
            if now >= next_note:
                print(f"[gpulab] still waiting for {what} ({now - start:.0f}s)", file=sys.stderr, flush=True)
                next_note = now + self.progress_every
            if now >= deadline:
                raise GateError(f"timed out after {self.timeout:.0f}s waiting for {what}:\n{diagnose()}")
            self.sleep(pause)
            pause = min(pause * 2, self.interval)


def wait_finished(
    api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None, interval: float = 2.0
) -> dict[str, Any]:
    """Wait for a run-once Pod's final phase, ``Succeeded`` or ``Failed`` (a Pod has no
    ``complete`` condition), and return the Pod as JSON (``kubectl get -o json``).

    Raises:
        GateError: timeout (with the diagnosis).
    """
    from kubernetes import client

    core = client.CoreV1Api(api)

    def done() -> dict[str, Any] | None:
        doc: dict[str, Any] = sanitize(core.read_namespaced_pod(pod, namespace), api)
        return doc if (doc.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

    found: dict[str, Any] = Waiter(timeout, interval, api=api).until(
        f"Pod {namespace}/{pod} to reach phase Succeeded", done, lambda: _diagnose(api, ctx or Context())
    )
    return found


def wait_succeeded(
    api: Any, what: str, namespace: str, pod: str, timeout: float, ctx: Context | None, interval: float = 2.0
) -> str:
    """Wait for a one-container run-once Pod's phase ``Succeeded`` (:func:`wait_finished`).

    Raises:
        GateError: phase ``Failed`` (with the log's last lines and the diagnosis) or timeout
            (with the diagnosis). ``what`` names the Pod's role, e.g. ``"smoke"``.
    """
    from kubernetes import client

    doc = wait_finished(api, namespace, pod, timeout, ctx, interval)
    phase = str((doc.get("status") or {}).get("phase"))
    if phase == "Failed":
        tail = client.CoreV1Api(api).read_namespaced_pod_log(pod, namespace, tail_lines=20)
        raise GateError(
            f"{what} Pod {namespace}/{pod} failed; log tail:\n{tail}\n{_diagnose(api, ctx or Context())}"
        )
    return phase


def smoke(api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None = None) -> dict[str, Any]:
    """Wait for the smoke Pod to reach ``Succeeded``; return phase, log facts and events.

    Raises:
        GateError: the Pod failed or timed out (with the diagnosis), or its log has no
            nvidia-smi header the parser knows (quoting the line).
    """
    from kubernetes import client

    from gpulab import nvsmi, smoke_gpus

    core = client.CoreV1Api(api)
    phase = wait_succeeded(api, "smoke", namespace, pod, timeout, ctx)
    p = sanitize(core.read_namespaced_pod(pod, namespace), api)
    log = core.read_namespaced_pod_log(pod, namespace)
    try:
        header = nvsmi.parse_header(log)
    except nvsmi.NvidiaSmiParseError as exc:
        raise GateError(f"smoke Pod {namespace}/{pod} log: {exc}") from exc
    # This Pod's events only: after a replacement (make verify) the old Pod of the same name
    # left its own (e.g. its kill), which must not read as the new Pod's.
    uid = (p.get("metadata") or {}).get("uid")
    selector = f"involvedObject.name={pod},involvedObject.kind=Pod"
    events = [
        sanitize(e, api)
        for e in core.list_namespaced_event(
            namespace, field_selector=selector + (f",involvedObject.uid={uid}" if uid else "")
        ).items
    ]
    reasons: list[str] = []

    def order(e: dict[str, Any]) -> tuple[str, int]:
        # Timestamps have one-second resolution; the resourceVersion breaks ties in write order.
        rv = str((e.get("metadata") or {}).get("resourceVersion") or "0")
        return str(e.get("firstTimestamp") or e.get("eventTime") or ""), int(rv) if rv.isdigit() else 0

    for e in sorted(events, key=order):
        if e.get("reason") and e["reason"] not in reasons:
            reasons.append(e["reason"])
    return {
        "smokePhase": phase,
        "smokeDriverVersion": header.driver_version,
        "smokeCudaVersion": header.cuda_version,
        "smokeEvents": reasons,
        "smokeNode": (p.get("spec") or {}).get("nodeName"),
        "smokeGpuUuids": smoke_gpus.gpu_uuids(log),
        "smokeLogSimulated": "gpu-lab simulated" in log.splitlines()[0] if log else False,
        "measuredAt": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def benchmark(
    api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None = None
) -> dict[str, Any]:
    """Wait for the benchmark Pod to succeed; return the JSON object on its log's last line.

    Raises:
        GateError: the Pod failed or timed out (with the diagnosis), or its log ends with
            no JSON object (quoting the last line).
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    wait_succeeded(api, "benchmark", namespace, pod, timeout, ctx, interval=5)
    lines = [ln for ln in core.read_namespaced_pod_log(pod, namespace).splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    try:
        result = json.loads(last)
    except ValueError as exc:
        raise GateError(f"benchmark Pod {namespace}/{pod}: last log line is not JSON: {last!r}") from exc
    if not isinstance(result, dict):
        raise GateError(f"benchmark Pod {namespace}/{pod}: last log line is not a JSON object: {last!r}")
    return result


def ping(api: Any, timeout: float = 5) -> dict[str, Any]:
    """``{"kubernetesVersion": ..., "kubeSystemUid": ...}`` when the API server answers, is
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
    return {"kubernetesVersion": version, "kubeSystemUid": kube_system_uid(api, timeout)}


def simulate_clusterpolicy(api: Any, state: str, timeout: float = 120) -> dict[str, Any]:
    """Simulated lab only: write ClusterPolicy ``cluster-policy`` ``status.state``.

    No operator process runs against the simulated control plane, so nothing else would
    ever set the status. The object is annotated ``gpulab.dev/simulated-status: "true"``
    and the status carries a condition saying it was simulated.

    Raises:
        GateError: the ClusterPolicy does not appear within ``timeout`` seconds.
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    custom = client.CustomObjectsApi(api)
    args = ("nvidia.com", "v1", "clusterpolicies", "cluster-policy")

    def exists() -> bool | None:
        try:
            custom.get_cluster_custom_object(*args)
            return True
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    Waiter(timeout).until("ClusterPolicy cluster-policy to exist", exists, lambda: "no ClusterPolicy")
    custom.patch_cluster_custom_object(
        *args, {"metadata": {"annotations": {"gpulab.dev/simulated-status": "true"}}}
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {
        "status": {
            "state": state,
            "namespace": OPERATOR_NAMESPACE,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if state == "ready" else "False",
                    "reason": "Simulated",
                    "message": "simulated by gpu-lab: no operator process runs in the simulated lab",
                    "lastTransitionTime": now,
                }
            ],
        }
    }
    custom.patch_cluster_custom_object_status(*args, status)
    return {"clusterPolicyState": state, "simulated": True}


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``gate`` or ``smoke``; prints JSON facts, or the diagnosis and exit 1."""
    ap = argparse.ArgumentParser(prog="python -m gpulab.kube")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gate", help="wait for the GPU Operator and read allocatable")
    g.add_argument("--namespace", default=OPERATOR_NAMESPACE)
    g.add_argument("--device-plugin-namespace", default=OPERATOR_NAMESPACE)
    g.add_argument("--device-plugin-daemonset", default=DEVICE_PLUGIN_DS)
    g.add_argument("--no-cluster-policy", action="store_true", help="skip the ClusterPolicy wait")
    g.add_argument("--timeout", type=float, default=600)
    g.add_argument("--grace", type=float, default=60, help="seconds a stuck state may last (gpuGraceSeconds)")
    g.add_argument("--mig-strategy", choices=("none", "single", "mixed"), default="none")
    g.add_argument("--expected-mig", action="append", default=[], help="mixed: PROFILE=COUNT (repeatable)")
    s = sub.add_parser("smoke", help="wait for the smoke Pod and read its log and events")
    s.add_argument("--namespace", default=WORKLOAD_NAMESPACE)
    s.add_argument("--pod", default=SMOKE_POD)
    s.add_argument("--timeout", type=float, default=300)
    for sp in (g, s):
        sp.add_argument("--expected-gpus", type=int, help="host GPUs x time-slicing replicas")
        sp.add_argument("--host-max-cuda", help="newest CUDA the host driver supports")
        sp.add_argument("--profile", default=DEFAULT_PROFILE, help="minikube profile named in fixes")
    b = sub.add_parser("benchmark", help="wait for the TFLOPS benchmark Pod and read its result")
    b.add_argument("--namespace", default="default")
    b.add_argument("--pod", default="gpu-benchmark")
    b.add_argument("--timeout", type=float, default=1800)
    sub.add_parser(
        "ping",
        help="exit 0 when the API server answers and is ready, and is the recorded cluster, within 5 s each",
    )
    cp = sub.add_parser("compute", help="wait for the compute Pod, check its log")
    kube_compute.add_arguments(cp)
    for sp in (g, s, cp):
        sp.add_argument(
            "--gpu-resource",
            choices=WHOLE_GPU_RESOURCES,
            default=GPU_RESOURCE,
            help="the whole-GPU resource counted (nvidia.com/gpu.shared: time-slicing's rename)",
        )
    kube_dcgm.add_arguments(sub.add_parser("dcgm", help="sample the DCGM exporter's metrics per GPU"))
    c = sub.add_parser("simulate-clusterpolicy", help="sim lab: set ClusterPolicy status")
    c.add_argument("--state", default="ready")
    args = ap.parse_args(argv)
    try:
        api = load_clients()
        # Every check first proves the cluster is the one the stack recorded at create.
        check_identity(api, os.environ.get(KUBECONFIG_ENV, ""))
        if args.cmd == "ping":
            out = ping(api)
        elif args.cmd == "simulate-clusterpolicy":
            out = simulate_clusterpolicy(api, args.state)
        elif args.cmd == "benchmark":
            out = benchmark(api, args.namespace, args.pod, args.timeout)
        elif args.cmd == "dcgm":
            out = kube_dcgm.from_args(api, args)
        elif args.cmd == "compute":
            ctx = Context(
                args.expected_gpus, args.host_max_cuda, args.profile, gpu_resource=args.gpu_resource
            )
            out = compute(
                api, args.namespace, args.pod, args.timeout, ctx, kube_compute.isolation_from_args(args)
            )
        elif args.cmd == "gate":
            from gpulab import gate

            spec = gate.spec_from_args(args)
            out = gate.gate(api, spec, gate.context(spec, args.host_max_cuda))
        else:
            ctx = Context(
                args.expected_gpus, args.host_max_cuda, args.profile, gpu_resource=args.gpu_resource
            )
            out = smoke(api, args.namespace, args.pod, args.timeout, ctx)
    except GpuLabError as exc:
        # Not GateError: run as ``python -m gpulab.kube`` this module is ``__main__``, and the
        # GateError that gpulab.gate and gpulab.kube_compute raise is ``gpulab.kube``'s, another
        # class object; their common base (gpulab.errors) is one.
        print(str(exc), file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk (the client's key files), not a traceback
        from gpulab.errors import os_error_fix

        print(f"{exc}\n  fix: {os_error_fix(exc)}", file=sys.stderr)
        return 1
    print(json.dumps(out, sort_keys=True))
    return 0


def compute(
    api: Any,
    namespace: str,
    pod: str,
    timeout: float,
    ctx: Context | None = None,
    isolation: kube_compute.Isolation | None = None,
) -> dict[str, Any]:
    """``compute``: the compute Pod succeeded, its vectorAdd log says ``Test PASSED`` and each
    container saw only its own GPU (:func:`gpulab.kube_compute.compute`: the facts returned,
    the GateError raised)."""
    return kube_compute.compute(api, namespace, pod, timeout, ctx, isolation)


if __name__ == "__main__":
    sys.exit(main())
