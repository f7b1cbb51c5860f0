"""The minikube variant's answers outside the engine: is its cluster gone (make destroy's teardown)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from variants import registry
from variants.base import Status


def test_minikube_profile_listing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda _n: "/usr/bin/minikube")
    minikube = registry.get("minikube")

    def fake(out: str, err: str = "", rc: int = 0):
        return lambda argv: subprocess.CompletedProcess(argv, rc, out, err)

    listed = '{"invalid": [], "valid": [{"Name": "gpu-lab"}]}'
    assert minikube.status("gpu-lab", tmp_path, fake(listed)).gone is False
    assert minikube.status("other", tmp_path, fake(listed)).gone is True
    none = fake("", "\U0001f939  Exiting due to MK_USAGE_NO_PROFILE: No minikube profile was found.", 85)
    assert minikube.status("gpu-lab", tmp_path, none).gone is True
    assert minikube.status("gpu-lab", tmp_path, fake("garbage", "boom", 1)).gone is None


def test_a_missing_tool_cannot_tell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda _n: None)
    assert registry.get("minikube").status("p", tmp_path) == Status(None, "minikube is not on PATH")
