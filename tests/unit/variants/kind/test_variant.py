"""The kind variant's answers outside the engine: is its cluster gone (make destroy's teardown)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from variants import registry


def test_kind_cluster_listing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda _n: "/usr/bin/kind")
    kind = registry.get("kind")
    out = lambda text, rc=0: lambda argv: subprocess.CompletedProcess(argv, rc, text, "")  # noqa: E731
    assert kind.status("gpu-lab", tmp_path, out("gpu-lab\nother\n")).gone is False
    assert kind.status("gpu-lab", tmp_path, out("No kind clusters found.\n")).gone is True
    assert kind.status("gpu-lab", tmp_path, out("", 1)).gone is None
