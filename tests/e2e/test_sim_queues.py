"""End to end: the queue layer (``stacks/sim-queues.yaml``, ``queues: true``) on the simulated lab,
through ``scripts/lab``: its whole up, checks, removal and destroy once.

One kwok node of two simulated H200s. The lab installs Kueue's chart (sigs.k8s.io/kueue v0.19.0's,
from the Go module proxy: ``$GPULAB_KUEUE_CHART_PATH``) as a real Helm release into the real
Kubernetes v1.36.3 control plane, and the sim runs Kueue's own controller (cmd/kueue, built from the
same module) as a process whose webhooks the API server reaches through an EndpointSlice. The
ClusterQueue's quota is the gate's measured allocatable (2). Kueue's admissions are real; the Jobs'
Pods are kwok's, each "running" 8 s. Then the layer is switched off (``queues: false``, ``make
lab``): the same deletes ``make destroy`` runs, while the cluster still answers, so the census can
prove that nothing of Kueue is left (its CRDs, namespace, webhook configurations, APIServices,
ClusterRoles, the controller process). ``make destroy`` then leaves nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.kube import queues
from gpulab.verdict import checklist
from gpulab.verdict.card.model import build_card
from tests.support.sandbox import Project

pytestmark = pytest.mark.sim

STACK = "sim-queues"
PROFILE = "gpu-lab-queues"


def _chart() -> Path | None:
    p = os.environ.get("GPULAB_KUEUE_CHART_PATH", "")
    return Path(p) if p and (Path(p) / "Chart.yaml").is_file() else None


def _controllers(workdir: Path) -> list[int]:
    """Live processes of Kueue's controller started for this lab (their command line names it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # The binary's own name: the test's directory has "kueue" in its name, and so has every path.
        if str(workdir) in cmd and Path(cmd.split(" ", 1)[0]).name == "kueue":
            found.append(int(entry.name))
    return found


def test_kueue_admits_the_whole_quota_to_one_job_at_a_time_and_leaves_nothing(project: Project) -> None:
    if _chart() is None:
        pytest.skip("no offline Kueue chart: make toolchain-tests sets GPULAB_KUEUE_CHART_PATH")
    workdir = (project.dir / ".state" / "sim" / PROFILE).absolute()
    with project.round_trip(STACK, PROFILE):
        o = project.outputs(STACK)
        q = o[out.QUEUES]
        # The quota is what the gate measured, read back from the ClusterQueue.
        assert q["quota"] == q["measuredAllocatable"] == o[out.ALLOCATABLE_GPUS] == 2, q
        assert q["resource"] == "nvidia.com/gpu" and q["controller"] == "a process of the simulated lab"
        first, waited = q["jobs"]
        assert first["pending"] is None and first["admittedAt"], first
        # The second waited with Kueue's own reason while the first held the quota, then was admitted.
        assert waited["pending"]["reason"] == "Pending", waited
        assert "insufficient unused quota for nvidia.com/gpu" in waited["pending"]["message"], waited
        assert waited["admittedAt"] >= first["finishedAt"], (first, waited)
        assert waited["waitedSeconds"] >= 5, waited  # the first Job's Pod runs 8 s
        gang = q["gang"]
        assert (gang["pods"], gang["admitted"], gang["podsCreated"], gang["suspended"]) == (3, False, 0, True)
        assert "> maximum capacity (2)" in gang["message"], gang
        assert q["unqueuedPod"] == {
            "pod": "queue-proof-unqueued",
            "queueLabel": False,
            "workload": None,
            "admissionGate": False,
            "phase": "Succeeded",
        }
        outputs = LabOutputs.from_json(o)
        items = {i.id: i for i in checklist.evaluate(outputs)}
        item = items["queue-admits-all-or-nothing"]
        assert item.status == "pass" and item.simulated, item
        assert checklist.exit_code(list(items.values())) == 0, [i.report() for i in items.values()]
        card = build_card(outputs)
        row = next(r for r in card["capabilityBoundary"] if r["capability"].startswith("Queues"))
        assert row["status"].startswith("have, measured (gang_scheduling"), row
        assert card["queues"]["waited"]["value"].startswith("queue-proof-b") or card["queues"]["waited"][
            "value"
        ].startswith("queue-proof-a")
        assert _controllers(workdir), "Kueue's controller should run as a process of the sim"

        # The layer off: the deletes destroy runs, with the cluster still there to count.
        project.pulumi("config", "set", "--stack", STACK, "gpu-lab:queues", "false")
        off = project.lab("up", stack=STACK)
        assert off.returncode == 0, f"{off.stdout[-3000:]}\n{off.stderr[-3000:]}"
        assert queues.census(project.kube_api(STACK)).leftovers == []
        assert not _controllers(workdir)
        assert project.outputs(STACK).get(out.QUEUES) is None
