"""The compute check (gpulab.kube.compute, ``python -m gpulab.kube compute``) against a fake API."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpulab.kube import cli
from gpulab.kube import client as kube_client
from gpulab.kube import compute as kube_compute
from gpulab.kube.client import GateError
from gpulab.kube.compute import read_vectoradd_log
from variants import registry

ROOT = Path(__file__).resolve().parents[3]
#: NVIDIA's documented vectorAdd output (the sim lab serves the same text).
PASSED_LOG = (ROOT / "gpulab" / "host" / "captures" / "cuda-vectoradd.txt").read_text()
#: What vectorAdd prints when the image's CUDA is newer than the driver (cudaGetErrorString).
TOO_NEW_LOG = (
    "[Vector addition of 50000 elements]\n"
    "Failed to allocate device vector A (error code CUDA driver version is insufficient for CUDA "
    "runtime version)!\n"
)
#: The H200 capture's ``nvidia-smi -L`` (tests/data/nvidia-smi/h200-2gpu): what a container
#: given GPU ``i`` lists before vectorAdd runs (gpulab.kube.compute.COMPUTE_SCRIPT).
LISTING = (ROOT / "tests" / "data" / "nvidia-smi" / "h200-2gpu" / "nvidia-smi-L.txt").read_text().splitlines()
UUIDS = [line.split("(UUID: ")[1].rstrip(")") for line in LISTING]
#: The MIG capture's listing (gpulab/host/captures/h200-1gpu-mig): GPU 0 and its seven MIG devices.
MIG_LISTING = (
    (ROOT / "gpulab" / "host" / "captures" / "h200-1gpu-mig" / "nvidia-smi-L.txt").read_text().splitlines()
)


def container_log(*gpus: int) -> str:
    """A vectorAdd container's log that listed the capture's GPUs ``gpus``, then passed."""
    return "".join(f"{LISTING[i]}\n" for i in gpus) + PASSED_LOG


NO_DEVICE_LOG = (
    "[Vector addition of 50000 elements]\n"
    "Failed to allocate device vector A (error code no CUDA-capable device is detected)!\n"
)


def test_the_documented_output_passes() -> None:
    read = read_vectoradd_log(PASSED_LOG)
    assert read.passed and not read.simulated and read.hint == ""
    assert read.tail.splitlines()[-1] == "Done"


def test_a_simulated_log_says_so_on_its_first_line() -> None:
    read = read_vectoradd_log(
        "# gpu-lab simulated: kwok serves this capture; no container ran\n" + PASSED_LOG
    )
    assert read.passed and read.simulated


@pytest.mark.parametrize(
    "log",
    ["", "Test FAILED\n", "[Vector addition of 50000 elements]\n", "echo Test PASSED later\n"],
)
def test_no_exact_test_passed_line_is_no_pass(log: str) -> None:
    assert not read_vectoradd_log(log).passed


def test_cuda_errors_name_their_meaning_and_first_fix() -> None:
    assert "computeImage" in read_vectoradd_log(TOO_NEW_LOG).hint
    assert "/dev/nvidia-uvm" in read_vectoradd_log(NO_DEVICE_LOG).hint


def test_the_tail_is_the_last_lines() -> None:
    log = "\n".join(f"line {i}" for i in range(50))
    tail = read_vectoradd_log(log).tail.splitlines()
    assert len(tail) == kube_compute.TAIL_LINES and tail[-1] == "line 49"


class _Api:
    """An ApiClient stand-in: the fake CoreV1Api hands back plain dicts already."""

    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A one-Pod cluster: set ``phase`` and ``log`` (one text, or container name -> text) and
    ``containers`` (names; default one, ``vectoradd-0``), ``exit`` (container -> exit code);
    the diagnosis is a marker. ``read`` records the containers whose log was read."""
    state: dict[str, Any] = {
        "phase": "Succeeded",
        "log": container_log(0),
        "containers": ["vectoradd-0"],
        "read": [],
    }

    class Core:
        def __init__(self, api: Any) -> None:
            pass

        def read_namespaced_pod(self, name: str, namespace: str) -> dict[str, Any]:
            meta = {"annotations": state.get("annotations", {})}
            names = state["containers"]
            codes = state.get("exit", {})
            statuses = [
                {"name": n, "state": {"terminated": {"exitCode": codes.get(n, 0)}}}
                for n in names
                if state["phase"] in ("Succeeded", "Failed")
            ]
            return {
                "metadata": meta,
                "spec": {"nodeName": "n1", "containers": [{"name": n} for n in names]},
                "status": {"phase": state["phase"], "containerStatuses": statuses},
            }

        def list_namespaced_event(self, namespace: str, **kw: Any) -> Any:
            return SimpleNamespace(items=state.get("events", []))

        def read_node(self, name: str) -> dict[str, Any]:
            return {"metadata": {"name": name}, "status": {"conditions": state.get("conditions", [])}}

        def read_namespaced_pod_log(self, name: str, namespace: str, **kw: Any) -> Any:
            assert kw.pop("_preload_content") is False, "the log is read raw (diagnose.live.pod_log)"
            state["read"].append(kw.get("container"))
            log = state["log"]
            if isinstance(log, dict):
                log = log[kw["container"]]
            return SimpleNamespace(data=str(log() if callable(log) else log).encode())

    from kubernetes import client

    monkeypatch.setattr(client, "CoreV1Api", Core)
    monkeypatch.setattr(kube_client, "_diagnose", lambda api, ctx: "DIAGNOSIS")
    monkeypatch.setattr(kube_compute, "diagnosis", lambda api, ctx: "DIAGNOSIS")
    return state


