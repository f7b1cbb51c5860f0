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
manager gives each its own devices. Whether a container *sees* only its own is the node
runtime's doing, so each container first lists the GPUs it sees (``nvidia-smi -L``, then
vectorAdd: :data:`COMPUTE_SCRIPT`). The check reads every container's log (``kubectl logs
gpu-compute -c vectoradd-<i>``) and requires ``Test PASSED`` in each, and that each listed
exactly the one GPU (or MIG device) it was given, no two the same, all among the host's
(gpulab.kube.gpu_isolation); a failure names the container(s), with their exit code, log tail,
what their CUDA error means, or which GPUs they saw and why the runtime let them.

:func:`read_vectoradd_log` and :func:`failure_report` are pure; :func:`compute` talks to the
API server (``python -m gpulab.kube compute``, whose subcommand function in
:mod:`gpulab.kube` calls it).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from gpulab.core import fixes
from gpulab.core.names import (
    COMPUTE_POD,
    DEFAULT_PROFILE,
    DEVICE_LIST_STRATEGY_ENV,
    DEVICE_PLUGIN_DS,
    OPERATOR_NAMESPACE,
    VECTORADD_BINARY,
    VECTORADD_PASSED,
    WORKLOAD_NAMESPACE,
)
from gpulab.core.rawapi import pod_log
from gpulab.diagnose.live import Context, diagnosis
from gpulab.kube import gpu_isolation, smoke_gpus
from gpulab.kube.client import GateError, is_transient, pod_times, sanitize, wait_finished
from gpulab.kube.results import ComputeResult

#: Each vectorAdd container's command: the GPUs it sees, then the sample (its exit code is the
#: container's). A constant: no configured value reaches the shell. ``;``, not ``&&``: a
#: container without ``nvidia-smi`` still runs vectorAdd, and the check names the missing
#: listing.
COMPUTE_SCRIPT: Final = f"nvidia-smi -L; exec {VECTORADD_BINARY}"
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
        gpus: the GPU UUIDs its ``nvidia-smi -L`` listed (``GPU-...``), in order.
        mig: the MIG device UUIDs it listed (``MIG-...``).
    """

    passed: bool
    simulated: bool
    tail: str
    hint: str
    gpus: tuple[str, ...] = ()
    mig: tuple[str, ...] = ()


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
        gpus=tuple(smoke_gpus.gpu_uuids(log) or ()),
        mig=tuple(smoke_gpus.mig_uuids(log) or ()),
    )


@dataclass(frozen=True)
class Isolation:
    """What each container was given, to compare with what it saw (gpulab.kube.gpu_isolation).

    Attributes:
        unit: ``gpu``, ``shared`` or ``mig``: what one container got.
        host: the host's GPU UUIDs; None when not known (then not compared).
        cluster: the variant (``minikube``, ...) the diagnosis names; None when not given.
        device_list: the device plugin's ``DEVICE_LIST_STRATEGY`` the lab set (None: the
            chart's choice).
        device_list_reason: why the variant's node runtime needs that strategy
            (``VariantSpec.device_list_reason``), quoted by the diagnosis; None when not given.
    """

    unit: str = gpu_isolation.UNIT_GPU
    host: tuple[str, ...] | None = None
    cluster: str | None = None
    device_list: str | None = None
    device_list_reason: str | None = None

    def report(self, runs: Sequence[ContainerRun]) -> str:
        """``""`` when every container saw exactly what it was given; else each problem, why
        the runtime let it happen and the first fix."""
        seen = [gpu_isolation.Seen(r.name or "(the container)", r.log.gpus, r.log.mig) for r in runs]
        found = gpu_isolation.problems(seen, self.unit, None if self.host is None else set(self.host))
        if not found:
            return ""
        lines = [
            "the containers did not each see exactly the GPU they were given:",
            *(f"- {p}" for p in found),
        ]
        if any(p.kind != gpu_isolation.NONE_LISTED for p in found):
            strategy = self.device_list or "the chart's (cdi-annotations,cdi-cri with cdi.enabled)"
            reason = self.device_list_reason if self.cluster else ""
            why = f" On {self.cluster}: {reason}." if reason else ""
            lines += [
                "A container that sees GPUs it was not given is the node's runtime injecting more than the "
                "device plugin allocated: it did not read the allocation the way the device plugin passed it "
                f"({DEVICE_LIST_STRATEGY_ENV}={strategy}) and fell back to the image's "
                f"NVIDIA_VISIBLE_DEVICES=all.{why}",
                f"first fix: scripts/kubectl -n {OPERATOR_NAMESPACE} get ds {DEVICE_PLUGIN_DS} -o "
                f"jsonpath='{{..env}}' (is {DEVICE_LIST_STRATEGY_ENV} one the node's runtime reads?) and "
                "the node runtime's nvidia-container-runtime config.toml "
                "(accept-nvidia-visible-devices-envvar-when-unprivileged, nvidia-container-runtime.mode); "
                f"then {fixes.REMEASURE}",
            ]
        if any(p.kind == gpu_isolation.NONE_LISTED for p in found):
            lines.append(
                "A container that lists no GPU ran nvidia-smi -L without the driver utilities (the image's "
                "NVIDIA_DRIVER_CAPABILITIES lacks utility, or computeImage is not NVIDIA's cuda-sample image "
                f"with {VECTORADD_BINARY}): which GPU it used is not known, so the check cannot pass; "
                "first fix: scripts/kubectl logs gpu-compute --all-containers --prefix, and keep "
                "computeImage a nvcr.io/nvidia/k8s/cuda-sample:vectoradd-* tag"
            )
        return "\n".join(lines)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``compute`` subcommand's options (the smoke subcommand's, for the compute Pod, and
    what :class:`Isolation` compares with)."""
    p.add_argument("--namespace", default=WORKLOAD_NAMESPACE)
    p.add_argument("--pod", default=COMPUTE_POD)
    p.add_argument("--timeout", type=float, default=300, help="seconds for the Pod to succeed")
    p.add_argument("--expected-gpus", type=int, help="host GPUs x time-slicing replicas")
    p.add_argument("--host-max-cuda", help="newest CUDA the host driver supports")
    p.add_argument("--profile", default=DEFAULT_PROFILE, help="minikube profile named in fixes")
    p.add_argument("--unit", choices=gpu_isolation.UNITS, default=gpu_isolation.UNIT_GPU)
    p.add_argument("--host-gpu-uuid", action="append", default=None, help="a host GPU UUID (repeatable)")
    p.add_argument("--cluster", help="the variant the diagnosis names")
    p.add_argument("--device-list-strategy", help="the device plugin's DEVICE_LIST_STRATEGY the lab set")
    p.add_argument("--device-list-reason", help="why the variant's node runtime needs that strategy")


