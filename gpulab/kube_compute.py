"""The compute check: a CUDA kernel ran on each of the lab's GPUs, read from the compute Pod.

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
(error code ...)!`` and exit 1 (the Pod's phase ``Failed``).

The compute Pod (components/compute.py) has one such container per GPU (``vectoradd-0``
...), each with one GPU; the containers of a Pod run at once and the kubelet's device
manager gives each its own devices, so N containers that passed are N distinct GPUs (whole
GPUs, no time-slicing). The check reads every container's log (``kubectl logs gpu-compute
-c vectoradd-<i>``) and requires ``Test PASSED`` in each; a failure names the container(s)
that failed, with their exit code, log tail and what their CUDA error means.

:func:`read_vectoradd_log` and :func:`failure_report` are pure; :func:`compute` talks to the
API server (``python -m gpulab.kube compute``, whose subcommand function in
:mod:`gpulab.kube` calls it).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
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


@dataclass(frozen=True)
class ContainerRun:
    """One vectorAdd container of the compute Pod, as the check read it.

    Attributes:
        name: the container's name (``vectoradd-0``); ``None`` for a Pod whose spec names no
            container (its log read without ``container=``).
        log: what its log says (:class:`VectorAddLog`).
        exit_code: its ``state.terminated.exitCode``; ``None`` when it has not terminated or
            the Pod's status does not say.
    """

    name: str | None
    log: VectorAddLog
    exit_code: int | None = None

    @property
    def passed(self) -> bool:
        """Its log has a ``Test PASSED`` line and it did not exit non-zero."""
        return self.log.passed and self.exit_code in (None, 0)


def read_vectoradd_log(log: str) -> VectorAddLog:
    """Read a vectorAdd container's log (text as ``kubectl logs -c <container>`` prints it)."""
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


def exit_codes(pod: dict[str, Any]) -> dict[str, int]:
    """Container name -> ``state.terminated.exitCode`` of a Pod (JSON, as ``kubectl get -o
    json``); containers that have not terminated are left out."""
    codes: dict[str, int] = {}
    for st in (pod.get("status") or {}).get("containerStatuses") or []:
        code = ((st.get("state") or {}).get("terminated") or {}).get("exitCode")
        if st.get("name") and isinstance(code, int):
            codes[str(st["name"])] = code
    return codes


def failure_report(runs: Sequence[ContainerRun]) -> str:
    """The containers that did not pass, each with its exit code, log tail and CUDA hint;
    ``""`` when every one passed. Starts ``"vectorAdd passed in K of N containers; failed:
    vectoradd-1"``."""
    failed = [r for r in runs if not r.passed]
    if not failed:
        return ""
    names = ", ".join(r.name or "(the container)" for r in failed)
    lines = [f"vectorAdd passed in {len(runs) - len(failed)} of {len(runs)} containers; failed: {names}"]
    for r in failed:
        code = f"exit code {r.exit_code}" if r.exit_code is not None else "exit code not reported"
        verdict = "" if r.log.passed else f"no {VECTORADD_PASSED!r} line, "
        name = r.name or "(the container)"
        lines.append(f"--- container {name} ({verdict}{code}); log tail:\n{r.log.tail}")
        if r.log.hint:
            lines.append(r.log.hint)
    return "\n".join(lines)


def compute(api: Any, namespace: str, pod: str, timeout: float, ctx: Context | None = None) -> dict[str, Any]:
    """Wait for the compute Pod's phase ``Succeeded``, then require ``Test PASSED`` in the log
    of each of its containers (the names its spec lists: one vectorAdd container per GPU).

    Args:
        api: a kubernetes ``ApiClient``; namespace, pod: the compute Pod; timeout: seconds to
            wait for a final phase; ctx: what the diagnosis of a failure names.

    Returns ``{"computePhase": "Succeeded", "computeResult": "passed", "computeGpus": int
    (containers that passed: all of them, one GPU each), "computeNode",
    "computeLogSimulated": bool (a log was the sim lab's), "measuredAt": UTC ISO 8601}``.

    Raises:
        gpulab.kube.GateError: the Pod failed (each failed container named with its exit
            code, log tail and what a CUDA error means; the diagnosis) or timed out (the
            diagnosis); or it succeeded but a container's log has no ``Test PASSED`` line
            (those containers, their log tails, the diagnosis).
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    from gpulab import kube
    from gpulab.kube_diagnose import diagnosis

    core = client.CoreV1Api(api)

    def read_pod() -> dict[str, Any]:
        doc: dict[str, Any] = kube.sanitize(core.read_namespaced_pod(pod, namespace), api)
        return doc

    def diag() -> str:
        return diagnosis(api, ctx or Context())

    def log_of(container: str | None) -> VectorAddLog:
        try:
            if container is None:
                text = core.read_namespaced_pod_log(pod, namespace)
            else:
                text = core.read_namespaced_pod_log(pod, namespace, container=container)
            return read_vectoradd_log(text or "")
        except ApiException as exc:
            if kube.is_transient(exc):
                raise
            # "no logs found for container": a kubelet (or kwok) that serves none for this Pod.
            return VectorAddLog(
                False, False, f"(no log: {exc.status} {exc.reason}: {exc.body})", _no_log_hint()
            )

    def _no_log_hint() -> str:
        annotations = (read_pod().get("metadata") or {}).get("annotations") or {}
        if annotations.get("gpulab.dev/simulated-execution") == "true":
            return (
                f"the simulated cluster serves no log for {pod}: it was made before the lab had a "
                "compute check; recreate it (make destroy && make lab)"
            )
        return (
            "the node served no log for the container: scripts/kubectl logs and scripts/kubectl describe pod "
            + pod
        )

    def runs_of(doc: dict[str, Any]) -> list[ContainerRun]:
        spec = doc.get("spec") or {}
        names: list[str | None] = [str(c["name"]) for c in spec.get("containers") or [] if c.get("name")]
        codes = exit_codes(doc)
        return [ContainerRun(n, log_of(n), codes.get(n) if n else None) for n in names or [None]]

    where = f"{namespace}/{pod}"
    # Not kube.wait_succeeded: a Failed Pod's log is read per container below (the API refuses
    # a log without ``container=`` once the Pod has two or more).
    doc = kube.wait_finished(api, namespace, pod, timeout, ctx)
    phase = str((doc.get("status") or {}).get("phase"))
    runs = runs_of(doc)
    report = failure_report(runs)
    if phase == "Failed":
        # Each container ran vectorAdd on its own GPU: name the ones that failed.
        raise kube.GateError(
            f"compute Pod {where} failed; log tail of each failed container:\n"
            + (report or "every container's log says Test PASSED, yet the Pod failed")
            + f"\n{diag()}"
        )
    if report:
        raise kube.GateError(
            f"compute Pod {where} succeeded but a container's log has no {VECTORADD_PASSED!r} line: "
            f"the vector sum was not verified on that GPU; {report}\n{diag()}"
        )
    return {
        "computePhase": phase,
        "computeResult": "passed",
        "computeGpus": len(runs),
        "computeNode": (doc.get("spec") or {}).get("nodeName"),
        "computeLogSimulated": any(r.log.simulated for r in runs),
        "measuredAt": datetime.now(UTC).isoformat(timespec="seconds"),
    }
