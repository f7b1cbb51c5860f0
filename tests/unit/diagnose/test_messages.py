"""The known failure messages (:mod:`gpulab.diagnose.messages`), one test per message.

Each input quotes a log line (or status/event message) from a real upstream report; the
docstring cites it as owner/repo#number. Every test goes through
:func:`gpulab.diagnose.diagnose_cluster`, so it checks the row, the variant (the message id),
the cause and the first fix the whole diagnosis gives for that failing object.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gpulab import diagnose
from gpulab.diagnose import Diagnosis, messages

from .builders import NS, daemonset, event, healthy_operator, node, pod, running, waiting

NOW = datetime(2026, 11, 29, 10, 20, tzinfo=UTC)
COVERED: set[str] = set()


def _run(
    pods: list[dict[str, Any]],
    logs: dict[str, str] | None = None,
    events: list[dict[str, Any]] | None = None,
    dsets: list[dict[str, Any]] | None = None,
    host_max_cuda: str = "12.2",
) -> list[Diagnosis]:
    base, base_ds = healthy_operator()
    names = {p["metadata"]["name"] for p in pods}
    return diagnose.diagnose_cluster(
        pods=[*[p for p in base if p["metadata"]["name"] not in names], *pods],
        events=events or [],
        daemonsets=dsets if dsets is not None else base_ds,
        nodes=[node()],
        logs=logs or {},
        host_max_cuda=host_max_cuda,
        now=NOW,
    )


def _of(diags: list[Diagnosis], pod_name: str, variant: str) -> Diagnosis:
    COVERED.add(variant)
    found = [d for d in diags if f"/{pod_name}" in d.object]
    assert found, f"no diagnosis of {pod_name}: {diagnose.render(diags)}"
    assert found[0].variant == variant, diagnose.render(found)
    return found[0]


def _crashing(name: str, cname: str, *, restarts: int = 4, **kw: Any) -> dict[str, Any]:
    status = {
        "name": cname,
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
    }
    return pod(name, statuses=[status], **kw)


def _log(name: str, cname: str, text: str, ns: str = NS) -> dict[str, str]:
    return {f"{ns}/{name}/{cname}": text}


PLUGIN = "nvidia-device-plugin-daemonset-x2k9p"
PLUGIN_C = "nvidia-device-plugin"
PLUGIN_LABELS = {"app": "nvidia-device-plugin-daemonset"}
VALIDATOR = "nvidia-operator-validator-5hq8d"
VALIDATOR_LABELS = {"app": "nvidia-operator-validator"}
DCGM = "nvidia-dcgm-exporter-7k2lq"
DCGM_LABELS = {"app": "nvidia-dcgm-exporter"}


def _plugin_crash(text: str) -> Diagnosis:
    diags = _run([_crashing(PLUGIN, PLUGIN_C, labels=PLUGIN_LABELS)], _log(PLUGIN, PLUGIN_C, text))
    return next(d for d in diags if PLUGIN in d.object)


def _dcgm_crash(text: str, variant: str) -> Diagnosis:
    diags = _run(
        [_crashing(DCGM, "nvidia-dcgm-exporter", labels=DCGM_LABELS)],
        _log(DCGM, "nvidia-dcgm-exporter", text),
    )
    d = _of(diags, DCGM, variant)
    assert d.row == "dcgm-exporter-failing" and d.blocking is False
    return d


def _validator_init(
    init: dict[str, Any], text: str, *, before: tuple[str, ...] = ()
) -> tuple[list[Diagnosis], str]:
    done = [
        {"name": c, "ready": True, "restartCount": 0, "state": {"terminated": {"exitCode": 0}}}
        for c in before
    ]
    p = pod(
        VALIDATOR,
        phase="Pending",
        labels=VALIDATOR_LABELS,
        init_statuses=[*done, init],
        statuses=[waiting("nvidia-operator-validator", "PodInitializing")],
    )
    return _run([p], _log(VALIDATOR, init["name"], text)), init["name"]


# --- the host driver ---------------------------------------------------------------------------


def test_cuda_unsatisfied_condition_at_container_start() -> None:
    """NVIDIA/nvidia-docker#1442: the runtime refuses a CUDA 11.0 image on an older driver."""
    msg = (
        "failed to create shim task: OCI runtime create failed: container_linux.go:370: starting "
        "container process caused: process_linux.go:459: container init caused: Running hook #0:: "
        "error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: requirement "
        "error: unsatisfied condition: cuda>=11.0, please update your driver to a newer version, "
        "or use an earlier cuda container: unknown"
    )
    smoke = pod(
        "gpu-smoke",
        "default",
        gpus=1,
        containers=[{"name": "cuda", "image": "nvidia/cuda:11.0.3-base-ubuntu20.04"}],
        statuses=[waiting("cuda", "RunContainerError", msg)],
    )
    # The reporter's host driver supported CUDA 10.2: the facts agree with the message.
    d = _of(_run([smoke], host_max_cuda="10.2"), "gpu-smoke", "cuda-11.0")
    COVERED.add("cuda-unsatisfied")
    assert d.row == "cuda-image-newer-than-driver"
    assert "CUDA <= 10.2" in d.reason
    # Check before blaming: a host whose driver supports CUDA 12.2 contradicts the message;
    # the diagnosis says which facts disagree and never prints "upgrade the driver".
    d = _of(_run([smoke], host_max_cuda="12.2"), "gpu-smoke", "facts-disagree")
    assert "the host's driver supports CUDA 12.2 (host probe)" in d.reason
    assert "upgrade the driver" not in d.fix and "nvidia-smi" in d.fix
    assert d.fix.endswith("scripts/kubectl -n default delete pod gpu-smoke && make lab")


