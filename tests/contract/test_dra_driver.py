"""Contract: NVIDIA's DRA driver (``gpuStack: dra``) and Kubernetes' resource.k8s.io/v1.

Read here from the module the offline lab installs the chart from: sigs.k8s.io/dra-driver-nvidia-gpu
at ``DRA_CHART_OFFLINE_VERSION`` (v0.5.0, toolchain/versions.env), fetched from the Go module
proxy by toolchain/dra-chart.sh (``$GPULAB_DRA_CHART_PATH``); its module root also holds the GPU
kubelet plugin's sources, whose ResourceSlice the simulated lab publishes in its stead
(variants/sim/ctl/dra.py). The API fields the lab writes and reads are Kubernetes v1.36.3's
(k8s.io/api v0.36.3 resource/v1/types.go and core/v1/types.go, from the Go module cache when
present). A bump of the version fails :func:`test_the_chart_is_the_offline_version`: re-read
these sources at the new tag.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from components.dra import helm_values
from gpulab.config.dra import CHART, DEVICE_CLASS, DRIVER, NAMESPACE, DraChart
from gpulab.kube import pod_specs
from tests.contract.conftest import go_module_chart, versions
from variants.sim.ctl import dra as sim_dra

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chart() -> Path:
    """The unpacked chart (``$GPULAB_DRA_CHART_PATH``, else the Go module cache's)."""
    return go_module_chart("GPULAB_DRA_CHART_PATH", "dra-chart.sh", "DRA driver chart")


def _plugin(chart: Path, name: str) -> str:
    """A file of the GPU kubelet plugin (cmd/gpu-kubelet-plugin/) at the chart's tag."""
    return (chart.parents[2] / "cmd" / "gpu-kubelet-plugin" / name).read_text()


def _api(group: str) -> str:
    path = Path.home() / "go" / "pkg" / "mod" / "k8s.io" / "api@v0.36.3" / group / "v1" / "types.go"
    if not path.is_file():
        pytest.skip("no k8s.io/api v0.36.3 in the Go module cache (go mod download k8s.io/api@v0.36.3)")
    return path.read_text()


def test_the_chart_is_the_offline_version(chart: Path) -> None:
    doc = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert doc["name"] == CHART
    assert doc["version"] == versions()["DRA_CHART_OFFLINE_VERSION"] == DraChart().version


def test_every_value_the_lab_sets_is_the_charts(chart: Path) -> None:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    lab = helm_values(DraChart(driver_root="/run/nvidia/driver"))
    assert values["gpuResourcesEnabledOverride"] is False  # the lab's True is the override
    assert values["resources"]["gpus"]["enabled"] is True
    assert values["resources"]["computeDomains"]["enabled"] is True  # the lab turns it off
    assert values["nvidiaDriverRoot"] == "/" == DraChart().driver_root
    assert set(lab) == {"resourceApiVersion", "gpuResourcesEnabledOverride", "resources", "nvidiaDriverRoot"}
    assert values["resourceApiVersion"] == "" and lab["resourceApiVersion"] == "resource.k8s.io/v1"
    helpers = (chart / "templates" / "_helpers.tpl").read_text()
    assert "{{- if .Values.resourceApiVersion }}\n{{- .Values.resourceApiVersion }}" in helpers
    assert set(lab["resources"]) <= set(values["resources"])
    # Without the override the chart refuses GPUs (the device plugin may be on the node).
    validation = (chart / "templates" / "validation.yaml").read_text()
    assert "if and .Values.resources.gpus.enabled (not .Values.gpuResourcesEnabledOverride)" in validation
    assert "not .Values.allowDefaultNamespace" in validation and NAMESPACE != "default"


def test_the_device_class_and_the_driver_are_the_charts_and_the_plugins(chart: Path) -> None:
    doc = (chart / "templates" / "deviceclass-gpu.yaml").read_text()
    assert re.search(rf"^\s+name: {re.escape(DEVICE_CLASS)}$", doc, re.M)
    # The class selects the driver's devices whose type attribute is gpu (what the sim publishes).
    assert (
        f"device.driver == '{DRIVER}'" in doc and "device.attributes['gpu.nvidia.com'].type == 'gpu'" in doc
    )
    assert re.search(rf'DriverName\s+= "{re.escape(DRIVER)}"', _plugin(chart, "main.go"))
    assert re.search(rf'GpuDeviceType\s+= "{sim_dra.GPU_TYPE}"', _plugin(chart, "types.go"))


def test_the_simulated_slice_is_shaped_as_the_plugins(chart: Path) -> None:
    info = _plugin(chart, "deviceinfo.go")
    assert 'return fmt.Sprintf("gpu-%d", d.minor)' in info  # GpuInfo.CanonicalName
    doc = sim_dra.resource_slice("n", [(0, "NVIDIA H200", "GPU-0")], "580.159.04", "13.0", 143771)
    (device,) = doc["spec"]["devices"]
    attributes = info[info.index("func (d *GpuInfo) Attributes()") :]
    attributes = attributes[: attributes.index("addDeviceAttribute")]
    for name in device["attributes"]:
        assert f'"{name}": {{' in attributes, name
    assert '"memory": resourceapi.DeviceCapacity' in _plugin(chart, "partitions.go")
    # One pool per node, named after it (driver.go GenerateDriverResources).
    assert "nodeName: {Slices: gpuslices}" in _plugin(chart, "driver.go")
    assert doc["spec"]["pool"]["name"] == doc["spec"]["nodeName"] == "n"


def test_the_api_fields_the_lab_writes_and_reads_are_v1_36s() -> None:
    resource, core = _api("resource"), _api("core")
    for field in ("devices", "requests", "exactly", "deviceClassName", "allocationMode", "count"):
        assert f'json:"{field}' in resource, field
    for field in (
        "driver",
        "pool",
        "device",
        "nodeName",
        "reservedFor",
        "allocation",
        "results",
        "attributes",
    ):
        assert f'json:"{field}' in resource, field
    assert re.search(r"DeviceAllocationModeExactCount\s+= DeviceAllocationMode\(\"ExactCount\"\)", resource)
    template = pod_specs.claim_template(DEVICE_CLASS, 2)["spec"]["devices"]["requests"][0]["exactly"]
    assert template["allocationMode"] == "ExactCount"
    for field in (
        "resourceClaims",
        "resourceClaimTemplateName",
        "resourceClaimStatuses",
        "resourceClaimName",
        "claims",
    ):
        assert f'json:"{field}' in core, field
