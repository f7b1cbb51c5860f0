"""`make bench`: time the simulated lab's `pulumi up`, no-op `up` and `destroy` against the
chapter's steps as a plain shell script (bench/plain-lab.sh) on the same simulated cluster.

Runs each ``--runs`` times (default 3), prints a table of medians and the ratio, and writes
``.state/bench.json``. Targets (issue #4): our up within 1.5x of the plain script; no-op up
under 10 s; destroy under 30 s. This is a benchmark, not a test: it reports, it does not
assert (exit code 1 only when a target is missed, so a CI job could gate on it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpulab.sandbox import make_project, missing_toolchain, shared_chart, toolchain_env  # noqa: E402


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    t0 = time.monotonic()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    chart = shared_chart()
    env = toolchain_env()
    why = missing_toolchain(env)
    if why or chart is None:
        print(f"bench: {why or 'no offline chart: set GPULAB_CHART_PATH'}", file=sys.stderr)
        return 2
    rows: dict[str, list[float]] = {"plain up": [], "plain down": [], "up": [], "no-op up": [], "destroy": []}
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="gpulab-bench-") as tmp:
            base = Path(tmp)
            proj = make_project(base, env)
            wd = str(proj.dir / ".state" / "plain")
            (proj.dir / ".state").mkdir(exist_ok=True)
            script = str(ROOT / "bench" / "plain-lab.sh")
            rows["plain up"].append(timed([script, "up", f"bench-plain-{i}", wd, chart], proj.dir, proj.env))
            rows["plain down"].append(timed([script, "down", f"bench-plain-{i}", wd], proj.dir, proj.env))
            proj.init("sim", chartPath=chart, profile=f"bench-{i}")
            rows["up"].append(proj.timed("up", "--yes", "--skip-preview", "--stack", "sim")[0])
            rows["no-op up"].append(proj.timed("up", "--yes", "--skip-preview", "--stack", "sim")[0])
            rows["destroy"].append(proj.timed("destroy", "--yes", "--skip-preview", "--stack", "sim")[0])
        print(
            f"run {i + 1}/{args.runs}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in rows.items()), flush=True
        )
    med = {k: statistics.median(v) for k, v in rows.items()}
    ratio = med["up"] / med["plain up"]
    print(f"\nmedians over {args.runs} runs (seconds)")
    for k, v in med.items():
        print(f"  {k:<11} {v:7.1f}")
    print(f"  up / plain up = {ratio:.2f} (target <= 1.5)")
    ok = ratio <= 1.5 and med["no-op up"] < 10 and med["destroy"] < 30
    print("targets: " + ("met" if ok else "MISSED"))
    (ROOT / ".state").mkdir(exist_ok=True)
    (ROOT / ".state" / "bench.json").write_text(
        json.dumps({"runs": rows, "medians": med, "ratio": ratio}, indent=2)
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
