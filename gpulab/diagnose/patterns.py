"""The messages the cluster diagnosis recognises: scheduler, runtime, device-plugin and DCGM
texts, and the container waiting/terminated reasons it sorts by."""

from __future__ import annotations

import re
from typing import Final

# "1 Insufficient nvidia.com/gpu." -> "nvidia.com/gpu" (the name never ends in a dot).
_INSUFFICIENT_RE: Final = re.compile(r"Insufficient ([A-Za-z0-9](?:[A-Za-z0-9./_-]*[A-Za-z0-9])?)")
_CUDA_COND_RE: Final = re.compile(r"unsatisfied condition: cuda\s*>=\s*(\d+\.\d+)")
_DRIVER_MAX_RE: Final = re.compile(
    r"(?:CUDA Version:\s*|driver supports (?:up to )?CUDA\s*|cuda=)(\d+\.\d+)", re.IGNORECASE
)
_NVML_RE: Final = re.compile(
    r"could not load NVML|libnvidia-ml\.so[.\d]*: cannot open|Failed to initialize NVML|"
    r"ERROR_LIBRARY_NOT_FOUND|NVML library not found",
    re.IGNORECASE,
)
_DCGM_PROFILING_RE: Final = re.compile(
    r"Profiling module returned an unrecoverable error|profiling.*not supported|"
    r"DCGM_FR_PROF|DCP metrics.*not supported",
    re.IGNORECASE,
)
_CRASH_REASONS: Final = frozenset(
    {
        "CrashLoopBackOff",
        "Error",
        "RunContainerError",
        "CreateContainerError",
        "CreateContainerConfigError",
        "StartError",
        "ContainerCannotRun",
        "OOMKilled",
    }
)
_PULL_REASONS: Final = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
_CREATING_REASONS: Final = frozenset({"ContainerCreating", "PodInitializing"})
