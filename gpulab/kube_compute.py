"""The compute check: a CUDA kernel ran on the lab's GPU, read from the compute Pod.

``nvidia-smi`` (the smoke check) needs only the control device (``/dev/nvidiactl``,
``/dev/nvidia0``) and the driver's management library (``libnvidia-ml``). A CUDA program
needs more of what the node's runtime injects: the unified-memory device
``/dev/nvidia-uvm``, the CUDA driver library ``libcuda`` and a kernel launch that the
driver accepts. NVIDIA's vectorAdd sample (``nvcr.io/nvidia/k8s/cuda-sample``, the image of
the GPU Operator docs' "Verification: Running Sample GPU Applications") copies two vectors
to the GPU, adds them there, copies the sum back, checks it on the CPU and prints::

    [Vector addition of 50000 elements]
    Copy input data from the host memory to the CUDA device
    CUDA kernel launch with 196 blocks of 256 threads
    Copy output data from the CUDA device to the host memory
    Test PASSED
    Done

(the example output of NVIDIA's docs). A CUDA error makes it print ``Failed to ...
(error code ...)!`` and exit 1 (phase ``Failed``).

:func:`read_vectoradd_log` is pure; :func:`compute` talks to the API server (``python -m
gpulab.kube compute``, whose subcommand function in :mod:`gpulab.kube` calls it).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from gpulab import fixes
from gpulab.kube_diagnose import Context
from gpulab.names import COMPUTE_POD, DEFAULT_PROFILE, VECTORADD_PASSED, WORKLOAD_NAMESPACE

#: Lines of the log quoted when the check fails.
TAIL_LINES: Final = 20
#: A simulated log's first line says so (variants/sim/ctl/render.py ``LOG_BANNER``).
SIMULATED_MARK: Final = "gpu-lab simulated"

#: vectorAdd's CUDA error texts (``cudaGetErrorString``) -> what they mean for the lab, first fix.
_HINTS: Final[tuple[tuple[str, str], ...]] = (
    (
        "driver version is insufficient",
        "the image's CUDA is newer than the host driver supports: set computeImage to a tag "
        "built for CUDA <= the host's max CUDA (the baseline card), e.g. "
        "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda11.7.1-ubuntu20.04, or upgrade the driver",
    ),
    (
        "no CUDA-capable device",
        "the container sees no CUDA device: the runtime injected the control device but not "
        "/dev/nvidia-uvm or libcuda; " + fixes.toolkit(then=f"re-create the compute Pod: {fixes.REMEASURE}"),
    ),
)


@dataclass(frozen=True)
class VectorAddLog:
    """What a vectorAdd log says.

    Attributes:
        passed: a line reads exactly ``Test PASSED``.
        simulated: its first line marks it simulated (the sim lab's capture).
        tail: its last :data:`TAIL_LINES` lines (``""`` for an empty log).
        hint: the meaning and first fix of a CUDA error the log names (``""`` when none).
    """

    passed: bool
    simulated: bool
    tail: str
    hint: str


def read_vectoradd_log(log: str) -> VectorAddLog:
    """Read a vectorAdd Pod's log (text as ``kubectl logs`` prints it)."""
    lines = log.splitlines()
    hint = next((h for needle, h in _HINTS if needle in log), "")
    return VectorAddLog(
        passed=any(line.strip() == VECTORADD_PASSED for line in lines),
        simulated=bool(lines) and SIMULATED_MARK in lines[0],
        tail="\n".join(lines[-TAIL_LINES:]),
        hint=hint,
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``compute`` subcommand's options (the smoke subcommand's, for the compute Pod)."""
    p.add_argument("--namespace", default=WORKLOAD_NAMESPACE)
    p.add_argument("--pod", default=COMPUTE_POD)
    p.add_argument("--timeout", type=float, default=300, help="seconds for the Pod to succeed")
    p.add_argument("--expected-gpus", type=int, help="host GPUs x time-slicing replicas")
    p.add_argument("--host-max-cuda", help="newest CUDA the host driver supports")
    p.add_argument("--profile", default=DEFAULT_PROFILE, help="minikube profile named in fixes")


def compute(api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None = None) -> dict[str, Any]:
    """Wait for the compute Pod's phase ``Succeeded``, then require ``Test PASSED`` in its log.

    Returns ``{"computePhase": "Succeeded", "computeResult": "passed", "computeNode",
    "computeLogSimulated": bool, "measuredAt": UTC ISO 8601}``.

    Raises:
        gpulab.kube.GateError: the Pod failed (its log tail, what a CUDA error means, the
            diagnosis) or timed out (the diagnosis); or it succeeded but its log has no
            ``Test PASSED`` line (the log tail and the diagnosis).
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from gpulab import kube
    from gpulab.kube_diagnose import diagnosis

    core = client.CoreV1Api(api)

    def log_of() -> VectorAddLog:
        try:
            return read_vectoradd_log(core.read_namespaced_pod_log(pod, namespace) or "")
        except ApiException as exc:
            if kube.is_transient(exc):
                raise
            # "no logs found for container": a kubelet (or kwok) that serves none for this Pod.
            return VectorAddLog(
                False, False, f"(no log: {exc.status} {exc.reason}: {exc.body})", _no_log_hint()
            )

    def _no_log_hint() -> str:
        doc = kube.sanitize(core.read_namespaced_pod(pod, namespace), api)
        annotations = (doc.get("metadata") or {}).get("annotations") or {}
        if annotations.get("gpulab.dev/simulated-execution") == "true":
            return (
                f"the simulated cluster serves no log for {pod}: it was made before the lab had a "
                "compute check; recreate it (make destroy && make lab)"
            )
        return (
            "the node served no log for the container: scripts/kubectl logs and scripts/kubectl describe pod "
            + pod
        )

    try:
        phase = kube.wait_succeeded(api, "compute", namespace, pod, timeout, ctx)
    except kube.GateError as exc:
        # A Failed Pod's message quotes the log already; add what its CUDA error means.
        hint = log_of().hint if "failed; log tail" in str(exc) else ""
        raise kube.GateError(f"{exc}\n{hint}" if hint else str(exc)) from exc
    read = log_of()
    if not read.passed:
        raise kube.GateError(
            f"compute Pod {namespace}/{pod} succeeded but its log has no {VECTORADD_PASSED!r} line: "
            f"the vector sum was not verified; log tail:\n{read.tail}\n"
            + (f"{read.hint}\n" if read.hint else "")
            + diagnosis(api, ctx or Context())
        )
    spec = kube.sanitize(core.read_namespaced_pod(pod, namespace), api).get("spec") or {}
    return {
        "computePhase": phase,
        "computeResult": "passed",
        "computeNode": spec.get("nodeName"),
        "computeLogSimulated": read.simulated,
        "measuredAt": datetime.now(UTC).isoformat(timespec="seconds"),
    }
