"""A recorded real-node run replayed through the program: its stack outputs and baseline card.

Workplace only (toolchain/node). The run (toolchain/node/device/node.py) ran the lab's own
cluster-side commands on a real kubelet, but not the Pulumi engine (the CLI and the
Kubernetes provider do not fit one device call beside the node). This runs ``__main__.py``
under the unit tests' Pulumi mocks (tests/unit/program_harness.py) with the configuration the
run rendered plus ``hostProbe: nvidia-smi``, where each command the program registers prints
what the same command printed on the node (the census, the gate, the smoke and compute
checks) and the host probe returns what it read there; the program then exports the outputs
it would have exported, and the card is made from them (gpulab.card).

What the run did not do is not reported as done: no Helm release was installed (no operator
runs there), so the outputs about the chart and the operator's components are dropped
(:data:`NOT_RUN`) and the card shows them unknown. A negative run (the gate failed) replays
with the gate's command failing: the program stops there, as ``pulumi up`` does, and the card
is made from the outputs it got to.

    .venv/bin/python toolchain/node/replay.py tests/data/device-h200-node/run OUTDIR
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from gpulab import outputs as out  # noqa: E402
from tests.unit import program_harness  # noqa: E402

#: Outputs about a Helm release of the GPU Operator, which the run did not install.
NOT_RUN: tuple[str, ...] = (
    out.CHART_VERSION,
    out.CHART_SOURCE,
    out.OPERATOR_COMPONENTS,
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


def replay(run: Path, *, negative: bool = False) -> tuple[dict[str, Any], BaseException | None]:
    """The program's outputs on the run recorded in ``run`` (a tests/data folder made by
    toolchain/node/record.py) and the program's error (None when it finished). ``negative``:
    the gate as the negative test saw it (it failed).

    Raises:
        ReplayError: the record lacks the rendering, a check's output or the host probe.
    """
    from gpulab import probe

    summary = json.loads((run / "summary.json").read_text())
    rendered = json.loads((run / "rendered.json").read_text())
    facts = probe.facts_from_json(json.loads((run / "host-probe.json").read_text()))
    stdout = {
        "existing-census": _stdout(summary, "census"),
        "smoke-check": _stdout(summary, "smoke"),
        "compute-check": _stdout(summary, "compute"),
    }
    gate = (summary.get("negative") or {}).get("gate") if negative else summary.get("gate")
    if not gate:
        raise ReplayError("the run recorded no gate")
    original_fake, original_probe = program_harness.fake_stdout, probe.probe_host

    def fake(purpose: str, gpus: int = 1) -> str:
        if purpose == "operator-gate":
            if gate["rc"] != 0:
                # The Command fails as on the node: the engine stops the update there.
                raise RuntimeError(f"python -m gpulab.kube gate exited {gate['rc']}:\n{gate['stderr']}")
            return json.dumps(gate["stdout"])
        if purpose in stdout:
            return stdout[purpose]
        return original_fake(purpose, gpus)

    cfg = {**(rendered["negative" if negative else "positive"]["config"]), "hostProbe": "nvidia-smi"}
    kubeconfig = run / "replay-kubeconfig.yaml"
    program_harness.fake_stdout = fake
    probe.probe_host = lambda *a, **k: facts  # type: ignore[assignment]
    try:
        kubeconfig.write_text(program_harness.KUBECONFIG.replace("clusters: []", _CLUSTER))
        result = program_harness.run_program({**cfg, "kubeconfigPath": str(kubeconfig)})
    finally:
        program_harness.fake_stdout, probe.probe_host = original_fake, original_probe
        kubeconfig.unlink(missing_ok=True)
    outputs = {k: v for k, v in result.outputs.items() if k not in NOT_RUN and k != out.KUBECONFIG}
    return outputs, result.error


_CLUSTER = """clusters:
- name: gpulab
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: admin
  user: {}
contexts:
- name: gpulab
  context: {cluster: gpulab, user: admin}
current-context: gpulab"""


def card(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline card (gpulab.card) of ``outputs``."""
    from gpulab.card.model import build_card

    return build_card(dict(outputs))


def main(argv: list[str]) -> int:
    """CLI: ``replay.py RUN OUTDIR``: outputs.json, baseline-card.{json,md} for the positive
    run, and the same with ``-negative`` for the negative."""
    from gpulab.card.markdown import render_markdown

    run, outdir = Path(argv[0]), Path(argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    for negative, suffix in ((False, ""), (True, "-negative")):
        outputs, error = replay(run, negative=negative)
        doc = card(outputs)
        (outdir / f"outputs{suffix}.json").write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n")
        (outdir / f"baseline-card{suffix}.json").write_text(json.dumps(doc, indent=1) + "\n")
        (outdir / f"baseline-card{suffix}.md").write_text(render_markdown(doc))
        what = "negative" if negative else "positive"
        print(f"{what}: checklist {doc['checklist']['result']}; program error: {str(error)[:200]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
