"""A recorded real-node run replayed through the program: its stack outputs and baseline card.

Workplace only (hack/node). The run (hack/node/device/node.py) ran the lab's own
cluster-side commands on a real kubelet, but not the Pulumi engine (the CLI and the
Kubernetes provider do not fit one device call beside the node). This runs ``__main__.py``
under the unit tests' Pulumi mocks (tests/unit/program_harness.py) with the configuration the
run rendered plus ``hostProbe: nvidia-smi``, where each command the program registers prints
what the same command printed on the node (the census, the gate, the smoke and compute
checks) and the host probe returns what it read there; the program then exports the outputs
it would have exported, and the card is made from them (gpulab.verdict.card).

What the run did not do is not reported as done: no Helm release was installed (no operator
runs there), so the outputs about the chart are dropped (:data:`NOT_RUN`) and the card shows
them unknown.

The negative: the gate failed there, so a ``pulumi up`` would have stopped and exported
nothing new (the stack keeps its previous outputs: README's "What the lab still lacks"). What
is replayed instead is the checklist's judgement of the node as the failed gate saw it: the
gate's facts with the allocatable and capacity the node then advertised (its recorded
``node-unhealthy.json``, summed by the gate's own :class:`gpulab.kube.gate_rules.Resources`).

The fleet run (``run.sh fleet``: ``gpuStack: found``) is replayed the same way with the
rendering's ``fleet`` configuration: the access check, the fleet check (the node table) and
the chapter's smoke and compute checks print what they printed there. Its negative (the fleet
check failed: no node passed its gate) stops a ``pulumi up``, so it has no outputs to replay.

    .venv/bin/python hack/node/replay.py tests/data/device-h200-node/run OUTDIR
    .venv/bin/python hack/node/replay.py tests/data/device-h200-node/fleet OUTDIR
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpulab.core import outputs as out  # noqa: E402
from tests.unit import program_harness  # noqa: E402

#: Outputs about a Helm release of the GPU Operator, which the run did not install (the
#: components the chart would have been configured with, ``operatorComponents``, stay: the
#: checklist reads from them that no DCGM exporter was configured).
NOT_RUN: tuple[str, ...] = (
    out.CHART_VERSION,
    out.CHART_SOURCE,
    out.OPERAND_IMAGES,
    out.DEVICE_PLUGIN_OWNER,
    out.LEFTOVERS,
)


class ReplayError(RuntimeError):
    """The run's record lacks what the replay needs."""


def _stdout(summary: Mapping[str, Any], key: str) -> str:
    doc = (summary.get(key) or {}).get("stdout")
    if not isinstance(doc, dict):
        raise ReplayError(f"the run recorded no JSON stdout for {key!r}")
    return json.dumps(doc)


def replay(
    run: Path, *, negative: bool = False, fleet: bool = False
) -> tuple[dict[str, Any], BaseException | None]:
    """The program's outputs on the run recorded in ``run`` (a tests/data folder made by
    hack/node/record.py) and the program's error (None when it finished). ``negative``:
    the node as the negative's failed gate saw it (:func:`unhealthy_gate_facts`). ``fleet``:
    the run of the GPU stack found installed (``run.sh fleet``; no negative).

    Raises:
        ReplayError: the record lacks the rendering, a check's output or the host probe.
    """
    from gpulab.core.argv import decode
    from program import edge
    from tests.support.host_facts import facts_from_json

    summary = json.loads((run / "summary.json").read_text())
    rendered = json.loads((run / "rendered.json").read_text())
    facts = facts_from_json(json.loads((run / "host-probe.json").read_text()))
    stdout = {
        "existing-census": _stdout(summary, "census"),
        "smoke-check": _stdout(summary, "smoke"),
        "compute-check": _stdout(summary, "compute"),
    }
    section = rendered["positive"]
    if fleet:
        if negative:
            raise ReplayError("the fleet run's negative stopped the lab: nothing to replay")
        section = rendered["fleet"]["positive"]
        stdout["fleet-access"] = _stdout(summary, "access")
        stdout["fleet-check"] = json.dumps(((summary.get("fleet") or {}).get("check") or {}).get("stdout"))
        if stdout["fleet-check"] == "null":
            raise ReplayError("the run recorded no JSON stdout for the fleet check")
        gate_facts: dict[str, Any] = {}
    else:
        gate = summary.get("gate") or {}
        if gate.get("rc") != 0 or not isinstance(gate.get("stdout"), dict):
            raise ReplayError("the run recorded no passing gate")
        gate_facts = dict(gate["stdout"])
    if negative:
        gate_facts.update(unhealthy_gate_facts(run))
    original_fake, original_probe = program_harness.fake_stdout, edge.probe_host
    original_step_of = program_harness.step_of

    def step_of(command: str | None) -> str | None:
        # The found stack's two commands have no step name (gpulab.core.argv.STEPS): by their
        # subcommand, as hack/node/render.py names them.
        step = original_step_of(command)
        if step or not isinstance(command, str):
            return step
        argv = decode(command)
        if argv[:3] == ["python", "-m", "gpulab.kube"] and argv[3:4] in (["access"], ["fleet"]):
            return "fleet-check" if argv[3] == "fleet" else "fleet-access"
        return None

    def fake(purpose: str, gpus: int = 1) -> str:
        if purpose == "operator-gate":
            return json.dumps(gate_facts)
        if purpose in stdout:
            return stdout[purpose]
        return original_fake(purpose, gpus)

    cfg = {**(rendered["negative"] if negative else section)["config"], "hostProbe": "nvidia-smi"}
    # The chart only feeds the release's and the CRD check's resources: this machine's copy.
    cfg["chartPath"] = os.environ.get("GPULAB_CHART_PATH") or cfg["chartPath"]
    program_harness.fake_stdout = fake
    program_harness.step_of = step_of
    edge.probe_host = lambda *a, **k: facts  # type: ignore[assignment]
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as kubeconfig:
            kubeconfig.write(KUBECONFIG)
            kubeconfig.flush()
            result = program_harness.run_program({**cfg, "kubeconfigPath": kubeconfig.name})
    finally:
        program_harness.fake_stdout, edge.probe_host = original_fake, original_probe
        program_harness.step_of = original_step_of
    outputs = {k: v for k, v in result.outputs.items() if k not in NOT_RUN and k != out.KUBECONFIG}
    # The program stamps runAt when it runs (here: now); the run's program time is when its
    # first command, the census, started on the node (the host probe read the host there 3 s on).
    outputs[out.RUN_AT] = step_started(summary, "census")
    return outputs, result.error


