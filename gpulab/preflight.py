"""Host preflight: pure checks over recorded command output, each returning a :class:`Finding`.

Nothing here runs a command. The caller runs the command (or replays a capture), passes its
exit code and output in, and gets back a :class:`Finding`; checks never raise on bad input,
they report it. :func:`raise_on_failures` turns the failed findings into one
:class:`PreflightError` that lists every cause with its first fix.

Exit codes: ``returncode=None`` means the binary was not found on ``PATH``. A non-zero exit
code is examined before any output is parsed, so an error message is never read as data.

Check ids (:attr:`Finding.check`) are stable kebab-case names, the module constants
``CHECK_*`` below. A preflight :class:`Finding` is the lab's one finding record
(:class:`gpulab.findings.Finding`) made with the preflight's arguments; the first fixes come
from :mod:`gpulab.fixes`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Final

from gpulab import findings, fixes, nvsmi
from gpulab.errors import GpuLabError
from gpulab.names import MIN_CPUS, MIN_MEMORY_MIB

__all__ = [
    "CHECK_DOCKER_GPU_SELFTEST",
    "CHECK_DOCKER_RUNTIME",
    "CHECK_HOST_RESOURCES",
    "CHECK_MINIKUBE_VERSION",
    "CHECK_NVIDIA_SMI",
    "MIN_CPUS",
    "MIN_MEMORY_MIB",
    "MIN_MINIKUBE",
    "Finding",
    "PreflightError",
    "check_docker_gpu_selftest",
    "check_docker_info",
    "check_minikube_version",
    "check_nvidia_smi",
    "check_resources",
    "raise_on_failures",
    "report",
]

CHECK_NVIDIA_SMI: Final = "nvidia-smi"
CHECK_DOCKER_RUNTIME: Final = "docker-nvidia-runtime"
CHECK_HOST_RESOURCES: Final = "host-resources"
CHECK_MINIKUBE_VERSION: Final = "minikube-version"
CHECK_DOCKER_GPU_SELFTEST: Final = "docker-gpu-selftest"

#: Oldest minikube the GPU lab runs on: v1.37.0. ``--gpus`` exists from v1.32.0, but the
#: operator's operands ask for ``runtimeClassName: nvidia`` and only a cri-dockerd >= v0.4.0
#: (minikube >= v1.36.0) starts such a Pod; v1.37.0 is the first of those that supports the
#: lab's default Kubernetes v1.34.0. The sources per release: variants/minikube/releases.py.
MIN_MINIKUBE: Final[tuple[int, int, int]] = (1, 37, 0)


class Finding(findings.Finding):
    """Result of one preflight check: the lab's finding record, made as
    ``Finding(check, ok, message, fix="")``.

    ``check`` is a stable kebab-case id (``CHECK_*``, the record's ``id``); ``ok`` whether the
    host passes (status ``pass`` or ``fail``); ``message`` what was found (the cause, on
    failure; the record's ``observed``); ``fix`` the first thing to try, ``""`` when ``ok``.
    The record's other fields keep their defaults. ``dataclasses.replace`` does not apply
    (it would call this constructor with the record's field names); build a new one.
    """

    def __init__(self, check: str, ok: bool, message: str, fix: str = "") -> None:
        super().__init__(check, findings.Status.PASS if ok else findings.Status.FAIL, message, fix=fix)


class PreflightError(GpuLabError, RuntimeError):
    """One or more preflight checks failed; the message lists each cause and its first fix.

    ``failures`` holds the failed findings in the order given.
    """

    def __init__(self, failures: Sequence[findings.Finding]) -> None:
        self.failures: tuple[findings.Finding, ...] = tuple(failures)
        lines = [f"{len(self.failures)} preflight check(s) failed:"]
        lines += [f"- {f.check}: {f.message}\n  fix: {f.fix}" for f in self.failures]
        super().__init__("\n".join(lines))


def raise_on_failures(found: Iterable[findings.Finding]) -> None:
    """Raise :class:`PreflightError` listing every failed finding; return when all passed."""
    failures = [f for f in found if not f.ok]
    if failures:
        raise PreflightError(failures)


def report(found: Sequence[findings.Finding]) -> tuple[list[dict[str, object]], int]:
    """What a ``preflight`` subcommand prints and exits with: a JSON list with one object per
    finding (``check``, ``ok``, ``message``, ``fix``), and 0 when all passed, else 1."""
    doc: list[dict[str, object]] = [
        {"check": f.check, "ok": f.ok, "message": f.message, "fix": f.fix} for f in found
    ]
    return doc, 0 if all(f.ok for f in found) else 1


def _quote(text: str, limit: int = 200) -> str:
    """First non-empty line of ``text``, shortened, for a message; ``"(no output)"`` if none."""
    for line in text.splitlines():
        if line.strip():
            line = line.strip()
            return repr(line if len(line) <= limit else line[: limit - 3] + "...")
    return "(no output)"


def _fail(check: str, message: str, fix: str) -> Finding:
    return Finding(check=check, ok=False, message=message, fix=fix)


# --- nvidia-smi -------------------------------------------------------------------------


def _nvidia_smi_error(check: str, returncode: int, output: str) -> Finding:
    """Classify a failed ``nvidia-smi`` run (shared by the host check and the self-test)."""
    lowered = output.lower()
    if "couldn't communicate with the nvidia driver" in lowered:
        return _fail(
            check,
            f"nvidia-smi exited {returncode}: the NVIDIA kernel driver is not loaded ({_quote(output)})",
            "load the driver (sudo modprobe nvidia) or reboot into the kernel the driver was "
            "built for; check dmesg | grep -i nvrm",
        )
    if "driver/library version mismatch" in lowered:
        return _fail(
            check,
            f"nvidia-smi exited {returncode}: the loaded kernel module and the user-space "
            f"driver differ, usually after a driver upgrade ({_quote(output)})",
            "reboot, or unload and reload the nvidia kernel modules",
        )
    if "no devices were found" in lowered:
        return _fail(
            check,
            f"nvidia-smi exited {returncode}: the driver sees no GPU ({_quote(output)})",
            "check the GPU is attached (lspci | grep -i nvidia) and, in a VM, passed through",
        )
    return _fail(
        check,
        f"nvidia-smi exited {returncode}: {_quote(output)}",
        "run nvidia-smi by hand and fix what it reports",
    )


def check_nvidia_smi(returncode: int | None, stdout: str, stderr: str) -> Finding:
    """Check that plain ``nvidia-smi`` runs on the host.

    ``returncode`` ``None`` means the binary is not on ``PATH``; the lab never installs the
    driver (the operator runs with ``driver.enabled=false``). A non-zero exit is classified
    from its output (driver not loaded, exit 9 ``NVIDIA-SMI has failed because it couldn't
    communicate with the NVIDIA driver``; version mismatch; no devices) and never parsed as a
    table. On exit 0 the message carries the header's driver and CUDA versions when
    :func:`gpulab.nvsmi.parse_header` can read them.
    """
    if returncode is None:
        return _fail(
            CHECK_NVIDIA_SMI,
            "nvidia-smi not found on PATH",
            "install the NVIDIA driver (the host must provide it; the operator runs with "
            "driver.enabled=false)",
        )
    if returncode != 0:
        return _nvidia_smi_error(CHECK_NVIDIA_SMI, returncode, f"{stderr}\n{stdout}")
    try:
        header = nvsmi.parse_header(stdout)
    except nvsmi.NvidiaSmiParseError:
        return Finding(CHECK_NVIDIA_SMI, True, "nvidia-smi ran (exit 0)")
    cuda_text = header.cuda_version or "not reported"
    return Finding(
        CHECK_NVIDIA_SMI,
        True,
        f"nvidia-smi ran: driver {header.driver_version}, CUDA {cuda_text}",
    )


# --- docker -----------------------------------------------------------------------------


def _docker_unreachable(check: str, text: str, context: str | None) -> Finding | None:
    """A failure for an unreachable daemon or a socket permission error, else ``None``."""
    lowered = text.lower()
    where = f" (context {context})" if context is not None else ""
    if "permission denied" in lowered and "docker" in lowered:
        return _fail(
            check,
            f"no permission to talk to the Docker daemon{where}: {_quote(text)}",
            fixes.docker_group(),
        )
    if "cannot connect to the docker daemon" in lowered or "is the docker daemon running" in lowered:
        return _fail(
            check,
            f"the Docker daemon is not reachable{where}: {_quote(text)}",
            fixes.start_docker(),
        )
    return None


def _server_errors(info: object) -> list[str]:
    if isinstance(info, dict):
        errors = info.get("ServerErrors")
        if isinstance(errors, list):
            return [str(e) for e in errors]
    return []


def check_docker_info(
    returncode: int | None,
    stdout_json: str,
    daemon_json: str | None,
    context: str = "default",
    stderr: str = "",
) -> Finding:
    """Check that the Docker daemon minikube will use has the ``nvidia`` runtime loaded.

    ``stdout_json`` is the output of ``docker info --format '{{json .}}'`` (run against the
    active docker ``context``); ``daemon_json`` the text of ``/etc/docker/daemon.json`` or
    ``None`` when absent; ``stderr`` docker's stderr, read only on failure (some docker
    versions print the daemon error there, others in the JSON's ``ServerErrors``).

    Causes, in order: docker CLI not found (``returncode`` ``None``); daemon unreachable or
    no permission (non-zero exit or ``ServerErrors``); output not JSON; no ``nvidia`` key in
    ``Runtimes`` while ``daemon.json`` is not valid JSON; no ``nvidia`` key in ``Runtimes``
    although ``daemon.json`` has ``runtimes.nvidia`` (configured but not loaded by the running
    daemon, or the context talks to another daemon); no ``nvidia`` runtime anywhere. On
    success the message names the default runtime and the CDI spec directories when
    ``docker info`` reports ``CDISpecDirs``.
    """
    check = CHECK_DOCKER_RUNTIME
    if returncode is None:
        return _fail(
            check,
            "docker not found on PATH (minikube's GPU support needs the docker driver)",
            "install Docker Engine (https://docs.docker.com/engine/install/)",
        )
    info: object = None
    try:
        info = json.loads(stdout_json) if stdout_json.strip() else None
    except json.JSONDecodeError:
        info = None
    errors = _server_errors(info)
    if returncode != 0 or errors:
        text = "\n".join([*errors, stderr]) if errors else f"{stderr}\n{stdout_json}"
        unreachable = _docker_unreachable(check, text, context)
        if unreachable is not None:
            return unreachable
        return _fail(
            check,
            f"docker info exited {returncode} (context {context}): {_quote(text)}",
            "run docker info by hand and fix what it reports",
        )
    if not isinstance(info, dict):
        return _fail(
            check,
            f"docker info did not print a JSON object (context {context}): {_quote(stdout_json)}",
            "run docker info --format '{{json .}}' by hand; a docker CLI that old cannot "
            "print JSON needs upgrading",
        )

    runtimes = info.get("Runtimes")
    loaded = sorted(runtimes) if isinstance(runtimes, dict) else []
    if "nvidia" in loaded:
        default = info.get("DefaultRuntime") or "unknown"
        message = f"nvidia runtime loaded (context {context}; default runtime {default})"
        cdi_dirs = info.get("CDISpecDirs")
        if isinstance(cdi_dirs, list) and cdi_dirs:
            message += f"; CDI spec dirs: {', '.join(str(d) for d in cdi_dirs)}"
        return Finding(check, True, message)

    loaded_text = ", ".join(loaded) if loaded else "none"
    configured, daemon_json_error = _daemon_json_has_nvidia(daemon_json)
    if daemon_json_error is not None:
        return _fail(
            check,
            f"no nvidia runtime in the running daemon (context {context}; runtimes: "
            f"{loaded_text}) and /etc/docker/daemon.json is not valid JSON "
            f"({daemon_json_error}): the daemon will fail on its next restart",
            "fix /etc/docker/daemon.json, then " + fixes.docker_runtime(),
        )
    if configured:
        if context == "default":
            fix = "restart the daemon so it reads daemon.json: sudo systemctl restart docker"
        else:
            fix = (
                f"docker context {context} talks to another daemon: configure the nvidia "
                "runtime there (nvidia-ctk runtime configure --runtime=docker --config=<that "
                "daemon's daemon.json>) and restart it, or switch with docker context use default"
            )
        return _fail(
            check,
            "nvidia runtime configured but not loaded by the running daemon (context "
            f"{context}; runtimes: {loaded_text}): restart or configure that daemon "
            "(/etc/docker/daemon.json has runtimes.nvidia)",
            fix,
        )
    return _fail(
        check,
        f"the Docker daemon has no nvidia runtime (context {context}; runtimes: {loaded_text})",
        fixes.install_toolkit(),
    )


def _daemon_json_has_nvidia(daemon_json: str | None) -> tuple[bool, str | None]:
    """``(has runtimes.nvidia, JSON error or None)`` for the text of daemon.json."""
    if daemon_json is None or not daemon_json.strip():
        return False, None
    try:
        config = json.loads(daemon_json)
    except json.JSONDecodeError as exc:
        return False, str(exc)
    runtimes = config.get("runtimes") if isinstance(config, dict) else None
    return isinstance(runtimes, dict) and "nvidia" in runtimes, None


# --- host resources ---------------------------------------------------------------------


def check_resources(cpus: int, memory_mib: int, want_cpus: int, want_memory_mib: int) -> Finding:
    """Check the host can give minikube what it is asked for, and that the ask is enough.

    ``cpus`` and ``memory_mib`` are the host's (MiB); ``want_*`` what minikube will be started
    with (``--cpus``, ``--memory`` in MiB). Fails when the host has less than asked, or when
    the ask is below :data:`MIN_CPUS` / :data:`MIN_MEMORY_MIB` (4 CPUs / 8 GiB, what the
    operator, NFD and DCGM pods need to schedule). All shortfalls are in one message.
    """
    problems: list[str] = []
    todo: list[str] = []
    if want_cpus < MIN_CPUS or want_memory_mib < MIN_MEMORY_MIB:
        problems.append(
            f"minikube is asked for {want_cpus} CPUs / {want_memory_mib} MiB, below the "
            f"{MIN_CPUS} CPUs / {MIN_MEMORY_MIB} MiB the operator pods need"
        )
        todo.append(
            f"ask for at least --cpus={MIN_CPUS} --memory={MIN_MEMORY_MIB} "
            "(the stack's minikube cpus/memory config)"
        )
    if cpus < want_cpus or memory_mib < want_memory_mib:
        problems.append(
            f"the host has {cpus} CPUs / {memory_mib} MiB, less than the {want_cpus} CPUs / "
            f"{want_memory_mib} MiB minikube is asked for"
        )
        todo.append("use a larger host, or lower the ask (not below the minimum above)")
    if problems:
        return _fail(CHECK_HOST_RESOURCES, "; ".join(problems), "; ".join(todo))
    return Finding(
        CHECK_HOST_RESOURCES,
        True,
        f"host has {cpus} CPUs / {memory_mib} MiB for minikube's {want_cpus} CPUs / {want_memory_mib} MiB",
    )


# --- minikube ---------------------------------------------------------------------------

_MINIKUBE_VERSION_RE: Final = re.compile(
    r"^(?:minikube version:\s*)?v(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)(?P<pre>-\S+)?$"
)


def check_minikube_version(version_output: str, bundled: str = "") -> Finding:
    """Check minikube is new enough for the GPU lab (at least :data:`MIN_MINIKUBE`, v1.37.0).

    ``version_output`` is ``minikube version --short`` (``v1.37.0``) or the long form
    (``minikube version: v1.37.0`` then ``commit: ...``); only the first non-empty line is
    read. A pre-release of the minimum (``v1.37.0-beta.0``) counts as older, as in semver.
    ``bundled`` is what that release bundles, when known (``"cri-dockerd v0.3.15"``), named
    in the message. Unparseable output fails, quoting it. An older minikube fails with the
    upgrade as the fix: its cri-dockerd refuses the ``nvidia`` RuntimeClass handler the GPU
    Operator's operands ask for (``RuntimeHandler "nvidia" not supported``), or it does not
    support the lab's Kubernetes version (variants/minikube/releases.py has the sources).
    """
    first = next((line.strip() for line in version_output.splitlines() if line.strip()), "")
    m = _MINIKUBE_VERSION_RE.match(first)
    if m is None:
        return _fail(
            CHECK_MINIKUBE_VERSION,
            f"cannot read the minikube version from {_quote(version_output)}",
            "run minikube version --short; reinstall minikube if it does not print vX.Y.Z",
        )
    version = (int(m.group("major")), int(m.group("minor")), int(m.group("patch")))
    text = first.removeprefix("minikube version:").strip()
    too_old = version < MIN_MINIKUBE or (version == MIN_MINIKUBE and m.group("pre"))
    minimum = "v" + ".".join(str(p) for p in MIN_MINIKUBE)
    if too_old:
        what = f" (it bundles {bundled})" if bundled else ""
        return _fail(
            CHECK_MINIKUBE_VERSION,
            f"minikube {text} is older than {minimum}{what}: the GPU Operator's operands run with "
            'runtimeClassName: nvidia, which cri-dockerd before v0.4.0 refuses (RuntimeHandler "nvidia" '
            f"not supported), so no operand would start; {minimum} is the first minikube with cri-dockerd "
            "v0.4.0 that also supports the lab's default Kubernetes version",
            f"upgrade minikube to {minimum} or newer (https://minikube.sigs.k8s.io/docs/start/), then "
            "make lab",
        )
    return Finding(
        CHECK_MINIKUBE_VERSION, True, f"minikube {text} (>= {minimum}: runs the operator's operands)"
    )


# --- docker GPU self-test ---------------------------------------------------------------

_UNSATISFIED_CUDA_RE: Final = re.compile(r"unsatisfied condition: cuda\s*>=\s*(\d+\.\d+)")


def check_docker_gpu_selftest(
    returncode: int | None,
    stdout: str,
    stderr: str,
    image: str,
    max_cuda: str | None = None,
) -> Finding:
    """Check ``docker run --rm --gpus all <image> nvidia-smi`` (optional self-test).

    ``max_cuda`` is the host's newest supported CUDA (the host ``nvidia-smi`` header), used to
    suggest a fitting tag. Causes recognised on a non-zero exit:

    * ``unsatisfied condition: cuda>=X.Y``: the image needs a newer CUDA than the driver
      supports; the fix (:func:`gpulab.fixes.cuda_image`) names the newest fitting tag when
      ``max_cuda`` is known, and the minimum driver for ``X.Y`` when the table has it;
    * ``could not select device driver "" with capabilities: [[gpu]]``: docker has no GPU
      support, fixed with nvidia-ctk;
    * daemon unreachable, ``nvidia-smi`` missing from the container (driver utilities not
      mounted), and ``nvidia-smi`` failing inside the container.

    Anything else fails quoting the first line of stderr.
    """
    check = CHECK_DOCKER_GPU_SELFTEST
    if returncode is None:
        return _fail(check, "docker not found on PATH", "install Docker Engine")
    if returncode == 0:
        try:
            header = nvsmi.parse_header(stdout)
        except nvsmi.NvidiaSmiParseError:
            return Finding(check, True, f"docker run --gpus all {image} nvidia-smi succeeded")
        return Finding(
            check,
            True,
            f"docker run --gpus all {image} nvidia-smi succeeded: driver "
            f"{header.driver_version}, CUDA {header.cuda_version or 'not reported'}",
        )

    output = f"{stderr}\n{stdout}"
    unsatisfied = _UNSATISFIED_CUDA_RE.search(output)
    if unsatisfied is not None:
        return _cuda_too_new(image, unsatisfied.group(1), max_cuda)
    if 'could not select device driver "" with capabilities: [[gpu]]' in output:
        return _fail(
            check,
            f"docker cannot hand GPUs to containers (--gpus all): {_quote(stderr or stdout)}",
            fixes.install_toolkit(),
        )
    unreachable = _docker_unreachable(check, output, None)
    if unreachable is not None:
        return unreachable
    if re.search(r'"?nvidia-smi"?: executable file not found', output):
        return _fail(
            check,
            f"nvidia-smi is not in the container: the NVIDIA container toolkit did not mount "
            f"the driver utilities ({_quote(stderr or stdout)})",
            "keep NVIDIA_DRIVER_CAPABILITIES including utility (nvidia/cuda images set it), then "
            + fixes.install_toolkit(),
        )
    if "nvidia-smi" in output.lower() or "nvml" in output.lower():
        return _nvidia_smi_error(check, returncode, output)
    return _fail(
        check,
        f"docker run --gpus all {image} nvidia-smi exited {returncode}: {_quote(stderr or stdout)}",
        "run the command by hand and fix what it reports",
    )


def _cuda_too_new(image: str, needed: str, max_cuda: str | None) -> Finding:
    message = f"image newer than driver: {image} needs CUDA >= {needed}"
    if max_cuda is not None:
        message += f", the driver supports CUDA {max_cuda} at most"
    return _fail(CHECK_DOCKER_GPU_SELFTEST, message, fixes.cuda_image(image, needed, max_cuda))
