"""What the program renders for the real node: the gate's argv, the smoke and compute Pods and
their checks' argv (hack/node; workplace only).

The real-node harness runs the lab's own cluster-side commands with exactly the arguments and
Pod specs the program makes, not copies written by hand: this runs ``__main__.py`` under the
unit tests' Pulumi mocks (tests/unit/program_harness.py) for the ``existing`` variant on the
harness's images, and takes the commands' argv and the Pods' manifests from what the program
registered. ``negative`` is the same with ``gpuGraceSeconds`` set for the unhealthy-GPU test.
``fleet`` is the same variant with the GPU stack found installed (``gpuStack: found``, the
node's pool and its GPUs in ``nodePoolLabel`` / ``nodePoolGpus``: :data:`FLEET`): the access
check's and the fleet check's argv, the lab's namespace, the chapter's smoke and compute Pods.

    .venv/bin/python hack/node/render.py > rendered.json
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.unit import program_harness  # noqa: E402

#: The harness's images (hack/node/device/node.py IMAGES), named as what they are.
SMOKE_IMAGE = "gpulab.local/node-smoke:1"
COMPUTE_IMAGE = "gpulab.local/vectoradd:1"
#: The negative's gpuGraceSeconds: how long allocatable 0 may last before the gate fails.
NEGATIVE_GRACE = 20
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: gpulab, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: admin, user: {}}]
contexts: [{name: gpulab, context: {cluster: gpulab, user: admin}}]
current-context: gpulab
"""
MODULE = ["python", "-m", "gpulab.kube"]
#: The node's pool label and its value (the kubelet's --node-labels in the fleet mode): no GPU
#: Feature Discovery runs there, so the fleet check's expectation comes from config.
POOL_LABEL, POOL = "gpulab.dev/node-pool", "h200"
#: The found-stack mode's keys: the GPU stack found installed, the node's pool of 1 GPU.
FLEET: dict[str, Any] = {"gpuStack": "found", "nodePoolLabel": POOL_LABEL, "nodePoolGpus": f"{POOL}=1"}


def config(**extra: Any) -> dict[str, Any]:
    """The stack config rendered: the existing variant, one GPU, the harness's images, no DCGM
    exporter (and the
    chart offline: ``GPULAB_CHART_PATH``, else the workplace's copy; only its CRD check and the
    release use it)."""
    chart = os.environ.get("GPULAB_CHART_PATH") or str(ROOT.parent / "shared" / "charts" / "gpu-operator")
    return {
        "cluster": "existing",
        "chartPath": chart,
        "expectedGpus": 1,
        "smokeImage": SMOKE_IMAGE,
        "computeImage": COMPUTE_IMAGE,
        # No operator runs on the node, so no DCGM exporter to scrape.
        "dcgmExporter": False,
        # More keys (without the gpu-lab: prefix), e.g. the mode in which the lab finds the
        # GPU stack installed: a JSON object in $GPULAB_RENDER_CONFIG.
        **json.loads(os.environ.get("GPULAB_RENDER_CONFIG") or "{}"),
        **extra,
    }


def _census(purpose: str, gpus: int = 1) -> str:
    # The existing variant's read-only census; its facts do not shape the commands or Pods.
    if purpose == "existing-census":
        return json.dumps({"kubernetesVersion": "v0.0.0", "nodes": 1, "gpuNodes": [], "preexistingCrds": []})
    return ORIGINAL_FAKE(purpose, gpus)


ORIGINAL_FAKE = program_harness.fake_stdout


def render(cfg: dict[str, Any]) -> dict[str, Any]:
    """The gate's argv, the smoke and compute Pods' manifests and their checks' argv (each
    argv after ``python -m gpulab.kube``) that the program registers for ``cfg``, and the
    existing variant's census (after ``python``; its kubeconfig path ``KUBECONFIG_PATH``).
    With ``gpuStack: found`` there is no gate: ``access`` and ``fleet`` (argv) and
    ``namespace`` (the lab's Namespace manifest) instead.

    Raises:
        RuntimeError: the program failed, or registered none of these.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as kc:
        kc.write(KUBECONFIG)
        kc.flush()
        program_harness.fake_stdout = _census
        try:
            run = program_harness.run_program({**cfg, "kubeconfigPath": kc.name})
        finally:
            program_harness.fake_stdout = ORIGINAL_FAKE
    if run.error:
        raise RuntimeError(f"the program failed under mocks: {run.error!r}")

    def full_argv(step: str) -> list[str]:
        regs = [r for r in run.registrations if r.typ == program_harness.COMMAND and _step(r) == step]
        if len(regs) != 1:
            raise RuntimeError(f"expected one {step} command, got {len(regs)}")
        return regs[0].argv()

    def argv(step: str) -> list[str]:
        full = full_argv(step)
        if full[:3] != MODULE:
            raise RuntimeError(f"{step} is not python -m gpulab.kube: {full}")
        return full[3:]

    def manifest(typ: str, name: str, keys: tuple[str, ...]) -> dict[str, Any]:
        for r in run.registrations:
            if r.typ == f"kubernetes:core/v1:{typ}" and (r.inputs.get("metadata") or {}).get("name") == name:
                return {"apiVersion": "v1", "kind": typ, **{k: r.inputs[k] for k in keys if k in r.inputs}}
        raise RuntimeError(f"no {typ} {name} registered")

    def pod(name: str) -> dict[str, Any]:
        return manifest("Pod", name, ("apiVersion", "kind", "metadata", "spec"))

    census = full_argv("existing-census")
    # The kubeconfig the program read was this rendering's own; the run passes the node's.
    census[census.index("--kubeconfig-path") + 1] = "KUBECONFIG_PATH"
    doc: dict[str, Any] = {
        "config": cfg,
        "census": census[1:],
        "smoke": {"pod": pod("gpu-smoke"), "check": argv("smoke-check")},
        "compute": {"pod": pod("gpu-compute"), "check": argv("compute-check")},
    }
    if cfg.get("gpuStack") == "found":
        namespace = doc["smoke"]["pod"]["metadata"]["namespace"]
        doc |= {
            "access": argv("fleet-access"),
            "fleet": argv("fleet-check"),
            "namespace": manifest("Namespace", namespace, ("metadata",)),
        }
    else:
        doc["gate"] = argv("operator-gate")
    return doc


def _step(reg: program_harness.Registration) -> str | None:
    """A Command's step; the found stack's two commands, which gpulab.core.argv.STEPS does not
    name, as ``fleet-access`` and ``fleet-check`` (by their subcommand)."""
    if reg.step:
        return reg.step
    argv = reg.argv()
    if argv[:3] == MODULE and len(argv) > 3 and argv[3] in ("access", "fleet"):
        return f"fleet-{'check' if argv[3] == 'fleet' else 'access'}"
    return None


def main() -> int:
    """Print the renderings as one JSON document: the variant as configured (``positive``,
    ``negative``) and with the GPU stack found installed (``fleet``: the same two)."""
    doc = {
        "positive": render(config()),
        "negative": render(config(gpuGraceSeconds=NEGATIVE_GRACE)),
        "fleet": {
            "positive": render(config(**FLEET)),
            "negative": render(config(**FLEET, gpuGraceSeconds=NEGATIVE_GRACE)),
        },
    }
    print(json.dumps(doc, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
