"""Host facts through NVML (``pynvml``, PyPI ``nvidia-ml-py``), in the shape the nvidia-smi probe returns.

NVML is the library nvidia-smi itself is built on (``libnvidia-ml.so.1``, installed with the
driver); ``pynvml`` is NVIDIA's ctypes binding for it, pinned in ``requirements.txt``. Reading
it directly avoids parsing text and gives the same facts:

=====================  =====================================================================
fact                   NVML call (unit)
=====================  =====================================================================
driver version         ``nvmlSystemGetDriverVersion()`` (``"580.159.04"``)
max CUDA               ``nvmlSystemGetCudaDriverVersion_v2()`` (``13000`` means ``"13.0"``)
per GPU: index, name   ``nvmlDeviceGetHandleByIndex(i)``, ``nvmlDeviceGetName``
UUID                   ``nvmlDeviceGetUUID`` (``"GPU-..."``)
memory total           ``nvmlDeviceGetMemoryInfo(h).total`` (bytes; reported in MiB, floored:
                       nvidia-smi's ``memory.total`` is the same number, 143771 on an H200)
PCI bus id             ``nvmlDeviceGetPciInfo(h).busId`` (``"00000000:00:06.0"``, nvidia-smi's
                       form)
compute capability     ``nvmlDeviceGetCudaComputeCapability`` (``(9, 0)`` means ``"9.0"``)
MIG mode               ``nvmlDeviceGetMigMode(h)`` -> ``[current, pending]``, 1 ``"Enabled"``,
                       0 ``"Disabled"``; ``Not Supported`` (a GPU without MIG) -> ``None``
=====================  =====================================================================

Everything takes the ``pynvml`` module as an argument (``nv``), so tests pass a fake with the
same functions; :func:`load_pynvml` imports the real one. Failures raise
:class:`NvmlUnavailable`, whose :class:`~gpulab.host.preflight.Finding` names the cause and the
first fix, as the nvidia-smi probe does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpulab.host import nvsmi
from gpulab.host.facts import HostFacts
from gpulab.host.nvml import (
    CHECK_NVML,
    SOURCE,
    NvmlUnavailable,
    call,
    cuda_version_text,
    load_pynvml,
    mig_word,
    session,
    text,
)
from gpulab.host.preflight import Finding


def read_gpu(nv: Any, index: int, driver: str) -> nvsmi.GpuInfo:
    """One physical GPU as :class:`gpulab.host.nvsmi.GpuInfo` (see the module table)."""
    h = call(nv, f"nvmlDeviceGetHandleByIndex({index})", nv.nvmlDeviceGetHandleByIndex, index)
    name = text(call(nv, "nvmlDeviceGetName", nv.nvmlDeviceGetName, h))
    uuid = call(nv, "nvmlDeviceGetUUID", nv.nvmlDeviceGetUUID, h, optional=True)
    mem = call(nv, "nvmlDeviceGetMemoryInfo", nv.nvmlDeviceGetMemoryInfo, h, optional=True)
    pci = call(nv, "nvmlDeviceGetPciInfo", nv.nvmlDeviceGetPciInfo, h, optional=True)
    cap = call(
        nv,
        "nvmlDeviceGetCudaComputeCapability",
        nv.nvmlDeviceGetCudaComputeCapability,
        h,
        optional=True,
    )
    mig = call(nv, "nvmlDeviceGetMigMode", nv.nvmlDeviceGetMigMode, h, optional=True)
    current, pending = (mig_word(int(mig[0])), mig_word(int(mig[1]))) if mig is not None else (None, None)
    return nvsmi.GpuInfo(
        index=index,
        name=name,
        uuid=text(uuid) if uuid is not None else None,
        driver_version=driver,
        memory_total_mib=int(mem.total) // 2**20 if mem is not None else None,
        pci_bus_id=text(pci.busId) if pci is not None else None,
        compute_cap=f"{cap[0]}.{cap[1]}" if cap is not None else None,
        mig_mode=current,
        mig_mode_pending=pending,
    )


def read_facts(nv: Any) -> HostFacts:
    """Read :class:`~gpulab.host.probe.HostFacts` from an initialised NVML (inside :func:`session`).

    ``source`` is ``"nvml"``, ``simulated`` False. The max CUDA comes from
    ``nvmlSystemGetCudaDriverVersion_v2`` (``_v1`` where the binding lacks it; None if
    neither answers).

    Raises:
        NvmlUnavailable: a required call failed, or NVML lists no GPU.
    """
    driver = text(call(nv, "nvmlSystemGetDriverVersion", nv.nvmlSystemGetDriverVersion))
    get_cuda = getattr(nv, "nvmlSystemGetCudaDriverVersion_v2", None) or nv.nvmlSystemGetCudaDriverVersion
    cuda = call(nv, "nvmlSystemGetCudaDriverVersion_v2", get_cuda, optional=True)
    count = int(call(nv, "nvmlDeviceGetCount", nv.nvmlDeviceGetCount))
    if count == 0:
        raise NvmlUnavailable(
            Finding(
                CHECK_NVML,
                False,
                "NVML lists no GPU (nvmlDeviceGetCount() == 0)",
                "check `nvidia-smi -L` and `lspci | grep -i nvidia`; in a container, pass the "
                "GPUs in (--gpus all / the NVIDIA runtime)",
            )
        )
    gpus = tuple(read_gpu(nv, i, driver) for i in range(count))
    warn = nvsmi.model_warning(gpus)
    return HostFacts(
        gpus=gpus,
        driver_version=driver,
        max_cuda=cuda_version_text(int(cuda)) if cuda else None,
        source=SOURCE,
        simulated=False,
        warnings=(warn,) if warn else (),
    )


def probe_nvml(loader: Callable[[], Any] = load_pynvml) -> HostFacts:
    """Load ``pynvml``, open a session and read the host facts.

    Raises:
        NvmlUnavailable: binding missing, NVML failing, or no GPU (cause and first fix).
    """
    nv = loader()
    with session(nv):
        return read_facts(nv)
