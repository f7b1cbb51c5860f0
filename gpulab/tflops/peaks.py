"""Datasheet peak matrix throughput for common NVIDIA GPUs, dense (no sparsity), in TFLOP/s.

The baseline card reports a measured matmul rate as a fraction of the datasheet peak; this
module is that denominator. Pure data and a lookup; no I/O.

Conventions (read these before adding a row):

* **Dense figures only.** NVIDIA datasheets for Ampere and later print tensor-core figures
  "with sparsity" (2:4 structured sparsity), usually marked with an asterisk or given as
  ``dense | sparse``. Those are twice the dense rate. Every value here is the dense one: where
  the datasheet gives only the sparse figure, the stored value is that figure halved, and the
  row's ``note`` says so.
* ``bf16`` and ``fp16`` are tensor-core rates with FP32 accumulate, which is what a framework
  matmul (PyTorch, cuBLAS default compute type) uses. On data-center parts the datasheet gives
  one figure. On GeForce parts FP32 accumulate runs at half the FP16-accumulate rate; the
  whitepapers print both and the FP32-accumulate one is stored.
* ``tf32`` is the tensor-core TF32 rate (what FP32 matmul runs at when TF32 is allowed).
* ``fp32`` is the non-tensor (CUDA core) FP32 rate: true FP32 matmul cannot beat it.
* ``None`` means the hardware has no such path (Turing and Volta have no BF16 or TF32 tensor
  cores); a framework may still emulate it, but there is no datasheet peak to compare with.

Model names are matched against what ``nvidia-smi --query-gpu=name`` (and NVML, and
``torch.cuda.get_device_name``) print, e.g. ``NVIDIA H200``, ``NVIDIA H100 80GB HBM3``,
``NVIDIA A100-SXM4-80GB``, ``Tesla T4``, ``NVIDIA GeForce RTX 4090``. Matching is exact on a
normalised name, never a substring test: ``NVIDIA GH200 480GB`` is not an H200, ``NVIDIA A10G``
is not an A10, ``NVIDIA L40`` is not an L40S, ``NVIDIA H200 NVL`` (a lower-power part) is not
the SXM H200. An unknown name yields ``None``, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = ["DTYPES", "PEAKS", "PeakRow", "normalise_name", "peak_for", "row_for"]

#: Data types a row may carry a peak for.
DTYPES: Final[tuple[str, ...]] = ("bf16", "fp16", "tf32", "fp32")


@dataclass(frozen=True)
class PeakRow:
    """One GPU model's dense datasheet peaks.

    ``model`` is a display name (``"H200 SXM"``); ``pattern`` is a regular expression that
    must match the whole normalised ``nvidia-smi`` name (see :func:`normalise_name`);
    ``tflops`` maps each of :data:`DTYPES` to TFLOP/s (dense) or ``None`` (no hardware path);
    ``source`` names the NVIDIA document and year; ``note`` says how a value was derived
    (e.g. halved from a sparse figure).
    """

    model: str
    pattern: str
    tflops: Mapping[str, float | None]
    source: str
    note: str = ""


def _row(
    model: str,
    pattern: str,
    *,
    bf16: float | None,
    fp16: float | None,
    tf32: float | None,
    fp32: float,
    source: str,
    note: str = "",
) -> PeakRow:
    values = {"bf16": bf16, "fp16": fp16, "tf32": tf32, "fp32": fp32}
    return PeakRow(model, pattern, MappingProxyType(values), source, note)


_SPARSE_HALVED: Final = "tensor figures are the datasheet's sparse values halved"

#: The table. Order does not matter: patterns are exact and do not overlap.
PEAKS: Final[tuple[PeakRow, ...]] = (
    _row(
        "H200 SXM",
        r"h200( sxm\d?)?( 141gb)?( hbm3e)?",
        bf16=989.5,
        fp16=989.5,
        tf32=494.5,
        fp32=67.0,
        source="NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column",
        note=f"{_SPARSE_HALVED} (BF16/FP16 1,979, TF32 989 with sparsity)",
    ),
    _row(
        "H100 SXM",
        r"h100 (sxm5?( 80gb)?( hbm3)?|80gb hbm3)",
        bf16=989.5,
        fp16=989.5,
        tf32=494.5,
        fp32=67.0,
        source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column",
        note=f"{_SPARSE_HALVED} (BF16/FP16 1,979, TF32 989 with sparsity)",
    ),
    _row(
        "H100 PCIe",
        r"h100( 80gb)? pcie( 80gb)?",
        bf16=756.5,
        fp16=756.5,
        tf32=378.0,
        fp32=51.0,
        source="NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column",
        note=f"{_SPARSE_HALVED} (BF16/FP16 1,513, TF32 756 with sparsity)",
    ),
    _row(
        "A100 SXM4 (40/80 GB)",
        r"a100 sxm4 (40|80)gb",
        bf16=312.0,
        fp16=312.0,
        tf32=156.0,
        fp32=19.5,
        source="NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM column",
        note="dense figures as printed (sparse: 624 BF16/FP16, 312 TF32); 40GB SXM is the same",
    ),
    _row(
        "A100 PCIe (40/80 GB)",
        r"a100( 80gb)? pcie( (40|80)gb)?",
        bf16=312.0,
        fp16=312.0,
        tf32=156.0,
        fp32=19.5,
        source="NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB PCIe column",
        note="dense figures as printed; the PCIe card sustains less at its lower power limit",
    ),
    _row(
        "L40S",
        r"l40s",
        bf16=362.05,
        fp16=362.05,
        tf32=183.0,
        fp32=91.6,
        source="NVIDIA L40S GPU datasheet (2023)",
        note="dense figures as printed (sparse: 733 BF16/FP16, 366 TF32)",
    ),
    _row(
        "L4",
        r"l4",
        bf16=121.0,
        fp16=121.0,
        tf32=60.0,
        fp32=30.3,
        source="NVIDIA L4 Tensor Core GPU datasheet (2023)",
        note=f"{_SPARSE_HALVED} (BF16/FP16 242, TF32 120 with sparsity)",
    ),
    _row(
        "A10",
        r"a10",
        bf16=125.0,
        fp16=125.0,
        tf32=62.5,
        fp32=31.2,
        source="NVIDIA A10 Tensor Core GPU datasheet (2021)",
        note="dense figures as printed (sparse: 250 BF16/FP16, 125 TF32)",
    ),
    _row(
        "T4",
        r"t4",
        bf16=None,
        fp16=65.0,
        tf32=None,
        fp32=8.1,
        source="NVIDIA T4 Tensor Core GPU datasheet (2019)",
        note="FP16 is 'mixed precision (FP16/FP32)'; Turing has no BF16 or TF32 tensor cores",
    ),
    _row(
        "V100 SXM2",
        r"v100 sxm2 (16|32)gb",
        bf16=None,
        fp16=125.0,
        tf32=None,
        fp32=15.7,
        source="NVIDIA Tesla V100 GPU datasheet (2020), V100 SXM2 column",
        note="FP16 is the 'Tensor Performance' (mixed precision) figure; Volta has no BF16/TF32",
    ),
    _row(
        "V100 PCIe",
        r"v100 pcie (16|32)gb",
        bf16=None,
        fp16=112.0,
        tf32=None,
        fp32=14.0,
        source="NVIDIA Tesla V100 GPU datasheet (2020), V100 PCIe column",
        note="FP16 is the 'Tensor Performance' (mixed precision) figure; Volta has no BF16/TF32",
    ),
    _row(
        "V100S PCIe",
        r"v100s pcie 32gb",
        bf16=None,
        fp16=130.0,
        tf32=None,
        fp32=16.4,
        source="NVIDIA Tesla V100S datasheet (2019)",
        note="FP16 is the 'Tensor Performance' (mixed precision) figure; Volta has no BF16/TF32",
    ),
    _row(
        "GeForce RTX 4090",
        r"rtx 4090",
        bf16=165.2,
        fp16=165.2,
        tf32=82.6,
        fp32=82.6,
        source="NVIDIA Ada GPU Architecture whitepaper (2023), RTX 4090 column",
        note="BF16/FP16 with FP32 accumulate (FP16 accumulate: 330.3); dense values",
    ),
    _row(
        "GeForce RTX 3090",
        r"rtx 3090",
        bf16=71.0,
        fp16=71.0,
        tf32=35.6,
        fp32=35.6,
        source="NVIDIA Ampere GA102 GPU Architecture whitepaper (2021), RTX 3090 column",
        note="BF16/FP16 with FP32 accumulate (FP16 accumulate: 142); dense values",
    ),
    _row(
        "B200",
        r"b200",
        bf16=2250.0,
        fp16=2250.0,
        tf32=1125.0,
        fp32=75.0,
        source="NVIDIA HGX B200 datasheet (2024), 8-GPU board figures divided by 8",
        note=(
            "board gives FP16/BF16 36 PFLOPS and TF32 18 PFLOPS with sparsity, FP32 600 TFLOPS; "
            "per GPU /8, tensor figures halved again for dense"
        ),
    ),
)

_COMPILED: Final = tuple((re.compile(row.pattern), row) for row in PEAKS)
_VENDOR_PREFIXES: Final = ("nvidia ", "tesla ", "geforce ", "quadro ")


def normalise_name(model_name: str) -> str:
    """Normalise an ``nvidia-smi`` GPU name for matching.

    Lower case; ``-`` and ``_`` become spaces; runs of spaces collapse; the vendor and brand
    words ``NVIDIA``, ``Tesla``, ``GeForce``, ``Quadro`` are dropped from the front.
    ``"NVIDIA A100-SXM4-80GB"`` -> ``"a100 sxm4 80gb"``; ``"NVIDIA GeForce RTX 4090"`` ->
    ``"rtx 4090"``.
    """
    name = re.sub(r"[\s_-]+", " ", model_name.strip().lower()).strip()
    changed = True
    while changed:
        changed = False
        for prefix in _VENDOR_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
                changed = True
    return name


def row_for(model_name: str) -> PeakRow | None:
    """Return the :class:`PeakRow` whose pattern matches the whole normalised name, or None."""
    name = normalise_name(model_name)
    for pattern, row in _COMPILED:
        if pattern.fullmatch(name):
            return row
    return None


def peak_for(model_name: str, dtype: str) -> float | None:
    """Dense datasheet peak in TFLOP/s for an ``nvidia-smi`` GPU name and a data type.

    ``peak_for("NVIDIA H200", "bf16")`` -> ``989.5``. Returns ``None`` when the model is not
    in :data:`PEAKS` or the hardware has no path for that type (e.g. ``"Tesla T4"``,
    ``"bf16"``). Raises ``ValueError`` when ``dtype`` is not one of :data:`DTYPES`.
    """
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES)}")
    row = row_for(model_name)
    if row is None:
        return None
    return row.tflops[dtype]
