"""Tests for gpulab.preflight over small recorded command outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpulab import preflight
from gpulab.preflight import Finding, PreflightError

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "nvidia-smi"
TABLE = (FIXTURES / "h200-1gpu" / "nvidia-smi.txt").read_text()

CTK_FIX = "sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker"


# --- nvidia-smi -------------------------------------------------------------------------


def test_nvidia_smi_not_found() -> None:
    finding = preflight.check_nvidia_smi(None, "", "")
    assert not finding.ok
    assert finding.check == "nvidia-smi"
    assert finding.message == "nvidia-smi not found on PATH"
    assert finding.fix.startswith("install the NVIDIA driver")
    assert "driver.enabled=false" in finding.fix


def test_nvidia_smi_driver_not_loaded_is_not_parsed_as_a_table() -> None:
    out = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    finding = preflight.check_nvidia_smi(9, out, "")
    assert not finding.ok
    assert "exited 9" in finding.message
    assert "not loaded" in finding.message
    assert "modprobe nvidia" in finding.fix


def test_nvidia_smi_nonzero_exit_wins_over_a_table_in_stdout() -> None:
    finding = preflight.check_nvidia_smi(18, TABLE, "Failed to initialize NVML: Unknown Error")
    assert not finding.ok
    assert "Failed to initialize NVML: Unknown Error" in finding.message


def test_nvidia_smi_version_mismatch() -> None:
    finding = preflight.check_nvidia_smi(
        18, "", "Failed to initialize NVML: Driver/library version mismatch\n"
    )
    assert not finding.ok
    assert "reboot" in finding.fix


def test_nvidia_smi_no_devices() -> None:
    finding = preflight.check_nvidia_smi(6, "No devices were found\n", "")
    assert not finding.ok
    assert "no GPU" in finding.message
    assert "lspci" in finding.fix


def test_nvidia_smi_ok_reports_versions() -> None:
    finding = preflight.check_nvidia_smi(0, TABLE, "")
    assert finding == Finding("nvidia-smi", True, "nvidia-smi ran: driver 580.159.04, CUDA 13.0")


def test_nvidia_smi_ok_with_unreadable_output_is_still_ok() -> None:
    finding = preflight.check_nvidia_smi(0, "something new\n", "")
    assert finding.ok
    assert finding.fix == ""


# --- docker info ------------------------------------------------------------------------


def docker_info(*, nvidia: bool, cdi: bool = True) -> str:
    runtimes: dict[str, object] = {
        "io.containerd.runc.v2": {
            "path": "runc",
            "status": {"org.opencontainers.runtime-spec.features": "{}"},
        },
        "runc": {"path": "runc", "status": {"org.opencontainers.runtime-spec.features": "{}"}},
    }
    if nvidia:
        runtimes["nvidia"] = {"path": "nvidia-container-runtime"}
    info: dict[str, object] = {
        "ID": "0d6f2b7e-3c1a-4f5e-9b8d-7a6c5e4d3b2a",
        "Containers": 2,
        "Driver": "overlay2",
        "CgroupDriver": "systemd",
        "CgroupVersion": "2",
        "ServerVersion": "28.3.3",
        "Runtimes": runtimes,
        "DefaultRuntime": "runc",
        "SecurityOptions": ["name=apparmor", "name=seccomp,profile=builtin", "name=cgroupns"],
        "ClientInfo": {"Debug": False, "Context": "default"},
    }
    if cdi:
        info["CDISpecDirs"] = ["/etc/cdi", "/var/run/cdi"]
    return json.dumps(info)


DAEMON_JSON_WITH_NVIDIA = """{
    "runtimes": {
        "nvidia": {
            "args": [],
            "path": "nvidia-container-runtime"
        }
    }
}
"""


def test_docker_info_nvidia_runtime_loaded() -> None:
    finding = preflight.check_docker_info(0, docker_info(nvidia=True), DAEMON_JSON_WITH_NVIDIA)
    assert finding.ok
    assert finding.check == "docker-nvidia-runtime"
    assert "default runtime runc" in finding.message
    assert "/etc/cdi, /var/run/cdi" in finding.message


def test_docker_info_ok_without_cdi_dirs_does_not_mention_them() -> None:
    finding = preflight.check_docker_info(0, docker_info(nvidia=True, cdi=False), None)
    assert finding.ok
    assert "CDI" not in finding.message


def test_docker_info_configured_but_not_loaded() -> None:
    finding = preflight.check_docker_info(0, docker_info(nvidia=False), DAEMON_JSON_WITH_NVIDIA)
    assert not finding.ok
    assert "configured but not loaded by the running daemon (context default" in finding.message
    assert "restart or configure that daemon" in finding.message
    assert "io.containerd.runc.v2, runc" in finding.message
    assert "systemctl restart docker" in finding.fix


def test_docker_info_configured_but_other_context() -> None:
    finding = preflight.check_docker_info(
        0, docker_info(nvidia=False), DAEMON_JSON_WITH_NVIDIA, context="desktop-linux"
    )
    assert not finding.ok
    assert "(context desktop-linux" in finding.message
    assert "docker context desktop-linux" in finding.fix


@pytest.mark.parametrize("daemon_json", [None, "", '{"log-driver": "json-file"}'])
def test_docker_info_no_nvidia_runtime_anywhere(daemon_json: str | None) -> None:
    finding = preflight.check_docker_info(0, docker_info(nvidia=False), daemon_json)
    assert not finding.ok
    assert "no nvidia runtime" in finding.message
    assert finding.fix.endswith(CTK_FIX)


def test_docker_info_broken_daemon_json() -> None:
    finding = preflight.check_docker_info(0, docker_info(nvidia=False), '{"runtimes": {')
    assert not finding.ok
    assert "not valid JSON" in finding.message
    assert finding.fix.startswith("fix /etc/docker/daemon.json")


DAEMON_DOWN = (
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
)


def test_docker_info_daemon_down_server_errors_in_json() -> None:
    out = json.dumps(
        {
            "ID": "",
            "Containers": 0,
            "ServerErrors": [DAEMON_DOWN],
            "ClientInfo": {"Context": "default"},
        }
    )
    finding = preflight.check_docker_info(1, out, DAEMON_JSON_WITH_NVIDIA)
    assert not finding.ok
    assert "not reachable" in finding.message
    assert "Cannot connect to the Docker daemon" in finding.message
    assert "systemctl start docker" in finding.fix


def test_docker_info_daemon_down_message_on_stderr() -> None:
    finding = preflight.check_docker_info(
        1,
        "",
        None,
        stderr=DAEMON_DOWN + "\n",
    )
    assert not finding.ok
    assert "systemctl start docker" in finding.fix


def test_docker_info_permission_denied() -> None:
    err = (
        "permission denied while trying to connect to the Docker daemon socket at "
        'unix:///var/run/docker.sock: Get "http://%2Fvar%2Frun%2Fdocker.sock/v1.47/info": '
        "dial unix /var/run/docker.sock: connect: permission denied"
    )
    finding = preflight.check_docker_info(1, "", None, stderr=err)
    assert not finding.ok
    assert "usermod -aG docker" in finding.fix


def test_docker_info_cli_missing() -> None:
    finding = preflight.check_docker_info(None, "", None)
    assert not finding.ok
    assert "docker not found" in finding.message


def test_docker_info_not_json() -> None:
    finding = preflight.check_docker_info(0, "Client:\n Version: 28.3.3\n", None)
    assert not finding.ok
    assert "'Client:'" in finding.message


# --- resources --------------------------------------------------------------------------


def test_resources_enough() -> None:
    finding = preflight.check_resources(16, 65536, 4, 8192)
    assert finding.ok
    assert finding.check == "host-resources"


def test_resources_exactly_enough() -> None:
    assert preflight.check_resources(4, 8192, 4, 8192).ok


def test_resources_host_too_small() -> None:
    finding = preflight.check_resources(2, 16384, 4, 8192)
    assert not finding.ok
    assert "host has 2 CPUs" in finding.message
    assert "below the" not in finding.message


def test_resources_ask_below_chapter_minimum() -> None:
    finding = preflight.check_resources(16, 65536, 2, 4096)
    assert not finding.ok
    assert "asked for 2 CPUs / 4096 MiB" in finding.message
    assert "--cpus=4 --memory=8192" in finding.fix


def test_resources_reports_both_problems() -> None:
    finding = preflight.check_resources(2, 2048, 2, 4096)
    assert not finding.ok
    assert "asked for 2 CPUs" in finding.message
    assert "host has 2 CPUs / 2048 MiB" in finding.message


# --- minikube ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "v1.37.0\n",
        # kubernetes/minikube v1.38.1's `minikube version` (long form).
        "minikube version: v1.38.1\ncommit: c93a4cb9311efc66b90d33ea03f75f2c4120e9b0\n",
        "v1.40.1",
    ],
)
def test_minikube_new_enough(output: str) -> None:
    finding = preflight.check_minikube_version(output)
    assert finding.ok
    assert finding.check == "minikube-version"


@pytest.mark.parametrize(
    ("output", "shown"),
    [
        # v1.36.0 bundles cri-dockerd v0.4.0 but supports Kubernetes up to v1.33.1 only
        # (kubernetes/minikube v1.36.0 deploy/kicbase/Dockerfile, constants.go).
        ("minikube version: v1.36.0\ncommit: f8f52f5de11fc6ad8244afac475e1d0f96841df1\n", "v1.36.0"),
        # v1.35.0: cri-dockerd v0.3.15, which refuses RuntimeHandler "nvidia".
        ("v1.35.0\n", "v1.35.0"),
        # v1.32.0 was the old floor (the first with --gpus).
        ("v1.32.0\n", "v1.32.0"),
        ("v1.37.0-beta.0\n", "v1.37.0-beta.0"),
        ("v0.35.0", "v0.35.0"),
    ],
)
def test_minikube_too_old(output: str, shown: str) -> None:
    finding = preflight.check_minikube_version(output)
    assert not finding.ok
    assert f"minikube {shown} is older than v1.37.0" in finding.message
    assert 'RuntimeHandler "nvidia" not supported' in finding.message
    assert finding.fix.startswith("upgrade minikube to v1.37.0 or newer")


def test_minikube_too_old_names_what_the_release_bundles() -> None:
    finding = preflight.check_minikube_version("v1.35.0", "cri-dockerd v0.3.15")
    assert "older than v1.37.0 (it bundles cri-dockerd v0.3.15)" in finding.message


@pytest.mark.parametrize("output", ["", "command not found: minikube", "1.37"])
def test_minikube_unparseable_quotes_output(output: str) -> None:
    finding = preflight.check_minikube_version(output)
    assert not finding.ok
    assert "cannot read the minikube version" in finding.message
    assert (repr(output) if output else "(no output)") in finding.message


# --- docker GPU self-test ---------------------------------------------------------------

UNSATISFIED_CUDA = (
    "docker: Error response from daemon: failed to create task for container: failed to "
    "create shim task: OCI runtime create failed: runc create failed: unable to start "
    "container process: error during container init: error running prestart hook #0: exit "
    "status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
    "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=13.1, please "
    "update your driver to a newer version, or use an earlier cuda container: unknown.\n"
)


def test_selftest_ok() -> None:
    finding = preflight.check_docker_gpu_selftest(0, TABLE, "", "nvidia/cuda:13.0.2-base-ubuntu24.04")
    assert finding.ok
    assert finding.check == "docker-gpu-selftest"
    assert "driver 580.159.04, CUDA 13.0" in finding.message


def test_selftest_image_newer_than_driver_names_fitting_tag() -> None:
    image = "nvidia/cuda:13.1.0-base-ubuntu24.04"
    finding = preflight.check_docker_gpu_selftest(125, "", UNSATISFIED_CUDA, image, max_cuda="13.0")
    assert not finding.ok
    assert "needs CUDA >= 13.1" in finding.message
    assert "image newer than driver" in finding.message
    assert finding.fix.startswith("use nvidia/cuda:13.0.2-base-ubuntu24.04")


def test_selftest_image_newer_than_driver_without_max_cuda() -> None:
    finding = preflight.check_docker_gpu_selftest(
        125, "", UNSATISFIED_CUDA.replace("13.1", "12.9"), "nvidia/cuda:12.9.1-base-ubuntu22.04"
    )
    assert not finding.ok
    assert "CUDA Version in the host's nvidia-smi header" in finding.fix
    assert "upgrade the driver to >= 575.51.03" in finding.fix


def test_selftest_no_gpu_support_in_docker() -> None:
    err = (
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].\n'
    )
    finding = preflight.check_docker_gpu_selftest(125, "", err, "nvidia/cuda:12.4.1-base-ubuntu22.04")
    assert not finding.ok
    assert finding.fix.endswith(CTK_FIX)


def test_selftest_nvidia_smi_fails_in_container() -> None:
    out = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    finding = preflight.check_docker_gpu_selftest(9, out, "", "nvidia/cuda:12.4.1-base-ubuntu22.04")
    assert not finding.ok
    assert finding.check == "docker-gpu-selftest"
    assert "modprobe nvidia" in finding.fix


def test_selftest_nvidia_smi_missing_in_container() -> None:
    err = (
        "docker: Error response from daemon: failed to create task for container: failed to "
        "create shim task: OCI runtime create failed: runc create failed: unable to start "
        'container process: error during container init: exec: "nvidia-smi": executable file '
        "not found in $PATH: unknown.\n"
    )
    finding = preflight.check_docker_gpu_selftest(127, "", err, "ubuntu:22.04")
    assert not finding.ok
    assert "nvidia-smi is not in the container" in finding.message
    assert "NVIDIA_DRIVER_CAPABILITIES" in finding.fix


def test_selftest_daemon_down() -> None:
    finding = preflight.check_docker_gpu_selftest(1, "", DAEMON_DOWN, "nvidia/cuda:12.4.1")
    assert not finding.ok
    assert finding.check == "docker-gpu-selftest"
    assert "context" not in finding.message
    assert "systemctl start docker" in finding.fix


def test_selftest_unknown_failure_quotes_stderr() -> None:
    err = "docker: Error response from daemon: manifest for nvidia/cuda:12.4.9 not found.\n"
    finding = preflight.check_docker_gpu_selftest(125, "", err, "nvidia/cuda:12.4.9")
    assert not finding.ok
    assert "manifest for nvidia/cuda:12.4.9 not found" in finding.message


# --- raising ----------------------------------------------------------------------------


def test_raise_on_failures_lists_every_failure_with_fix() -> None:
    findings = [
        Finding("nvidia-smi", True, "nvidia-smi ran"),
        preflight.check_nvidia_smi(None, "", ""),
        preflight.check_minikube_version("v1.36.0"),
    ]
    with pytest.raises(PreflightError) as err:
        preflight.raise_on_failures(findings)
    message = str(err.value)
    assert message.startswith("2 preflight check(s) failed:")
    assert "- nvidia-smi: nvidia-smi not found on PATH" in message
    assert "fix: install the NVIDIA driver" in message
    assert "- minikube-version: minikube v1.36.0 is older than v1.37.0" in message
    assert "nvidia-smi ran" not in message
    assert [f.check for f in err.value.failures] == ["nvidia-smi", "minikube-version"]


def test_raise_on_failures_passes_when_all_ok() -> None:
    preflight.raise_on_failures([Finding("host-resources", True, "fine")])
    preflight.raise_on_failures([])