def test_cuda_driver_insufficient_in_a_workload_that_exited_without_restarts() -> None:
    """NVIDIA/nvidia-docker#498: ``-> CUDA driver version is insufficient for CUDA runtime
    version`` (a CUDA sample's output); the Pod ran once (restartPolicy Never, 0 restarts)."""
    job = pod(
        "gpu-compute",
        "default",
        phase="Failed",
        gpus=1,
        containers=[{"name": "vectoradd", "image": "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"}],
        statuses=[
            {
                "name": "vectoradd",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    )
    logs = _log(
        "gpu-compute",
        "vectoradd",
        "cudaGetDeviceProperties returned 35\n-> CUDA driver version is insufficient for CUDA "
        "runtime version\n",
        ns="default",
    )
    d = _of(_run([job], logs), "gpu-compute", "cuda-driver-insufficient")
    assert d.row == "cuda-image-newer-than-driver"
    assert "its tag says CUDA 12.5" in d.reason or "needs CUDA >= 12.5" in d.reason
    assert "computeImage" in d.fix or "upgrade the driver" in d.fix


def test_forward_compatibility_in_the_validators_cuda_workload() -> None:
    """NVIDIA/gpu-operator#277: cuda-validation's vectorAdd on a 450 driver."""
    p = pod(
        "nvidia-cuda-validator-tes6d",
        phase="Pending",
        labels={"app": "nvidia-cuda-validator"},
        containers=[
            {
                "name": "nvidia-cuda-validator",
                "image": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v1.9.0",
            }
        ],
        init_statuses=[
            {
                "name": "cuda-validation",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1}},
            }
        ],
    )
    text = (
        "[Vector addition of 50000 elements]\n"
        "Failed to allocate device vector A (error code forward compatibility was attempted on non "
        "supported HW)!\n"
    )
    d = _of(
        _run([p], _log("nvidia-cuda-validator-tes6d", "cuda-validation", text)),
        "nvidia-cuda-validator",
        "forward-compat-unsupported",
    )
    assert d.row == "cuda-image-newer-than-driver"
    assert "upgrade the host driver" in d.fix and "chartVersion" in d.fix


