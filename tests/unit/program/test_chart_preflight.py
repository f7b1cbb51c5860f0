"""The chart-repository preflight, with the name lookup and the request faked."""

from __future__ import annotations

from tests.unit.conftest import real_chart_findings as chart_findings

REPO = "https://helm.ngc.nvidia.com/nvidia"


def test_unresolvable_repository_names_the_offline_fix() -> None:
    def resolve(host: str) -> None:
        raise OSError(f"[Errno -2] Name or service not known: {host}")

    def fetch(url: str) -> None:
        raise AssertionError("no request after a failed lookup")

    (f,) = chart_findings(REPO, "v26.7.0", resolve=resolve, fetch=fetch)
    assert not f.ok and f.check == "chart-repository"
    assert "cannot be reached" in f.message and "Name or service not known" in f.message
    assert "GPULAB_CHART_PATH" in f.fix and "--version v26.7.0 --untar" in f.fix


def test_reachable_repository_passes() -> None:
    seen: list[str] = []
    assert chart_findings(REPO, "v26.7.0", resolve=lambda h: None, fetch=seen.append) == []
    assert seen == [REPO + "/index.yaml"]


def test_oci_repositories_are_left_to_helm() -> None:
    assert chart_findings("oci://registry.example/charts", "v26.7.0") == []
