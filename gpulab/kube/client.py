"""The API client and the waits every cluster-side check shares.

The kubeconfig arrives as YAML text in the ``GPULAB_KUBECONFIG`` environment variable (a
secret; never argv). :class:`Waiter` polls a check with backoff and progress lines, riding out
an API server that is briefly unavailable; a wait that fails raises :class:`GateError` whose
message is the live diagnosis (:mod:`gpulab.diagnose.live`). Talks to the API server through the
official ``kubernetes`` Python client.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from gpulab.core.errors import GpuLabError
from gpulab.diagnose.live import Context
from gpulab.diagnose.live import diagnosis as _diagnose

KUBECONFIG_ENV = "GPULAB_KUBECONFIG"


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
    return client.ApiClient(conf)


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

    def until(self, what: str, check: Callable[[], Any], diagnose: Callable[[], str]) -> Any:
        """The first non-None ``check()``; progress lines on stderr (streamed into Pulumi's
        display by the command layer): when the wait starts, every :attr:`progress_every`
        seconds, and when it ends.

        Raises:
            GateError: ``timeout`` seconds passed; the message is ``diagnose()``.
        """
        start = self.clock()
        deadline = start + self.timeout
        next_note = start + self.progress_every
        pause = min(self.first_interval, self.interval)
        print(f"[gpulab] waiting for {what} (up to {self.timeout:.0f}s)", file=sys.stderr, flush=True)
        while True:
            try:
                value = check()
            except Exception as exc:
                # The API server can drop connections for a while (e.g. k3s restarts when
                # the operator's toolkit reconfigures its containerd): keep waiting.
                if not is_transient(exc):
                    raise
                print(f"waiting for {what}: API server unavailable ({exc}); retrying", file=sys.stderr)
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

    found: dict[str, Any] = Waiter(timeout, interval).until(
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


def ping(api: Any, timeout: float = 5) -> dict[str, Any]:
    """``{"kubernetesVersion": ...}`` when the API server answers; GateError naming it if not."""
    from kubernetes import client

    try:
        version = client.VersionApi(api).get_code(_request_timeout=timeout).git_version
    except Exception as exc:
        if not is_transient(exc):
            raise
        raise GateError(f"the API server at {api.configuration.host} does not answer: {exc}") from exc
    return {"kubernetesVersion": version}
