"""The TFLOPS benchmark Pod's reader: the JSON result on the last line of its log."""

from __future__ import annotations

import json
from typing import Any

from gpulab.core.rawapi import pod_log
from gpulab.diagnose.live import Context
from gpulab.kube.client import GateError, wait_succeeded
from gpulab.kube.results import BenchmarkResult, CheckResultError


def benchmark(
    api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None = None, inputs: str | None = None
) -> BenchmarkResult:
    """Wait for the benchmark Pod to succeed; return the JSON object on its log's last line.

    Raises:
        GateError: the Pod failed or timed out (with the diagnosis), or its log ends with
            no JSON object (quoting the last line), or one whose results are not of their shape.
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    wait_succeeded(
        api, "benchmark", namespace, pod, timeout, ctx, interval=5, image_key="benchmarkImage", inputs=inputs
    )
    lines = [ln for ln in pod_log(core, pod, namespace).splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    try:
        result = json.loads(last)
    except ValueError as exc:
        raise GateError(f"benchmark Pod {namespace}/{pod}: last log line is not JSON: {last!r}") from exc
    if not isinstance(result, dict):
        raise GateError(f"benchmark Pod {namespace}/{pod}: last log line is not a JSON object: {last!r}")
    try:
        return BenchmarkResult.from_json(result)
    except CheckResultError as exc:
        raise GateError(f"benchmark Pod {namespace}/{pod}: {exc}") from exc