def test_driver_library_version_mismatch() -> None:
    """NVIDIA/nvidia-container-toolkit#394: the driver was upgraded, the host not rebooted."""
    msg = (
        "Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: "
        "initialization error: nvml error: driver/library version mismatch: unknown."
    )
    smoke = pod("gpu-smoke", "default", gpus=1, statuses=[waiting("main", "RunContainerError", msg)])
    d = _of(_run([smoke]), "gpu-smoke", "driver-library-mismatch")
    assert d.row == "pod-crashloop" and "reboot the host" in d.fix


def test_driver_not_loaded() -> None:
    """NVIDIA/nvidia-container-toolkit#260: no kernel module, the hook cannot start NVML."""
    msg = "stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown."
    p = pod(
        PLUGIN, labels=PLUGIN_LABELS, statuses=[waiting(PLUGIN_C, "RunContainerError", msg, restartCount=3)]
    )
    d = _of(_run([p]), PLUGIN, "driver-not-loaded")
    assert d.row == "device-plugin-crashloop" and "modprobe nvidia" in d.fix


# --- the driver is not visible inside the container -----------------------------------------


def test_nvml_unknown_error_after_a_daemon_reload() -> None:
    """NVIDIA/nvidia-docker#1730 (and nvidia-container-toolkit#251): after systemctl
    daemon-reload a running container prints ``Failed to initialize NVML: Unknown Error``."""
    p = _crashing("trainer-0", "trainer", ns="default")
    d = _of(
        _run([p], _log("trainer-0", "trainer", "Failed to initialize NVML: Unknown Error\n", ns="default")),
        "trainer-0",
        "nvml-lost-devices",
    )
    assert d.row == "pod-crashloop"
    assert "kubectl -n default delete pod trainer-0" in d.fix and "create-dev-char-symlinks" in d.fix


def test_device_plugin_without_nvml_library() -> None:
    """NVIDIA/k8s-device-plugin#1011: ``Detected non-NVML platform: could not load NVML
    library: libnvidia-ml.so.1: cannot open shared object file``."""
    d = _plugin_crash(
        "I0117 15:43:15.907336 1 factory.go:107] Detected non-NVML platform: could not load NVML "
        "library: libnvidia-ml.so.1: cannot open shared object file: No such file or directory\n"
    )
    COVERED.add(d.variant)
    assert (d.row, d.variant) == ("device-plugin-crashloop", "nvml-not-injected")
    assert "not under the NVIDIA runtime" in d.reason and "runtimeClassName: nvidia" in d.fix


def test_incompatible_strategy() -> None:
    """NVIDIA/k8s-device-plugin#1220: the plugin finds neither NVML nor Tegra."""
    d = _plugin_crash(
        "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto\n"
        "E0506 17:45:45.421965       1 factory.go:113] If this is a GPU node, did you configure the "
        "NVIDIA Container Toolkit?\n"
        "E0506 17:45:45.442750       1 main.go:173] error starting plugins: error getting plugins: "
        "unable to create plugins: failed to construct resource managers: invalid device discovery strategy\n"
    )
    COVERED.add(d.variant)
    assert (d.row, d.variant) == ("device-plugin-crashloop", "incompatible-strategy")
    assert "nvidia-ctk runtime configure" in d.fix


def test_nvidia_smi_not_found_in_toolkit_validation() -> None:
    """NVIDIA/gpu-operator#265 (and #1374): toolkit-validation cannot run nvidia-smi."""
    init = {
        "name": "toolkit-validation",
        "ready": False,
        "restartCount": 5,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1}},
    }
    text = (
        'time="2021-10-07T15:16:34Z" level=info msg="Error: error validating toolkit installation: '
        'exec: \\"nvidia-smi\\": executable file not found in $PATH"\ntoolkit is not ready\n'
    )
    diags, _ = _validator_init(init, text, before=("driver-validation",))
    d = _of(diags, VALIDATOR, "nvidia-smi-not-found")
    assert d.row == "validator-stuck" and d.object.endswith("container toolkit-validation")