def isolation_from_args(args: argparse.Namespace) -> Isolation:
    """:class:`Isolation` from the ``compute`` subcommand's parsed options."""
    host = tuple(args.host_gpu_uuid) if args.host_gpu_uuid else None
    return Isolation(args.unit, host, args.cluster, args.device_list_strategy, args.device_list_reason)


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


def compute(
    api: Any,
    namespace: str,
    pod: str,
    timeout: float,
    ctx: Context | None = None,
    isolation: Isolation | None = None,
    inputs: str | None = None,
) -> ComputeResult:
    """Wait for the compute Pod's phase ``Succeeded``, then require ``Test PASSED`` in the log
    of each of its containers (the names its spec lists: one vectorAdd container per GPU), and
    that each listed exactly what it was given (``isolation``; default one whole GPU each,
    the host's UUIDs not known).

    Args:
        api: a kubernetes ``ApiClient``; namespace, pod: the compute Pod; timeout: seconds to
            wait for a final phase; ctx: what the diagnosis of a failure names; inputs: the
            check-inputs digest the Pod must carry (gpulab.kube.client.foreign_pod).

    Returns the :class:`~gpulab.kube.results.ComputeResult`: phase ``Succeeded``, result
    ``passed``, ``compute_gpus`` (containers that passed: all of them, one GPU each),
    ``compute_gpu_uuids`` ``{container: {"gpus": [UUID], "mig": [UUID]}}`` (what each listed),
    the node, whether a log was the sim lab's, and when the Pod's containers started and
    finished (UTC ISO 8601, gpulab.kube.client.pod_times).

    Raises:
        gpulab.kube.client.GateError: the Pod failed (each failed container named with its exit
            code, log tail and what a CUDA error means; the diagnosis) or timed out (the
            diagnosis); or it succeeded but a container's log has no ``Test PASSED`` line
            (those containers, their log tails, the diagnosis); or a container listed no GPU,
            more than it was given, one another container also saw, or one the host does
            not have (:meth:`Isolation.report`, the diagnosis).
    """
    # Not wait_succeeded: a Failed Pod's log is read per container below (the API refuses
    # a log without ``container=`` once the Pod has two or more).
    doc = wait_finished(api, namespace, pod, timeout, ctx, image_key="computeImage", inputs=inputs)
    phase = str((doc.get("status") or {}).get("phase"))
    runs = container_runs(api, namespace, pod, doc)
    judge(
        f"{namespace}/{pod}", phase, runs, isolation or Isolation(), lambda: diagnosis(api, ctx or Context())
    )
    seen = [gpu_isolation.Seen(r.name or "(the container)", r.log.gpus, r.log.mig) for r in runs]
    started, finished = pod_times(doc)
    return ComputeResult(
        compute_phase=phase,
        compute_result="passed",
        compute_gpus=len(runs),
        compute_gpu_uuids=gpu_isolation.to_outputs(seen),
        compute_node=(doc.get("spec") or {}).get("nodeName"),
        compute_log_simulated=any(r.log.simulated for r in runs),
        compute_started_at=started,
        measured_at=finished or datetime.now(UTC).isoformat(timespec="seconds"),
    )


