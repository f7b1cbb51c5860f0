"""The engine type tokens the policies read, and the names of what they look for."""

from __future__ import annotations

from typing import Final

from gpulab.config import lab as labconfig
from gpulab.core import names

# Engine type tokens the policies read.
T_STACK: Final = "pulumi:pulumi:Stack"
T_RELEASE: Final = "kubernetes:helm.sh/v3:Release"
T_POD: Final = "kubernetes:core/v1:Pod"
T_COMMAND: Final = "command:local:Command"
T_HOST_PROBE: Final = "gpulab:host_probe:HostProbe"
T_GPU_OPERATOR: Final = "gpulab:gpu_operator:GpuOperator"
T_SMOKE: Final = "gpulab:smoke:SmokeTest"
T_COMPUTE: Final = "gpulab:compute:ComputeCheck"

NVIDIA_HELM_REPO: Final = labconfig.DEFAULT_CHART_REPO
OPERATOR_CHART: Final = names.OPERATOR_CHART
GPU_RESOURCE: Final = names.GPU_RESOURCE