def test_a_succeeded_pod_with_test_passed_is_passed(cluster: dict[str, Any]) -> None:
    facts = kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    assert facts.compute_phase == "Succeeded" and facts.compute_result == "passed"
    assert facts.compute_node == "n1" and facts.compute_log_simulated is False
    assert facts.compute_gpus == 1 and cluster["read"] == ["vectoradd-0"]
    assert facts.measured_at.endswith("+00:00")


def test_each_container_s_log_is_read_and_counted(cluster: dict[str, Any]) -> None:
    cluster["containers"] = ["vectoradd-0", "vectoradd-1"]
    cluster["log"] = {
        "vectoradd-0": container_log(0),
        "vectoradd-1": "# gpu-lab simulated: kwok\n" + container_log(1),
    }
    facts = kube_compute.compute(
        _Api(), "default", "gpu-compute", 5, isolation=kube_compute.Isolation(host=tuple(UUIDS))
    )
    assert facts.compute_gpus == 2 and facts.compute_result == "passed"
    assert cluster["read"] == ["vectoradd-0", "vectoradd-1"]
    assert facts.compute_log_simulated is True  # any simulated log marks the facts simulated
    assert facts.compute_gpu_uuids == {
        "vectoradd-0": {"gpus": [UUIDS[0]], "mig": []},
        "vectoradd-1": {"gpus": [UUIDS[1]], "mig": []},
    }


def test_two_containers_that_saw_the_same_gpu_fail_with_the_runtime_diagnosis(
    cluster: dict[str, Any],
) -> None:
    # The leak class: the runtime read the image's NVIDIA_VISIBLE_DEVICES=all, not the device
    # plugin's list. Here each container lists the same single GPU (a wrong device list).
    cluster["containers"] = ["vectoradd-0", "vectoradd-1"]
    cluster["log"] = {"vectoradd-0": container_log(0), "vectoradd-1": container_log(0)}
    with pytest.raises(GateError) as err:
        kube_compute.compute(
            _Api(),
            "default",
            "gpu-compute",
            5,
            isolation=kube_compute.Isolation(
                host=tuple(UUIDS),
                cluster="kind",
                device_list="envvar",
                device_list_reason=registry.get("kind").spec.device_list_reason,
            ),
        )
    text = str(err.value)
    assert text.startswith("compute Pod default/gpu-compute succeeded, but the containers did not each see")
    assert f"vectoradd-0 and vectoradd-1 both saw {UUIDS[0]} (each was given its own)" in text
    assert "DEVICE_LIST_STRATEGY=envvar" in text and "NVIDIA_VISIBLE_DEVICES=all" in text
    # The variant's own reason, and the first fix as a command.
    assert "On kind: the kind worker's containerd runs runtime class nvidia" in text
    assert (
        "scripts/kubectl -n gpu-operator get ds nvidia-device-plugin-daemonset" in text
        and "DIAGNOSIS" in text
    )