def test_no_cuda_capable_device_in_the_validators_workload() -> None:
    """NVIDIA/gpu-operator#1900: ``Failed to allocate device vector A (error code no
    CUDA-capable device is detected)!``."""
    p = pod(
        "nvidia-cuda-validator-r6nsb",
        phase="Pending",
        labels={"app": "nvidia-cuda-validator"},
        init_statuses=[
            {
                "name": "cuda-validation",
                "ready": False,
                "restartCount": 2,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            }
        ],
    )
    text = (
        "Failed to allocate device vector A (error code no CUDA-capable device is "
        "detected)!\n[Vector addition of 50000 elements]\n"
    )
    d = _of(
        _run([p], _log("nvidia-cuda-validator-r6nsb", "cuda-validation", text)),
        "nvidia-cuda-validator",
        "no-cuda-device",
    )
    assert d.row == "validator-stuck"


# --- the node's runtime and the RuntimeClass -------------------------------------------------


def test_no_runtime_for_nvidia_configured() -> None:
    """NVIDIA/gpu-operator#730: the RuntimeClass exists, the node's containerd lacks the handler."""
    smoke = pod(
        "gpu-smoke", "default", phase="Pending", gpus=1, statuses=[waiting("cuda", "ContainerCreating")]
    )
    ev = event(
        "gpu-smoke",
        "FailedCreatePodSandBox",
        "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox "
        'runtime: no runtime for "nvidia" is configured',
        ns="default",
    )
    d = _of(_run([smoke], events=[ev]), "gpu-smoke", "no-nvidia-runtime")
    assert d.row == "smoke-container-creating"
    assert "nvidia-ctk runtime configure --runtime=containerd" in d.fix


def test_runtimeclass_nvidia_not_found() -> None:
    """truenas/middleware#11178 (gpu-operator#575 is the operator's side): Pods are refused at
    admission, the DaemonSet controller reports ``pod rejected: RuntimeClass "nvidia" not found``."""
    ds = daemonset("nvidia-dcgm-exporter", desired=1, ready=0)
    ev = event(
        "nvidia-dcgm-exporter",
        "FailedCreate",
        'Error creating: pods "prune-test1-ix-chart-6c6f674cbb-" is forbidden: pod rejected: '
        'RuntimeClass "nvidia" not found',
        kind="DaemonSet",
    )
    _, base = healthy_operator()
    diags = _run([], events=[ev], dsets=[*base, ds])
    d = next(x for x in diags if x.object == f"daemonset {NS}/nvidia-dcgm-exporter")
    COVERED.add(d.variant)
    assert (d.row, d.variant) == ("daemonset-not-ready", "runtimeclass-missing")
    assert "kubectl get runtimeclass" in d.fix


# --- toolkit and validator stages ---------------------------------------------------------


def test_operand_waiting_for_the_toolkit_says_for_how_long() -> None:
    """NVIDIA/gpu-operator#378: the device plugin's toolkit-validation init container prints
    ``waiting for nvidia container stack to be setup`` every 5 s."""
    p = pod(
        PLUGIN,
        phase="Pending",
        labels=PLUGIN_LABELS,
        init_statuses=[running("toolkit-validation", ready=False)],
        statuses=[waiting(PLUGIN_C, "PodInitializing")],
    )
    text = "waiting for nvidia container stack to be setup\n" * 3
    d = _of(_run([p], _log(PLUGIN, "toolkit-validation", text)), PLUGIN, "toolkit-not-ready")
    assert d.row == "pod-init-waiting"
    assert "stuck for 19m 0s (running since 2026-11-29T10:01:00Z)" in d.reason
    assert "rollout status ds/nvidia-container-toolkit-daemonset" in d.fix


