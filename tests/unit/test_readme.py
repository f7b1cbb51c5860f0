"""README.md describes what is there: every stack output key has a row in "## Stack outputs"."""

from __future__ import annotations

import re
from pathlib import Path

from gpulab.core import outputs as o

README = Path(__file__).resolve().parents[2] / "README.md"


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_stack_outputs_table_lists_every_key() -> None:
    rows = [line for line in _section("Stack outputs").splitlines() if line.startswith("| `")]
    listed = {key for row in rows for key in re.findall(r"`([A-Za-z]+)`", row.split(" | ")[0])}
    assert set(o.ALL_KEYS) - listed == set(), "README's Stack outputs table lacks these keys"
    assert listed - set(o.ALL_KEYS) == set(), "README's Stack outputs table lists unknown keys"