def test_a_container_that_saw_two_gpus_fails(cluster: dict[str, Any]) -> None:
    # Every GPU of the host in one container: what `NVIDIA_VISIBLE_DEVICES=all` injects.
    cluster["containers"] = ["vectoradd-0", "vectoradd-1"]
    cluster["log"] = {"vectoradd-0": container_log(0, 1), "vectoradd-1": container_log(0, 1)}
    with pytest.raises(GateError) as err:
        kube_compute.compute(
            _Api(),
            "default",
            "gpu-compute",
            5,
            isolation=kube_compute.Isolation(
                cluster="minikube", device_list_reason=registry.get("minikube").spec.device_list_reason
            ),
        )
    text = str(err.value)
    assert f"vectoradd-0 saw 2 GPUs ({UUIDS[0]}, {UUIDS[1]}), it was given 1" in text
    assert f"vectoradd-1 saw 2 GPUs ({UUIDS[0]}, {UUIDS[1]}), it was given 1" in text
    assert "DEVICE_LIST_STRATEGY=the chart's" in text and "On minikube: with the docker runtime" in text


def test_one_container_with_every_gpu_fails_even_alone(cluster: dict[str, Any]) -> None:
    cluster["log"] = container_log(0, 1)
    with pytest.raises(GateError, match="vectoradd-0 saw 2 GPUs"):
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)


def test_a_gpu_the_host_does_not_have_fails(cluster: dict[str, Any]) -> None:
    cluster["log"] = container_log(1)
    with pytest.raises(GateError, match=f"vectoradd-0 saw {UUIDS[1]}, not a GPU of the host"):
        kube_compute.compute(
            _Api(), "default", "gpu-compute", 5, isolation=kube_compute.Isolation(host=(UUIDS[0],))
        )


def test_a_container_that_listed_no_gpu_fails_naming_the_missing_listing(cluster: dict[str, Any]) -> None:
    cluster["log"] = PASSED_LOG  # vectorAdd ran, but nvidia-smi -L printed nothing
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    text = str(err.value)
    assert "vectoradd-0 listed no GPU (no nvidia-smi -L line), it was given 1" in text
    assert "without the driver utilities" in text and "NVIDIA_VISIBLE_DEVICES=all" not in text


def test_a_mig_container_lists_its_device_under_its_gpu(cluster: dict[str, Any]) -> None:
    cluster["log"] = "\n".join(MIG_LISTING[:2]) + "\n" + PASSED_LOG
    facts = kube_compute.compute(
        _Api(), "default", "gpu-compute", 5, isolation=kube_compute.Isolation(unit="mig")
    )
    assert facts.compute_gpu_uuids["vectoradd-0"] == {
        "gpus": ["GPU-00000000-0000-4000-8000-000000000000"],
        "mig": ["MIG-00000000-0000-4000-8000-000000000001"],
    }
    cluster["log"] = "\n".join(MIG_LISTING) + "\n" + PASSED_LOG  # every MIG device: a leak
    with pytest.raises(GateError, match="vectoradd-0 saw 7 MIG devices"):
        kube_compute.compute(
            _Api(), "default", "gpu-compute", 5, isolation=kube_compute.Isolation(unit="mig")
        )


def test_time_slicing_replicas_may_share_a_gpu(cluster: dict[str, Any]) -> None:
    cluster["containers"] = ["vectoradd-0", "vectoradd-1"]
    cluster["log"] = {"vectoradd-0": container_log(0), "vectoradd-1": container_log(0)}
    facts = kube_compute.compute(
        _Api(), "default", "gpu-compute", 5, isolation=kube_compute.Isolation(unit="shared")
    )
    assert facts.compute_result == "passed"


def test_the_compute_subcommand_reads_what_each_container_was_given() -> None:
    import argparse

    p = argparse.ArgumentParser()
    kube_compute.add_arguments(p)
    args = p.parse_args(
        ["--unit", "gpu", "--host-gpu-uuid", UUIDS[0], "--host-gpu-uuid", UUIDS[1], "--cluster", "k3s"]
    )
    assert kube_compute.isolation_from_args(args) == kube_compute.Isolation("gpu", tuple(UUIDS), "k3s", None)
    assert kube_compute.isolation_from_args(p.parse_args([])).host is None


def test_the_container_script_lists_then_runs_the_sample_and_is_a_constant() -> None:
    # No configured value reaches the shell; vectorAdd runs even when nvidia-smi is missing.
    assert kube_compute.COMPUTE_SCRIPT == "nvidia-smi -L; exec /cuda-samples/vectorAdd"