def test_driver_root_missing() -> None:
    """NVIDIA/gpu-operator#377: ``failed to generate spec: lstat
    /run/nvidia/driver/dev/nvidiactl: no such file or directory``."""
    p = pod(
        "nvidia-device-plugin-validator-8xq2k",
        phase="Pending",
        labels={"app": "nvidia-device-plugin-validator"},
        statuses=[
            waiting(
                "plugin-validation",
                "CreateContainerError",
                "failed to generate spec: lstat /run/nvidia/driver/dev/nvidiactl: no such file or directory",
            )
        ],
    )
    d = _of(_run([p]), "nvidia-device-plugin-validator", "driver-root-missing")
    assert "delete pod -l app=nvidia-container-toolkit-daemonset" in d.fix


def test_dev_char_symlinks() -> None:
    """NVIDIA/gpu-operator#1015: driver-validation cannot create the /dev/char links."""
    init = {
        "name": "driver-validation",
        "ready": False,
        "restartCount": 6,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1}},
    }
    text = (
        'time="2024-09-27T12:16:45Z" level=info msg="creating symlinks under /dev/char that '
        'correspond to NVIDIA character devices"\n'
        'time="2024-09-27T12:16:45Z" level=info msg="Error: error validating driver installation: '
        "error creating symlink creator: "
        "failed to create NVIDIA device nodes: failed to create device node nvidiactl: failed to "
        "determine major: invalid device node\n"
        "Failed to create symlinks under /dev/char that point to all possible NVIDIA character devices.\n"
    )
    diags, _ = _validator_init(init, text)
    d = _of(diags, VALIDATOR, "dev-char-symlinks")
    assert d.row == "validator-stuck" and "DISABLE_DEV_CHAR_SYMLINK_CREATION" in d.fix
    assert diags[0] is d, "driver validation is the first thing to fix"


def test_host_driver_not_found_says_how_long_the_validator_waits() -> None:
    """NVIDIA/gpu-operator#1687: driver-validation loops ``failed to validate the driver,
    retrying after 5 seconds``."""
    init = {
        "name": "driver-validation",
        "ready": False,
        "restartCount": 0,
        "state": {"running": {"startedAt": "2026-11-29T09:50:00Z"}},
    }
    text = (
        "INFO[0000] Attempting to validate a pre-installed driver on the host\n"
        "INFO[0000] Attempting to validate a driver container installation\n"
        "WARN[0000] failed to validate the driver, retrying after 5 seconds\n"
    )
    diags, _ = _validator_init(init, text)
    d = _of(diags, VALIDATOR, "host-driver-not-found")
    assert "stuck for 30m 0s" in d.reason
    assert "minikube -p gpu-lab ssh -- nvidia-smi" in d.fix
    assert "kubectl -n gpu-operator logs nvidia-operator-validator-5hq8d -c driver-validation" in d.fix


def test_gpu_resources_not_yet_discovered() -> None:
    """NVIDIA/gpu-operator#486: plugin-validation waits for nvidia.com/gpu on its node."""
    init = {
        "name": "plugin-validation",
        "ready": False,
        "restartCount": 0,
        "state": {"running": {"startedAt": "2026-11-29T10:15:00Z"}},
    }
    text = (
        'time="2023-02-08T14:19:01Z" level=info msg="GPU resources are not yet discovered by the '
        'node, retry: 24"\n'
    )
    diags, _ = _validator_init(
        init, text, before=("driver-validation", "toolkit-validation", "cuda-validation")
    )
    d = _of(diags, VALIDATOR, "gpu-resources-missing")
    assert "stuck for 5m 0s" in d.reason and "WITH_WORKLOAD=false" in d.fix


