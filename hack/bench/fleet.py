"""`make bench` (part 2): what verifying a simulated fleet costs as it grows.

For each size (default 10 and 100 nodes of 8 simulated GPUs, the GPU stack found installed:
variants.sim.ctl ``--node-spec``/``--preinstalled``) it starts the simulated control plane,
then times the fleet check the lab runs as its gate (``python -m gpulab.kube fleet``: every
node gated against GPU Feature Discovery's labels, a smoke and a compute Pod pinned to each,
``--parallelism`` nodes at a time) from its start to its verdict, and tears the cluster down.

Prints one line per size (nodes, GPUs, seconds to the verdict, seconds per node, the cluster's
own start apart) and the growth: the ratio of the times against the ratio of the sizes
(linear growth: equal ratios). Writes ``.state/bench-fleet.json``.

Target (issue #24): 100 nodes verified in under 5 minutes on a 2-core machine, growing no
faster than linearly. A benchmark, not a test: it reports; the exit code is 1 only when a
target is missed. Everything it measures is simulated (kwok runs no container): it measures
the lab's own cost (API calls, scheduling, waits), not a GPU's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.sandbox import toolchain_env  # noqa: E402

#: The targets: seconds for 100 nodes, and the most the time may grow per unit of size.
TARGET_100_S = 300.0
LINEAR_SLACK = 1.0
NAMESPACE = "gpu-lab"


def _run(
    argv: list[str], env: dict[str, str], timeout: float, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=timeout
    )


def measure(nodes: int, gpus: int, parallelism: int, env: dict[str, str]) -> dict[str, Any]:
    """One size: the cluster's start, then the fleet check's time to its verdict (seconds)."""
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="gpulab-bench-fleet-") as tmp:
        where = ["--name", f"bench-fleet-{nodes}", "--workdir", str(Path(tmp) / "sim")]
        specs = [a for i in range(nodes) for a in ("--node-spec", f"gpu-{i:03d}={gpus}")]
        t0 = time.monotonic()
        up = _run(
            [
                py,
                "-m",
                "variants.sim.ctl",
                "up",
                *where,
                *specs,
                "--preinstalled",
                "--log-namespace",
                NAMESPACE,
            ],
            env,
            1200,
        )
        start_s = time.monotonic() - t0
        try:
            if up.returncode != 0:
                raise RuntimeError(f"the simulated fleet did not start: {up.stderr[-2000:]}")
            kubeconfig = json.loads(up.stdout)["kubeconfig"]
            kenv = {**env, "GPULAB_KUBECONFIG": kubeconfig}
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
            with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=tmp, delete=False) as kc:
                kc.write(kubeconfig)
            made = _run(["kubectl", "--kubeconfig", kc.name, "apply", "-f", "-"], env, 60, json.dumps(ns))
            if made.returncode != 0:
                raise RuntimeError(f"namespace {NAMESPACE}: {made.stderr}")
            t1 = time.monotonic()
            check = _run(
                [
                    py, "-m", "gpulab.kube", "fleet", "--namespace", NAMESPACE,
                    "--smoke-image", "nvidia/cuda:12.4.1-base-ubuntu22.04",
                    "--compute-image", "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0",
                    "--parallelism", str(parallelism), "--simulated", "--grace", "30",
                ],
                kenv,
                1800,
            )  # fmt: skip
            verdict_s = time.monotonic() - t1
            if check.returncode != 0:
                raise RuntimeError(f"the fleet check failed: {check.stderr[-2000:]}")
            result = json.loads(check.stdout.strip().splitlines()[-1])
            passed = result["nodesPassed"]
        finally:
            _run([py, "-m", "variants.sim.ctl", "down", *where], env, 600)
    return {
        "nodes": nodes,
        "gpus": nodes * gpus,
        "parallelism": parallelism,
        "clusterStartSeconds": round(start_s, 1),
        "verdictSeconds": round(verdict_s, 1),
        "secondsPerNode": round(verdict_s / nodes, 2),
        "nodesPassed": passed,
        "summary": result["nodesSummary"],
    }


def main(argv: list[str] | None = None) -> int:
    """Measure every size, print the table and the growth; 1 when a target is missed."""
    ap = argparse.ArgumentParser(prog="hack/bench/fleet.py")
    ap.add_argument("--sizes", default="10,100", help="node counts, comma-separated")
    ap.add_argument("--gpus", type=int, default=8, help="simulated GPUs per node")
    ap.add_argument("--parallelism", type=int, default=4, help="fleetParallelism (the lab's default: 4)")
    args = ap.parse_args(argv)
    env = toolchain_env("sim")  # the simulated control plane's binaries on PATH
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print(f"fleet check (simulated, {args.gpus} GPUs per node, fleetParallelism {args.parallelism}):")
    rows = []
    for n in sizes:
        row = measure(n, args.gpus, args.parallelism, env)
        rows.append(row)
        print(
            f"  {row['nodes']:>4} nodes, {row['gpus']:>4} GPUs: verdict in {row['verdictSeconds']:7.1f} s "
            f"({row['secondsPerNode']:.2f} s/node; {row['nodesPassed']} passed); cluster start "
            f"{row['clusterStartSeconds']:.1f} s apart",
            flush=True,
        )
    missed = []
    growth = None
    if len(rows) >= 2:
        small, large = rows[0], rows[-1]
        size_ratio = large["nodes"] / small["nodes"]
        time_ratio = large["verdictSeconds"] / max(small["verdictSeconds"], 0.1)
        growth = {"sizeRatio": size_ratio, "timeRatio": round(time_ratio, 2)}
        linear = time_ratio <= size_ratio * LINEAR_SLACK
        print(
            f"  growth: {size_ratio:.0f}x the nodes took {time_ratio:.2f}x the time "
            f"({'no faster than linear' if linear else 'FASTER THAN LINEAR'})"
        )
        if time_ratio > size_ratio * LINEAR_SLACK:
            missed.append("growth faster than linear")
    for r in rows:
        if r["nodes"] == 100 and r["verdictSeconds"] > TARGET_100_S:
            missed.append(f"100 nodes took {r['verdictSeconds']} s (target < {TARGET_100_S:.0f} s)")
    out = ROOT / ".state" / "bench-fleet.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "growth": growth, "missed": missed}, indent=2) + "\n")
    print(f"  targets: {'met' if not missed else 'MISSED: ' + '; '.join(missed)} (written to {out})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
