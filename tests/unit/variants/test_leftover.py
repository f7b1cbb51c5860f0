"""Variant.delete: a cluster the lab started is the lab's to remove, whatever the state says."""

from __future__ import annotations

from pathlib import Path

from variants import registry as variants
from variants.base import clear_started, record_started, started_record


def test_sim_kind_and_minikube_know_what_they_started(tmp_path: Path) -> None:
    for name in ("sim", "kind", "minikube"):
        assert variants.get(name).delete("p", tmp_path) is None
    (tmp_path / ".state" / "sim" / "p").mkdir(parents=True)
    (tmp_path / ".state" / "kind" / "p").mkdir(parents=True)
    record_started("minikube", "p", tmp_path)
    argv, what = variants.get("sim").delete("p", tmp_path)  # type: ignore[misc]
    assert argv == ["python", "-m", "variants.sim.ctl", "down", "--name", "p", "--workdir", ".state/sim/p"]
    assert "sim cluster 'p'" in what
    argv, _ = variants.get("kind").delete("p", tmp_path)  # type: ignore[misc]
    assert argv[:4] == ["python", "-m", "variants.kind.ctl", "down"]
    argv, _ = variants.get("minikube").delete("p", tmp_path)  # type: ignore[misc]
    assert argv == ["python", "-m", "variants.minikube.ctl", "down", "--profile", "p"]
    clear_started("minikube", "p", tmp_path)
    assert not started_record(tmp_path, "minikube", "p").exists()
    assert variants.get("minikube").delete("p", tmp_path) is None


def test_clusters_the_lab_does_not_own_or_cannot_tell_have_no_leftover(tmp_path: Path) -> None:
    # existing: the lab never starts its cluster; k3s: one install per host, shared by checkouts.
    for name in ("existing", "k3s"):
        assert variants.get(name).delete("p", tmp_path) is None
