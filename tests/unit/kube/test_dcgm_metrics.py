"""gpulab.kube.dcgm_metrics: the DCGM exporter's Prometheus text parsed, per-GPU readings, the summary.

Inputs in tests/data/dcgm/ (README.md there names each source): outputs laid out from those
quoted in NVIDIA/dcgm-exporter#250 (4x V100), #512 (H100 in MIG mode with the driver label and
no framebuffer samples for its instances) and #736 (mixed models, lowercase ``hostname``), and
the lab's own H200 node with the GPU Operator's default counters.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpulab.kube import dcgm_metrics as dcgm
from gpulab.kube.dcgm_metrics import DcgmParseError

DATA = Path(__file__).resolve().parents[2] / "data" / "dcgm"
H200 = "GPU-00000000-0000-4000-8000-000000000000"


def read(name: str) -> list[dcgm.Sample]:
    return dcgm.parse_exposition((DATA / name).read_text())


def test_v100_default_counters_four_gpus_no_driver_label() -> None:
    """NVIDIA/dcgm-exporter#250: labels gpu, UUID, device, modelName, Hostname."""
    samples = read("v100-4gpu.txt")
    assert len(samples) == 16 * 4
    first = samples[0]
    assert first.name == "DCGM_FI_DEV_SM_CLOCK" and first.value == 135.0
    assert first.labels == {
        "gpu": "0",
        "UUID": "GPU-a6158b59-2c1e-1e63-0068-9178c4298abd",
        "device": "nvidia0",
        "modelName": "Tesla V100-SXM2-32GB",
        "Hostname": "r6i3n0",
    }
    gpus = dcgm.gpu_readings(samples)
    assert len(gpus) == 4
    g2 = gpus["GPU-a9079f15-493e-6c1c-c78c-73ec2b840cba"]
    assert (g2.gpu, g2.model_name, g2.hostname, g2.pci_bus_id, g2.driver_version) == (
        "2",
        "Tesla V100-SXM2-32GB",
        "r6i3n0",
        None,
        None,
    )
    assert (g2.util_percent, g2.fb_used_mib, g2.power_w, g2.temp_c) == (0.0, 0.0, 41.532, 32.0)
    assert g2.mig_instances == 0


def test_the_labs_h200_with_the_driver_label_and_pod_mapping() -> None:
    gpus = dcgm.gpu_readings(read("h200-1gpu.txt"))
    (g,) = gpus.values()
    assert g.uuid == H200 and g.driver_version == "580.159.04" and g.pci_bus_id == "00000000:00:06.0"
    assert (g.util_percent, g.fb_used_mib, g.power_w, g.temp_c) == (7.0, 493.0, 143.826, 39.0)
    assert g.hostname == "gpu-lab"


def test_mig_gpu_seen_by_its_parent_uuid_even_without_framebuffer_samples() -> None:
    """NVIDIA/dcgm-exporter#512: one H100, seven 1g.10gb instances; the instances carry no
    DCGM_FI_DEV_FB_* samples (that issue's bug) and MIG has no GPU_UTIL (#216, #430)."""
    gpus = dcgm.gpu_readings(read("h100-mig-512.txt"))
    (g,) = gpus.values()
    assert g.uuid == "GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77"
    assert g.mig_instances == 7
    assert g.driver_version == "535.129.03" and g.hostname == "gsrh100-074"
    assert g.fb_used_mib is None and g.util_percent is None
    assert (g.power_w, g.temp_c) == (118.732, 34.0)  # the whole GPU's samples


def test_mixed_models_lowercase_hostname_and_instance_sums() -> None:
    """NVIDIA/dcgm-exporter#736: an RTX 2000 Ada and two A30s in MIG mode on one node."""
    gpus = dcgm.gpu_readings(read("mixed-a30-mig-736.txt"))
    assert sorted(g.model_name or "" for g in gpus.values()) == [
        "NVIDIA A30",
        "NVIDIA A30",
        "NVIDIA RTX 2000 Ada Generation",
    ]
    rtx = gpus["GPU-fc60126e-514d-3522-2828-c5daa8e99d85"]
    assert rtx.hostname == "dcgm-exporter-wwwjh" and rtx.util_percent == 63.0 and rtx.fb_used_mib == 4669.0
    a30 = gpus["GPU-9a63752e-af8d-fe52-7f0d-968bca6d52e3"]
    # Two instances of 3744 MiB each: summed; temperature and power are the board's (highest).
    assert a30.mig_instances == 2 and a30.fb_used_mib == 7488.0
    assert a30.temp_c == 50.0 and a30.power_w == 36.921 and a30.util_percent is None


def test_summary_is_the_highest_over_the_scrapes_per_uuid() -> None:
    idle = read("h200-1gpu.txt")
    text = (DATA / "h200-1gpu.txt").read_text()
    busy = dcgm.parse_exposition(re.sub(r"^(DCGM_FI_DEV_GPU_UTIL\{.*\}) 7$", r"\1 100", text, flags=re.M))
    doc = dcgm.summarize([idle, busy, idle], seconds=4.04, where=dcgm.endpoint())
    assert doc["scrapes"] == 3 and doc["seconds"] == 4.0 and doc["statistic"] == "max"
    assert doc["endpoint"] == "gpu-operator/nvidia-dcgm-exporter:9400/metrics (API server service proxy)"
    g = doc["gpus"][H200]
    assert g["utilPercent"] == 100.0 and g["fbUsedMiB"] == 493.0 and g["samples"] == 3
    assert g["driverVersion"] == "580.159.04" and doc["hostnames"] == ["gpu-lab"] and doc["error"] is None
    empty = dcgm.summarize([], seconds=0, where="x", error="HTTP 503")
    assert empty["gpus"] == {} and empty["error"] == "HTTP 503"


