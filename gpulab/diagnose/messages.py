"""The failure messages of the GPU stack the diagnosis recognises, each with its cause and fix.

Mined from the upstream trackers (NVIDIA/gpu-operator, NVIDIA/k8s-device-plugin,
NVIDIA/nvidia-container-toolkit and its predecessor NVIDIA/nvidia-docker, NVIDIA/dcgm-exporter
and NVIDIA/gpu-monitoring-tools): the messages reported most often. The table is in match
order: a message that names its cause precisely comes before a vaguer one that often shares
its log (``could not load NVML`` before ``Incompatible strategy``). Each
:class:`KnownMessage` cites the issues it comes from
(``sources``, ``owner/repo#number``); its unit test quotes a log line of one of them
(tests/unit/diagnose/test_messages.py).

Kinds (:data:`KINDS`), which decide the first fix more than the component does:

* ``not-injected``: the driver is not visible inside the container; the Pod does not run
  under the NVIDIA runtime, or lost its devices since;
* ``host-driver``: the host driver is too old for the image's CUDA, not loaded, or half
  upgraded;
* ``runtime``: the node's container runtime has no ``nvidia`` handler, or the cluster no
  RuntimeClass ``nvidia``;
* ``toolkit``, ``validator``: an operator stage is not done (the toolkit, a validator step);
* ``dcgm``: the DCGM exporter (metrics only, never blocking the lab);
* ``device-plugin``: the device plugin runs but finds no usable GPU (no devices, MIG).

:func:`find` returns the first entry, in :data:`MESSAGES` order, whose pattern matches a
line of the texts given (a container log, status messages, event messages). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from gpulab.core import fixes, fixes_operator

KINDS: Final = ("not-injected", "host-driver", "runtime", "toolkit", "validator", "dcgm", "device-plugin")


@dataclass(frozen=True)
class FixArgs:
    """What a fix command names: the failing Pod's namespace and name, its container and
    image, the operator's namespace, the node's profile, and the newest CUDA ``"X.Y"`` the
    host driver supports (None: unknown)."""

    namespace: str
    pod: str
    container: str
    image: str
    operator_namespace: str
    profile: str
    host_max_cuda: str | None = None


@dataclass(frozen=True)
class KnownMessage:
    """One recognised message: ``id`` (kebab-case, the diagnosis' ``variant``), the
    ``pattern`` searched line by line, its ``kind`` (one of :data:`KINDS`), the ``cause`` in
    one sentence, the first ``fix`` (a :mod:`gpulab.core.fixes` text) and the upstream ``sources``."""

    id: str
    pattern: re.Pattern[str]
    kind: str
    cause: str
    fix: Callable[[FixArgs], str]
    sources: tuple[str, ...]


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _cuda(a: FixArgs) -> str:
    return fixes.cuda_image(a.image, None, a.host_max_cuda)


MESSAGES: Final[tuple[KnownMessage, ...]] = (
    # --- the host driver: too old, not loaded, half upgraded --------------------------------
    KnownMessage(
        "cuda-unsatisfied",
        _re(r"unsatisfied condition: cuda\s*>=\s*\d+\.\d+"),
        "host-driver",
        "the image needs a newer CUDA than the host driver supports; the runtime refuses to start it",
        _cuda,
        ("NVIDIA/nvidia-docker#1442", "NVIDIA/nvidia-docker#536"),
    ),
    KnownMessage(
        "cuda-driver-insufficient",
        _re(r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver"),
        "host-driver",
        "the CUDA runtime in the image is newer than the host driver supports",
        _cuda,
        ("NVIDIA/nvidia-docker#498", "NVIDIA/gpu-operator#277"),
    ),
    KnownMessage(
        "forward-compat-unsupported",
        _re(r"forward compatibility was attempted on non supported HW"),
        "host-driver",
        "the image's CUDA is newer than the host driver and its forward-compatibility package "
        "does not work on this GPU or driver branch",
        _cuda,
        ("NVIDIA/gpu-operator#277",),
    ),
    KnownMessage(
        "driver-library-mismatch",
        _re(r"driver/library version mismatch"),
        "host-driver",
        "the host driver was upgraded but the old kernel module is still loaded",
        lambda a: fixes_operator.driver_reload(a.profile),
        ("NVIDIA/nvidia-container-toolkit#394", "NVIDIA/nvidia-container-toolkit#171"),
    ),
    KnownMessage(
        "driver-not-loaded",
        _re(r"nvml error: driver not loaded|couldn't communicate with the NVIDIA driver"),
        "host-driver",
        "no NVIDIA kernel module is loaded on the node",
        lambda a: fixes_operator.driver_not_loaded(a.profile),
        ("NVIDIA/nvidia-container-toolkit#260", "NVIDIA/nvidia-container-toolkit#1269"),
    ),
    # --- the driver is not visible inside the container ----------------------------------------
    KnownMessage(
        "nvml-lost-devices",
        _re(r"Failed to initialize NVML: Unknown Error"),
        "not-injected",
        "the container lost access to the GPU device nodes (systemd re-applied its cgroup, e.g. "
        "after systemctl daemon-reload, without the NVIDIA device rules)",
        lambda a: fixes_operator.lost_devices(a.namespace, a.pod),
        ("NVIDIA/nvidia-docker#1730", "NVIDIA/nvidia-container-toolkit#251", "NVIDIA/gpu-operator#430"),
    ),
    KnownMessage(
        "nvml-not-injected",
        _re(
            r"could not load NVML|libnvidia-ml\.so[.\d]*: cannot open shared object|"
            r"ERROR_LIBRARY_NOT_FOUND|NVML library not found"
        ),
        "not-injected",
        "the container has no libnvidia-ml.so.1: the runtime does not inject the driver "
        "libraries (the Pod is not under the NVIDIA runtime)",
        lambda a: fixes_operator.not_injected(a.operator_namespace, a.profile),
        ("NVIDIA/k8s-device-plugin#478", "NVIDIA/k8s-device-plugin#1011", "NVIDIA/dcgm-exporter#612"),
    ),
    KnownMessage(
        "incompatible-strategy",
        _re(r"Incompatible strategy detected"),
        "not-injected",
        "the device plugin finds neither NVML nor a Tegra platform: its container runs without "
        "the NVIDIA runtime (or the node has no GPU)",
        lambda a: fixes_operator.not_injected(a.operator_namespace, a.profile),
        ("NVIDIA/k8s-device-plugin#1220", "NVIDIA/k8s-device-plugin#1574"),
    ),
    KnownMessage(
        "nvidia-smi-not-found",
        _re(r'nvidia-smi\\?"?: executable file not found|nvidia-smi: (?:command )?not found'),
        "not-injected",
        "nvidia-smi is not in the container: the runtime did not inject the driver's utilities "
        "(the Pod is not under the NVIDIA runtime)",
        lambda a: fixes_operator.not_injected(a.operator_namespace, a.profile),
        ("NVIDIA/gpu-operator#265", "NVIDIA/gpu-operator#1374", "NVIDIA/nvidia-docker#1668"),
    ),
    KnownMessage(
        "no-cuda-device",
        _re(r"no CUDA-capable device is detected"),
        "not-injected",
        "CUDA sees no GPU in the container: no device was injected (not under the NVIDIA "
        "runtime, or NVIDIA_VISIBLE_DEVICES names none)",
        lambda a: fixes_operator.not_injected(a.operator_namespace, a.profile),
        ("NVIDIA/gpu-operator#1900",),
    ),
    # --- the node's runtime and the RuntimeClass -----------------------------------------------
    KnownMessage(
        "no-nvidia-runtime",
        _re(r"no runtime for \"?nvidia\"? is configured|failed to find runtime handler nvidia"),
        "runtime",
        "RuntimeClass nvidia names the handler nvidia, but the node's containerd has no such runtime",
        lambda a: fixes_operator.runtime_handler(a.operator_namespace),
        ("NVIDIA/gpu-operator#730", "NVIDIA/gpu-operator#413", "NVIDIA/gpu-operator#1298"),
    ),
    KnownMessage(
        "runtimeclass-missing",
        _re(r"RuntimeClass \"?nvidia\"? not found"),
        "runtime",
        "the Pod asks for RuntimeClass nvidia and the cluster has none",
        lambda a: fixes_operator.runtime_class(),
        ("NVIDIA/gpu-operator#575", "truenas/middleware#11178"),
    ),
    # --- toolkit and validator stages ---------------------------------------------------------
    KnownMessage(
        "toolkit-not-ready",
        _re(r"waiting for nvidia container (?:stack|toolkit) to be setup"),
        "toolkit",
        "it waits for /run/nvidia/validations/toolkit-ready, which the validator writes once the "
        "container toolkit has configured the runtime",
        lambda a: fixes.toolkit(
            a.operator_namespace, f"delete the pod (scripts/kubectl -n {a.namespace} delete pod {a.pod})"
        ),
        ("NVIDIA/gpu-operator#378", "NVIDIA/gpu-operator#1518"),
    ),
    KnownMessage(
        "driver-root-missing",
        _re(r"/run/nvidia/driver/dev/nvidiactl: no such file|/run/nvidia/validations/\S+: no such file"),
        "validator",
        "a component looks for the operator's driver root (/run/nvidia/driver) or a validation "
        "marker that is not there: it started before the host driver was validated",
        lambda a: fixes_operator.driver_root(a.operator_namespace),
        ("NVIDIA/gpu-operator#377", "NVIDIA/gpu-operator#425"),
    ),
    KnownMessage(
        "dev-char-symlinks",
        _re(r"Failed to create symlinks under /dev/char|error creating symlink creator"),
        "validator",
        "the driver validation could not create the /dev/char links to the NVIDIA devices",
        lambda a: fixes_operator.dev_char_symlinks(a.operator_namespace),
        ("NVIDIA/gpu-operator#1015", "NVIDIA/gpu-operator#671", "NVIDIA/gpu-operator#569"),
    ),
    KnownMessage(
        "host-driver-not-found",
        _re(r"failed to validate the driver|failed to find an executable 'nvidia-smi' on the host"),
        "validator",
        "the validator cannot run nvidia-smi in the node's root: no driver there (driver.enabled=false)",
        lambda a: fixes_operator.host_driver(a.profile),
        ("NVIDIA/gpu-operator#1687",),
    ),
    KnownMessage(
        "gpu-resources-missing",
        _re(r"GPU resources are not (?:yet )?discovered by the node"),
        "validator",
        "the node advertises no nvidia.com/gpu: the device plugin has not registered",
        lambda a: fixes_operator.plugin_resources(a.operator_namespace),
        ("NVIDIA/gpu-operator#486",),
    ),
    KnownMessage(
        "gpu-held",
        _re(r"requested number of devices unavailable for nvidia\.com/gpu"),
        "validator",
        "the kubelet had no free GPU for the Pod: another Pod holds it",
        lambda a: fixes_operator.gpu_held(a.operator_namespace),
        ("NVIDIA/gpu-operator#233", "NVIDIA/gpu-operator#481"),
    ),
    # --- DCGM exporter -------------------------------------------------------------------------
    KnownMessage(
        "profiling-unsupported",
        _re(
            r"Profiling module returned an unrecoverable error|module of DCGM that is not currently "
            r"loaded|Profiling is not supported|DCGM_FR_PROF|DCP metrics.*not supported"
        ),
        "dcgm",
        "profiling (DCP) metrics are not supported on this GPU or driver",
        lambda a: fixes_operator.dcgm_profiling(),
        ("NVIDIA/dcgm-exporter#330", "NVIDIA/dcgm-exporter#148", "NVIDIA/gpu-monitoring-tools#141"),
    ),
    KnownMessage(
        "hostengine-unreachable",
        _re(r"Error connecting to nv-hostengine|Host engine connection invalid"),
        "dcgm",
        "the exporter is set to a standalone nv-hostengine that does not answer",
        lambda a: fixes_operator.dcgm_hostengine(a.operator_namespace),
        ("NVIDIA/gpu-operator#414", "NVIDIA/gpu-operator#288"),
    ),
    KnownMessage(
        "dcgm-init-failed",
        _re(r"DCGM initialization error|Error starting nv-hostengine|Cannot init NVML library"),
        "dcgm",
        "DCGM cannot initialise NVML: the exporter's container has no driver (not under the NVIDIA runtime)",
        lambda a: fixes_operator.not_injected(a.operator_namespace, a.profile),
        ("NVIDIA/gpu-monitoring-tools#96", "NVIDIA/dcgm-exporter#125", "NVIDIA/gpu-operator#222"),
    ),
    # --- device plugin -------------------------------------------------------------------------
    KnownMessage(
        "xid-unhealthy",
        # k8s-device-plugin v0.20.0 internal/rm/health.go ("XidCriticalError: Xid=%d on
        # Device=%s; marking device as unhealthy.") and internal/plugin/server.go ("'%s' device
        # marked unhealthy: %s"); older plugins: "..., the device will go unhealthy.".
        _re(r"XidCriticalError: Xid=\d+|device marked unhealthy"),
        "device-plugin",
        "the GPU raised a critical Xid error and the device plugin marked it unhealthy; it stays "
        "unhealthy until the plugin restarts, even if the GPU recovered",
        lambda a: (
            f"{fixes.unhealthy_gpus()}; once the GPU is healthy on the host (nvidia-smi), restart the "
            f"plugin: {fixes.KUBECTL} -n {a.namespace} delete pod {a.pod} && make lab"
        ),
        ("NVIDIA/k8s-device-plugin#189", "NVIDIA/k8s-device-plugin#234"),
    ),
    KnownMessage(
        "no-devices",
        _re(r"No devices found\. Waiting indefinitely"),
        "device-plugin",
        "the device plugin runs but NVML lists no GPU, so it registers nothing",
        lambda a: fixes_operator.no_devices(a.profile),
        ("NVIDIA/k8s-device-plugin#1080",),
    ),
    KnownMessage(
        "mig-devices",
        _re(
            r"failed to get MIG devices|No MIG devices associated|invalid MIG configuration|"
            r"migEnabled=true was not configured correctly|error visiting MIG device"
        ),
        "device-plugin",
        "MIG mode is on but its devices do not match the plugin's MIG strategy",
        lambda a: fixes_operator.mig_devices(a.profile),
        ("NVIDIA/k8s-device-plugin#253", "NVIDIA/k8s-device-plugin#397"),
    ),
    KnownMessage(
        "nvml-permissions",
        _re(r"Insufficient Pe\w*missions|ERROR_NO_PERMISSION"),
        "device-plugin",
        "NVML refuses the plugin the (MIG) devices: it lacks NVIDIA_MIG_MONITOR_DEVICES=all or SYS_ADMIN",
        lambda a: fixes_operator.nvml_permissions(),
        ("NVIDIA/k8s-device-plugin#399",),
    ),
)

#: The ids of :data:`MESSAGES`, in match order.
MESSAGE_IDS: Final = tuple(m.id for m in MESSAGES)


def find(texts: Iterable[str], kinds: Iterable[str] | None = None) -> tuple[KnownMessage, str] | None:
    """The first known message (in :data:`MESSAGES` order) found in ``texts``, and the line it
    is on (stripped); ``kinds`` limits the search to those kinds. None when nothing matches.

    Every text is searched line by line, so a multi-line log quotes one line as evidence."""
    wanted = set(kinds) if kinds is not None else None
    lines = [line.strip() for text in texts for line in (text or "").splitlines() if line.strip()]
    for message in MESSAGES:
        if wanted is not None and message.kind not in wanted:
            continue
        for line in lines:
            if message.pattern.search(line):
                return message, line
    return None
