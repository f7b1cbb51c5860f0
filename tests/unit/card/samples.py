"""Inputs the gpulab.card tests share: saved stack outputs and a TFLOPS document (tests/data)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "data"
NOW = datetime(2026, 11, 30, 8, 0, 0, tzinfo=UTC)


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "outputs" / name).read_text())
    return data


def tflops_fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "tflops" / "h200-torch-v2.json").read_text())
    return data
