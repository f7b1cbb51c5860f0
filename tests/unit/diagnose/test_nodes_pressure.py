"""The cluster diagnosis reads node conditions and cordons (gpulab.diagnose.nodes)."""

from __future__ import annotations

from typing import Any

from gpulab import diagnose
from tests.unit.diagnose.builders import healthy_operator, node


def _diagnose(n: dict[str, Any]) -> list[diagnose.Diagnosis]:
    pods, dsets = healthy_operator()
    return diagnose.diagnose_cluster(pods=pods, events=[], daemonsets=dsets, nodes=[n], logs={})


def test_disk_pressure_is_a_row_with_taints_evictions_and_the_prune() -> None:
    """kubernetes/kubernetes#93711: "Taints: node.kubernetes.io/disk-pressure:NoSchedule" and
    "DiskPressure True ... KubeletHasDiskPressure"."""
    n = node()
    n["status"]["conditions"].append(
        {
            "type": "DiskPressure",
            "status": "True",
            "reason": "KubeletHasDiskPressure",
            "message": "kubelet has disk pressure",
        }
    )
    n.setdefault("spec", {})["taints"] = [{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}]
    rows = [d for d in _diagnose(n) if d.row == "node-pressure"]
    assert len(rows) == 1 and rows[0].variant == "DiskPressure"
    assert rows[0].detail == "taints: node.kubernetes.io/disk-pressure:NoSchedule; Pods evicted there: 0"
    assert "docker system prune -af" in rows[0].fix


def test_a_cordoned_node_is_a_row_with_the_uncordon() -> None:
    """rancher/rancher#24975: the cordon's taint node.kubernetes.io/unschedulable."""
    n = node()
    n.setdefault("spec", {})["unschedulable"] = True
    rows = [d for d in _diagnose(n) if d.row == "node-cordoned"]
    assert len(rows) == 1 and rows[0].fix.startswith("scripts/kubectl uncordon ")
