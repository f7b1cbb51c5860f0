"""nvidia-smi output the gpulab.host.nvsmi tests share: real captures from H200 hosts and written logs."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[3] / "data" / "nvidia-smi"
BUS_IDS = ("00000000:00:06.0", "00000000:00:07.0")
HOSTS = [("h200-1gpu", 1), ("h200-2gpu", 2)]


def read(host: str, name: str) -> str:
    return (FIXTURES / host / name).read_text()


OLD_DRIVER_SMOKE_LOG = """\
Tue Mar  6 10:12:44 2018
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 384.90                 Driver Version: 384.90                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla K80           Off  | 00000000:00:1E.0 Off |                    0 |
| N/A   34C    P8    30W / 149W |      0MiB / 11439MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+
"""

KMD_HEADER_TABLE = """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 612.10                 KMD Version: 612.10            CUDA UMD Version: 13.4 |
+-----------------------------------------+------------------------+----------------------+
"""
