"""Crash loops and image pulls (:mod:`gpulab.diagnose.containers`)."""

from __future__ import annotations

from gpulab import diagnose

from .builders import NS, daemonset, healthy_operator, node, pod, rows, waiting

# --- device plugin NVML ------------------------------------------------------------------------

PLUGIN_LOG = """\
I1129 10:04:01.112233       1 main.go:235] "Starting NVIDIA Device Plugin" version="v0.18.0"
I1129 10:04:01.112301       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins
I1129 10:04:01.112400       1 main.go:317] Loading configuration.
E1129 10:04:01.120001       1 factory.go:112] Incompatible strategy detected auto
E1129 10:04:01.120050       1 factory.go:113] If this is a GPU node, did you configure the \
NVIDIA Container Toolkit?
E1129 10:04:01.120099       1 main.go:177] error starting plugins: error creating plugin manager: \
unable to create plugin manager: nvml init failed: could not load NVML library: \
libnvidia-ml.so.1: cannot open shared object file: No such file or directory
"""


def test_device_plugin_crashloop_without_nvml_means_runtime_does_not_inject() -> None:
    plugin = pod(
        "nvidia-device-plugin-daemonset-x2k9p",
        labels={"app": "nvidia-device-plugin-daemonset"},
        statuses=[
            {
                "name": "nvidia-device-plugin",
                "ready": False,
                "restartCount": 6,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 2m40s"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    )
    logs = {f"{NS}/nvidia-device-plugin-daemonset-x2k9p/nvidia-device-plugin": PLUGIN_LOG}
    diags = diagnose.diagnose_cluster(
        pods=[plugin],
        events=[],
        daemonsets=[daemonset("nvidia-device-plugin-daemonset", ready=0)],
        nodes=[node(allocatable=None, capacity=None)],
        logs=logs,
    )
    assert rows(diags) == ["device-plugin-crashloop", "allocatable-zero"]
    d = diags[0]
    assert d.variant == "nvml-not-injected"
    assert d.object == (
        "pod gpu-operator/nvidia-device-plugin-daemonset-x2k9p/container nvidia-device-plugin"
    )
    assert "does not inject the driver" in d.reason
    assert "6 restart(s)" in d.reason
    assert "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker" in d.fix
    assert "could not load NVML library" in d.detail


def test_device_plugin_crashloop_for_another_reason_quotes_the_log() -> None:
    plugin = pod(
        "nvidia-device-plugin-daemonset-x2k9p",
        labels={"app": "nvidia-device-plugin-daemonset"},
        statuses=[waiting("nvidia-device-plugin", "CrashLoopBackOff", restartCount=2)],
    )
    logs = {
        f"{NS}/nvidia-device-plugin-daemonset-x2k9p/nvidia-device-plugin": (
            "E1129 10:04:01 main.go:132] error parsing config file: unmarshal error\n"
        )
    }
    diags = diagnose.diagnose_cluster(pods=[plugin], events=[], daemonsets=[], nodes=[node()], logs=logs)
    assert diags[0].row == "device-plugin-crashloop"
    assert diags[0].variant == "other"
    assert "error parsing config file" in diags[0].detail
    assert "--previous" in diags[0].fix


# --- DCGM exporter ----------------------------------------------------------------------------


def test_dcgm_exporter_failure_is_not_blocking_and_comes_last() -> None:
    dcgm = pod(
        "nvidia-dcgm-exporter-7k2lq",
        labels={"app": "nvidia-dcgm-exporter"},
        statuses=[
            {
                "name": "nvidia-dcgm-exporter",
                "ready": False,
                "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    )
    logs = {
        f"{NS}/nvidia-dcgm-exporter-7k2lq/nvidia-dcgm-exporter": (
            'time="2026-11-29T10:07:00Z" level=info msg="Starting dcgm-exporter"\n'
            'time="2026-11-29T10:07:01Z" level=fatal msg="Failed to watch metrics: Error watching '
            'fields: Profiling module returned an unrecoverable error"\n'
        )
    }
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(
        pods=[dcgm, *pods],
        events=[],
        daemonsets=[*dsets, daemonset("nvidia-dcgm-exporter", ready=0)],
        nodes=[node(allocatable="0", capacity="1")],
        logs=logs,
    )
    assert rows(diags) == ["allocatable-zero", "dcgm-exporter-failing"]
    d = diags[-1]
    assert d.blocking is False
    assert d.variant == "profiling-unsupported"
    assert "Profiling module returned an unrecoverable error" in d.detail
    assert "not blocking" in diagnose.render(diags)


# --- other pod failures -----------------------------------------------------------------------


def test_image_pull_failure() -> None:
    smoke = pod(
        "gpu-smoke",
        "default",
        phase="Pending",
        gpus=1,
        statuses=[
            waiting(
                "cuda",
                "ImagePullBackOff",
                'Back-off pulling image "nvidia/cuda:12.4.1-base-ubuntu22.04"',
                image="nvidia/cuda:12.4.1-base-ubuntu22.04",
            )
        ],
    )
    pods, dsets = healthy_operator()
    diags = diagnose.diagnose_cluster(pods=[*pods, smoke], events=[], daemonsets=dsets, nodes=[node()])
    assert rows(diags) == ["image-pull-failed"]
    assert "minikube image load nvidia/cuda:12.4.1-base-ubuntu22.04" in diags[0].fix