def test_exposition_format_details() -> None:
    text = (
        "# HELP x A help text with a } brace.\n"
        "# TYPE x gauge\n"
        "\n"
        'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1",note="a \\"quoted\\" \\\\ back\\nslash, {}"} 41 1733043600000\n'
        'DCGM_FI_DEV_POWER_USAGE{UUID="GPU-1",} NaN\n'
        "DCGM_FI_DEV_COUNT 2\n"
        "up +Inf\n"
    )
    temp, power, count, up = dcgm.parse_exposition(text)
    assert temp.labels["note"] == 'a "quoted" \\ back\nslash, {}' and temp.value == 41.0
    assert power.value != power.value  # NaN
    assert count.labels == {} and up.value == float("inf")
    (g,) = dcgm.gpu_readings([temp, power, count, up]).values()
    assert g.temp_c == 41.0 and g.power_w is None  # NaN counts as absent


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<html><body>503 Service Unavailable</body></html>\n", r"line 1: not a Prometheus sample"),
        ('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1"} warm\n', r"line 1: value 'warm' is not a number"),
        ("# ok\nDCGM_FI_DEV_GPU_TEMP{UUID=GPU-1} 40\n", r"line 2: malformed labels"),
        ('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1" gpu="0"} 40\n', r"line 1: malformed labels"),
    ],
)
def test_malformed_answers_name_the_line(text: str, message: str) -> None:
    with pytest.raises(DcgmParseError, match=message):
        dcgm.parse_exposition(text)


def test_samples_without_a_uuid_or_of_other_exporters_are_ignored() -> None:
    samples = dcgm.parse_exposition(
        'go_goroutines 12\nDCGM_FI_DEV_COUNT 1\nnode_load1{UUID="GPU-x"} 1\n'
        'DCGM_EXP_XID_ERRORS_COUNT{gpu="0",UUID="GPU-x",window_size_in_ms="300000"} 0\n'
    )
    assert list(dcgm.gpu_readings(samples)) == []


def test_exporter_fix_names_the_logs() -> None:
    fix = dcgm.exporter_logs_fix()
    assert "kubectl -n gpu-operator logs ds/nvidia-dcgm-exporter" in fix
    assert "-l app=nvidia-dcgm-exporter" in fix


def test_utilisation_of_a_mig_enabled_gpu_is_not_comparable_whatever_was_sent() -> None:
    """nvml.h (NVIDIA/go-nvml v0.13.4-1) ``nvmlDeviceGetUtilizationRates``: "On MIG-enabled
    GPUs, querying device utilization rates is not currently supported", and
    ``DCGM_FI_DEV_GPU_UTIL`` is that reading: a value sent for a MIG-enabled GPU (a whole-GPU 0
    here, an instance's 100) is not its utilisation. The card says so instead of showing 0 %."""
    text = (DATA / "mixed-a30-mig-736.txt").read_text()
    a30 = "GPU-9a63752e-af8d-fe52-7f0d-968bca6d52e3"
    labels = f'gpu="0",UUID="{a30}",pci_bus_id="00000000:65:00.0",device="nvidia0",modelName="NVIDIA A30"'
    text += f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 0\n"
    text += f'DCGM_FI_DEV_GPU_UTIL{{{labels},GPU_I_PROFILE="1g.6gb",GPU_I_ID="3"}} 100\n'
    samples = dcgm.parse_exposition(text)
    assert dcgm.gpu_readings(samples)[a30].util_percent is None
    doc = dcgm.summarize([samples], seconds=2, where="x")
    g = doc["gpus"][a30]
    assert g["utilPercent"] is None and g["fbUsedMiB"] == 7488.0 and g["tempC"] == 50.0
    assert set(g["notComparable"]) == {"utilPercent"}
    assert g["notComparable"]["utilPercent"].startswith("not comparable under MIG")
    rtx = doc["gpus"]["GPU-fc60126e-514d-3522-2828-c5daa8e99d85"]  # no MIG: its utilisation stands
    assert rtx["utilPercent"] == 63.0 and "notComparable" not in rtx


def test_a_hostname_label_naming_the_exporter_pod_is_told_from_a_node() -> None:
    """NVIDIA/dcgm-exporter#736's exporter labels its samples ``hostname="dcgm-exporter-wwwjh"``:
    its Pod's name, since dcgm-exporter (4.5.3-4.8.2, internal/pkg/hostname/hostname.go
    ``getLocalHostname``) falls back to ``os.Hostname()`` when ``NODE_NAME`` is unset; the GPU
    Operator v26.7.0 sets it from ``spec.nodeName`` (assets/state-dcgm-exporter/0800_daemonset.yaml)."""
    samples = read("mixed-a30-mig-736.txt")
    doc = dcgm.summarize([samples], seconds=2, where="x", nodes=["gpu-node-1"])
    assert doc["hostnames"] == ["dcgm-exporter-wwwjh"]
    assert doc["hostnamesNotNodes"] == ["dcgm-exporter-wwwjh"]
    assert (
        dcgm.summarize([samples], seconds=2, where="x", nodes=["dcgm-exporter-wwwjh"])["hostnamesNotNodes"]
        == []
    )
    assert dcgm.summarize([samples], seconds=2, where="x")["hostnamesNotNodes"] == []  # nodes unknown
    h200 = dcgm.summarize([read("h200-1gpu.txt")], seconds=2, where="x", nodes=["gpu-lab"])
    assert h200["hostnamesNotNodes"] == []  # the operator's exporter: NODE_NAME, the node