def test_gpu_held_by_another_pod_fails_the_validators_workload() -> None:
    """NVIDIA/gpu-operator#233: ``Allocate failed due to requested number of devices unavailable
    for nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected``."""
    p = pod(
        "nvidia-device-plugin-validator-m2wq9",
        phase="Failed",
        labels={"app": "nvidia-device-plugin-validator"},
        gpus=1,
        reason="UnexpectedAdmissionError",
        message="Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
        "Requested: 1, Available: 0, which is unexpected",
    )
    d = next(x for x in _run([p]) if "nvidia-device-plugin-validator" in x.object)
    COVERED.add("gpu-held")
    assert d.row == "pod-failed" and "WITH_WORKLOAD=false" in d.fix


# --- DCGM exporter -------------------------------------------------------------------------


def test_dcgm_module_not_loaded() -> None:
    """NVIDIA/gpu-monitoring-tools#141: ``Error watching fields: This request is serviced by a
    module of DCGM that is not currently loaded`` (profiling metrics on a GPU without them)."""
    d = _dcgm_crash(
        'time="2020-12-15T11:28:40Z" level=info msg="DCGM successfully initialized!"\n'
        'time="2020-12-15T11:28:40Z" level=fatal msg="Error watching fields: This request is serviced '
        'by a module of DCGM that is not currently loaded"\n',
        "profiling-unsupported",
    )
    assert "DCGM_FI_PROF_" in d.fix


def test_dcgm_hostengine_unreachable() -> None:
    """NVIDIA/gpu-operator#414: the exporter is pointed at a standalone nv-hostengine."""
    d = _dcgm_crash(
        'time="2022-09-29T12:09:09Z" level=info msg="Attemping to connect to remote hostengine at '
        'localhost:5555"\n'
        'time="2022-09-29T12:09:14Z" level=fatal msg="Error connecting to nv-hostengine: Host engine '
        'connection invalid/disconnected"\n',
        "hostengine-unreachable",
    )
    assert "dcgm.enabled=false" in d.fix


def test_dcgm_initialization_error() -> None:
    """NVIDIA/gpu-monitoring-tools#96: ``Error starting nv-hostengine: DCGM initialization error``."""
    d = _dcgm_crash(
        'time="2020-07-21T18:49:33Z" level=info msg="Starting dcgm-exporter"\n'
        "Error: Failed to initialize NVML\n"
        'time="2020-07-21T18:49:33Z" level=fatal msg="Error starting nv-hostengine: DCGM '
        'initialization error"\n',
        "dcgm-init-failed",
    )
    assert "runtimeClassName: nvidia" in d.fix


# --- device plugin -------------------------------------------------------------------------


def test_device_plugin_waiting_indefinitely_with_no_devices() -> None:
    """NVIDIA/k8s-device-plugin#1080: the plugin runs, finds no GPU and waits forever; only
    its log says why allocatable stays 0."""
    p = pod(PLUGIN, labels=PLUGIN_LABELS, statuses=[running(PLUGIN_C)])
    text = (
        "I1129 11:18:42.708036       1 main.go:353] \nRunning with config:\nNo devices found. "
        "Waiting indefinitely.\n"
    )
    diags = diagnose.diagnose_cluster(
        pods=[p],
        events=[],
        daemonsets=[daemonset("nvidia-device-plugin-daemonset")],
        nodes=[node(allocatable=None, capacity=None)],
        logs=_log(PLUGIN, PLUGIN_C, text),
        now=NOW,
    )
    d = _of(diags, PLUGIN, "no-devices")
    assert d.row == "device-plugin-idle" and "nvidia-smi -L" in d.fix
    assert [x.row for x in diags] == ["device-plugin-idle", "allocatable-zero"]


