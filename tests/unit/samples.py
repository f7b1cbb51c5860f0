"""Inputs the unit tests share: saved stack outputs and a TFLOPS document (tests/data); the
``real`` and ``sim`` fixtures (tests/unit/conftest.py) are two of those outputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"
NOW = datetime(2026, 11, 30, 8, 0, 0, tzinfo=UTC)


def load(name: str) -> dict[str, Any]:
    """A saved stack-outputs document, ``tests/data/outputs/<name>`` (a fresh copy per call)."""
    data: dict[str, Any] = json.loads((DATA / "outputs" / name).read_text())
    return data


def tflops_fixture(name: str = "h200-torch-v2.json") -> dict[str, Any]:
    """A TFLOPS document (``python -m gpulab.tflops --json``), ``tests/data/tflops/<name>``."""
    data: dict[str, Any] = json.loads((DATA / "tflops" / name).read_text())
    return data