def container_runs(api: Any, namespace: str, pod: str, doc: dict[str, Any]) -> list[ContainerRun]:
    """Each container of the finished Pod ``doc`` (JSON) with its log read and its exit code;
    one unnamed run for a Pod whose spec names no container.

    Raises:
        kubernetes.client.rest.ApiException: a transient error reading a log (a log the node
            does not serve is a run without ``Test PASSED``, saying why).
    """
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api)

    def no_log_hint() -> str:
        pod_doc = sanitize(core.read_namespaced_pod(pod, namespace), api)
        annotations = (pod_doc.get("metadata") or {}).get("annotations") or {}
        if annotations.get("gpulab.dev/simulated-execution") == "true":
            return (
                f"the simulated cluster serves no log for {pod}: it was made before the lab had a "
                "compute check; recreate it (make destroy && make lab)"
            )
        return (
            "the node served no log for the container: scripts/kubectl logs and scripts/kubectl describe pod "
            + pod
        )

    def log_of(container: str | None) -> VectorAddLog:
        try:
            text = pod_log(core, pod, namespace, **({} if container is None else {"container": container}))
            return read_vectoradd_log(text)
        except ApiException as exc:
            if is_transient(exc):
                raise
            # "no logs found for container": a kubelet (or kwok) that serves none for this Pod.
            return VectorAddLog(
                False, False, f"(no log: {exc.status} {exc.reason}: {exc.body})", no_log_hint()
            )

    spec = doc.get("spec") or {}
    names: list[str | None] = [str(c["name"]) for c in spec.get("containers") or [] if c.get("name")]
    codes = exit_codes(doc)
    return [ContainerRun(n, log_of(n), codes.get(n) if n else None) for n in names or [None]]


def judge(
    where: str, phase: str, runs: Sequence[ContainerRun], isolation: Isolation, diag: Callable[[], str]
) -> None:
    """Pass the Pod ``where`` (``namespace/name``) that ended in ``phase`` with these ``runs``,
    or raise naming why; ``diag()`` is the cluster's diagnosis, read only on a failure.

    Raises:
        gpulab.kube.client.GateError: as :func:`compute`.
    """
    report = failure_report(runs)
    leaked = isolation.report(runs)
    if phase == "Failed":
        # Each container ran vectorAdd on its own GPU: name the ones that failed.
        raise GateError(
            f"compute Pod {where} failed; log tail of each failed container:\n"
            + (report or "every container's log says Test PASSED, yet the Pod failed")
            + (f"\nand {leaked}" if leaked else "")
            + f"\n{diag()}"
        )
    if report:
        raise GateError(
            f"compute Pod {where} succeeded but a container's log has no {VECTORADD_PASSED!r} line: "
            f"the vector sum was not verified on that GPU; {report}\n{diag()}"
        )
    if leaked:
        raise GateError(f"compute Pod {where} succeeded, but {leaked}\n{diag()}")