def test_a_running_plugin_that_marked_its_gpu_unhealthy_after_an_xid() -> None:
    """NVIDIA/k8s-device-plugin#189: "XidCriticalError: Xid=69 on
    Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device will go unhealthy." then "'nvidia.com/gpu'
    device marked unhealthy: GPU-7540a9b3-..." while the plugin keeps running; NVIDIA/k8s-device-plugin#234:
    it stays unhealthy until the plugin restarts."""
    p = pod(PLUGIN, labels=PLUGIN_LABELS, statuses=[running(PLUGIN_C)])
    text = (
        "2020/08/10 19:09:42 XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, "
        "the device will go unhealthy.\n"
        "2020/08/10 19:09:42 'nvidia.com/gpu' device marked unhealthy: "
        "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8\n"
    )
    diags = diagnose.diagnose_cluster(
        pods=[p],
        events=[],
        daemonsets=[daemonset("nvidia-device-plugin-daemonset")],
        nodes=[node(allocatable="0", capacity="1")],
        logs=_log(PLUGIN, PLUGIN_C, text),
        now=NOW,
    )
    d = _of(diags, PLUGIN, "xid-unhealthy")
    assert "dmesg | grep -i xid" in d.fix and d.fix.endswith(f"delete pod {PLUGIN} && make lab")


def test_mig_devices_not_configured() -> None:
    """NVIDIA/k8s-device-plugin#253: ``panic: At least one device with migEnabled=true was not
    configured correctly: No MIG devices associated with /dev/nvidia0``."""
    d = _plugin_crash(
        "2021/07/15 20:49:32 Loading NVML\n"
        "panic: At least one device with migEnabled=true was not configured correctly: No MIG devices "
        "associated with /dev/nvidia0: GPU-fe14a161-d1f3-7706-c257-3b22fe15c684\n"
    )
    COVERED.add(d.variant)
    assert d.variant == "mig-devices" and "nvidia-smi mig -lgi" in d.fix


def test_nvml_insufficient_permissions() -> None:
    """NVIDIA/k8s-device-plugin#399: ``error getting device memory info: Insufficient
    Pemmissions`` (sic) on a MIG node without NVIDIA_MIG_MONITOR_DEVICES=all."""
    d = _plugin_crash(
        "error starting plugins: unable to add default resources to config: error visiting devices: "
        "error visiting device: error visiting device: error getting device memory info: "
        "Insufficient Pemmissions\n"
    )
    COVERED.add(d.variant)
    assert d.variant == "nvml-permissions" and "NVIDIA_MIG_MONITOR_DEVICES=all" in d.fix


# --- the table itself ----------------------------------------------------------------------


def test_every_known_message_has_a_test_above_and_cites_its_source() -> None:
    # Every message test of this module is run here again, so the coverage does not hang on
    # which of them ran before in this worker (pytest-xdist spreads a module over workers).
    for name, fn in list(globals().items()):
        if name.startswith("test_") and name not in _NOT_MESSAGE_TESTS and callable(fn):
            fn()
    assert set(messages.MESSAGE_IDS) <= COVERED, set(messages.MESSAGE_IDS) - COVERED
    for m in messages.MESSAGES:
        assert m.kind in messages.KINDS, m.id
        assert m.sources and all("/" in s and "#" in s for s in m.sources), m.id
    assert len(set(messages.MESSAGE_IDS)) == len(messages.MESSAGES)


#: The tests of this module that cover no message of the table (this one and the lookup's).
_NOT_MESSAGE_TESTS = frozenset(
    {
        "test_every_known_message_has_a_test_above_and_cites_its_source",
        "test_find_prefers_the_table_order_and_quotes_the_line",
    }
)


def test_find_prefers_the_table_order_and_quotes_the_line() -> None:
    text = (
        "x\nIncompatible strategy detected auto\ncould not load NVML library: libnvidia-ml.so.1: "
        "cannot open\n"
    )
    hit = messages.find([text])
    assert hit is not None and hit[0].id == "nvml-not-injected" and hit[1].startswith("could not load")
    assert messages.find(["all good"]) is None
    assert messages.find([text], kinds=("dcgm",)) is None
    assert next(m for m in messages.MESSAGES if m.id == "no-devices").kind == "device-plugin"