def step_started(summary: Mapping[str, Any], step: str) -> str:
    """When ``step`` of the recorded run started (UTC ISO 8601, to the second).

    Raises:
        ReplayError: the run has no such step.
    """
    from datetime import datetime, timedelta

    start = next((s["start"] for s in summary.get("steps") or [] if s["step"] == step), None)
    if start is None:
        raise ReplayError(f"the run recorded no {step} step")
    t0 = datetime.fromisoformat(str(summary["startedAt"]).replace("Z", "+00:00"))
    return (t0 + timedelta(seconds=float(start))).isoformat(timespec="seconds")


#: The node's kubeconfig as the program read it (credentials left out: nothing connects).
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: gpulab, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: admin, user: {}}]
contexts: [{name: gpulab, context: {cluster: gpulab, user: admin}}]
current-context: gpulab
"""


def unhealthy_gate_facts(run: Path) -> dict[str, Any]:
    """The gate's facts about the node while its GPU was reported unhealthy: allocatable and
    capacity from the recorded node (``node-unhealthy.json``, as the gate sums them), read
    when the node last reported (its Ready condition's heartbeat).

    Raises:
        ReplayError: the negative's node was not recorded.
    """
    from gpulab.kube.gate_rules import Resources

    path = run / "node-unhealthy.json"
    if not path.exists():
        raise ReplayError(f"no {path}: the run recorded no node during the negative")
    node = json.loads(path.read_text())
    have = Resources.of([node])
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    return {
        "allocatableGpus": have.allocatable,
        "capacityGpus": have.capacity,
        "measuredAt": ready["lastHeartbeatTime"],
    }


def card(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline card (gpulab.verdict.card) of ``outputs``."""
    from gpulab.core.outputs import LabOutputs
    from gpulab.verdict.card.model import build_card

    return build_card(LabOutputs.from_json(outputs))


def main(argv: list[str]) -> int:
    """CLI: ``replay.py RUN OUTDIR``: outputs.json, baseline-card.{json,md} for the positive
    run, and the same with ``-negative`` for the negative (not for a fleet run)."""
    from gpulab.verdict.card.markdown import render_markdown

    run, outdir = Path(argv[0]), Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    fleet = json.loads((run / "summary.json").read_text()).get("mode") == "fleet"
    for negative, suffix in ((False, ""),) if fleet else ((False, ""), (True, "-negative")):
        outputs, error = replay(run, negative=negative, fleet=fleet)
        doc = card(outputs)
        (outdir / f"outputs{suffix}.json").write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n")
        (outdir / f"baseline-card{suffix}.json").write_text(json.dumps(doc, indent=1) + "\n")
        (outdir / f"baseline-card{suffix}.md").write_text(render_markdown(doc))
        what = "negative" if negative else "positive"
        print(f"{what}: checklist {doc['checklist']['result']}; program error: {str(error)[:200]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