def test_a_succeeded_pod_names_the_container_whose_log_lacks_test_passed(cluster: dict[str, Any]) -> None:
    cluster["containers"] = ["vectoradd-0", "vectoradd-1", "vectoradd-2"]
    cluster["log"] = {
        "vectoradd-0": PASSED_LOG,
        "vectoradd-1": "[Vector addition of 50000 elements]\nResult verification failed at element 7!\n",
        "vectoradd-2": PASSED_LOG,
    }
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    text = str(err.value)
    assert "vectorAdd passed in 2 of 3 containers; failed: vectoradd-1" in text
    assert "--- container vectoradd-1 (no 'Test PASSED' line, exit code 0); log tail:" in text
    assert "Result verification failed" in text and "container vectoradd-0 " not in text
    assert "DIAGNOSIS" in text


def test_a_failed_pod_names_each_failed_container_with_its_hint(cluster: dict[str, Any]) -> None:
    cluster["phase"], cluster["containers"] = "Failed", ["vectoradd-0", "vectoradd-1"]
    cluster["log"] = {"vectoradd-0": PASSED_LOG, "vectoradd-1": NO_DEVICE_LOG}
    cluster["exit"] = {"vectoradd-1": 1}
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    text = str(err.value)
    assert text.startswith("compute Pod default/gpu-compute failed; log tail of each failed container:")
    assert "vectorAdd passed in 1 of 2 containers; failed: vectoradd-1" in text
    assert "--- container vectoradd-1 (no 'Test PASSED' line, exit code 1)" in text
    assert "no CUDA-capable device" in text and "/dev/nvidia-uvm" in text and "DIAGNOSIS" in text


def test_failure_report_is_empty_when_every_container_passed() -> None:
    ok = kube_compute.ContainerRun("vectoradd-0", read_vectoradd_log(PASSED_LOG), 0)
    assert ok.passed and kube_compute.failure_report([ok]) == ""
    crashed = kube_compute.ContainerRun("vectoradd-1", read_vectoradd_log(PASSED_LOG), 139)
    assert not crashed.passed
    report = kube_compute.failure_report([ok, crashed])
    assert report.startswith("vectorAdd passed in 1 of 2 containers; failed: vectoradd-1")
    assert "(exit code 139)" in report


def test_exit_codes_leave_out_containers_still_running() -> None:
    pod = {
        "status": {
            "containerStatuses": [
                {"name": "vectoradd-0", "state": {"terminated": {"exitCode": 0}}},
                {"name": "vectoradd-1", "state": {"running": {}}},
            ]
        }
    }
    assert kube_compute.exit_codes(pod) == {"vectoradd-0": 0}


def test_a_succeeded_pod_without_test_passed_fails_with_the_tail_and_diagnosis(
    cluster: dict[str, Any],
) -> None:
    cluster["log"] = "[Vector addition of 50000 elements]\nResult verification failed at element 7!\n"
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    text = str(err.value)
    assert "has no 'Test PASSED' line" in text and "Result verification failed" in text
    assert "DIAGNOSIS" in text


def test_a_failed_pod_fails_with_the_tail_the_cuda_hint_and_diagnosis(cluster: dict[str, Any]) -> None:
    cluster["phase"], cluster["log"] = "Failed", TOO_NEW_LOG
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    text = str(err.value)
    assert "compute Pod default/gpu-compute failed; log tail" in text
    assert "driver version is insufficient" in text and "computeImage" in text and "DIAGNOSIS" in text


def test_the_cli_prints_the_facts_or_the_diagnosis(
    cluster: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "load_clients", lambda: _Api())
    assert cli.main(["compute", "--timeout", "5", "--profile", "lab"]) == 0
    assert '"computeResult": "passed"' in capsys.readouterr().out
    cluster["phase"] = "Failed"
    assert cli.main(["compute", "--timeout", "5"]) == 1
    assert "failed; log tail" in capsys.readouterr().err


def test_a_pod_without_a_served_log_fails_saying_why(cluster: dict[str, Any]) -> None:
    from kubernetes.client.rest import ApiException

    def no_log() -> str:
        raise ApiException(status=400, reason="Bad Request")

    cluster["log"] = no_log
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    assert "(no log: 400 Bad Request" in str(err.value)
    assert "the node served no log" in str(err.value)

    cluster["annotations"] = {"gpulab.dev/simulated-execution": "true"}
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 5)
    assert "make destroy && make lab" in str(err.value)


def test_a_pod_that_never_finishes_times_out_with_the_diagnosis(cluster: dict[str, Any]) -> None:
    cluster["phase"] = "Running"
    with pytest.raises(GateError) as err:
        kube_compute.compute(_Api(), "default", "gpu-compute", 0.3)
    assert "timed out" in str(err.value) and "DIAGNOSIS" in str(err.value)
    assert cluster["read"] == []  # no log read before the Pod finished
