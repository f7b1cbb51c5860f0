"""``gpu-operator-chart-source``."""

from __future__ import annotations

from pathlib import Path

from policy import validators

from ..harness import (
    NVIDIA,
    check_resource,
    release,
)


# --- gpu-operator-chart-source ------------------------------------------------------
def test_chart_source_passes_for_nvidia_repo_and_local_path(tmp_path: Path) -> None:
    assert check_resource("gpu-operator-chart-source", validators.T_RELEASE, release()).passed
    local = release(chart=str(tmp_path / "gpu-operator"), version=None, repositoryOpts=None)
    (tmp_path / "gpu-operator").mkdir()
    assert check_resource("gpu-operator-chart-source", validators.T_RELEASE, local).passed


def test_chart_source_violates_for_other_repos_and_bare_aliases() -> None:
    o = check_resource(
        "gpu-operator-chart-source",
        validators.T_RELEASE,
        release(repositoryOpts={"repo": "https://evil.example"}),
    )
    assert "https://evil.example" in o.text and NVIDIA in o.text
    o = check_resource(
        "gpu-operator-chart-source",
        validators.T_RELEASE,
        release(chart="nvidia/gpu-operator", repositoryOpts=None),
    )
    assert "local repository aliases" in o.text
