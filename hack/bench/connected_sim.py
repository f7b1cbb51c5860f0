"""The simulated lab on a connected machine without Go (issue #26): a fresh clone's
``make lab`` and ``make destroy``, timed.

The machine is presented as a connected user's laptop: no ``go`` on PATH, the user's own
Pulumi CLI (this machine's offline build behind a wrapper), an empty ``GPULAB_CACHE``; a
loopback server stands in for dl.k8s.io, github.com, api.github.com and get.helm.sh and
serves the binaries toolchain/sim/build.sh built here, repackaged as the projects package
their releases (tests/support/releases.py). ``--mbit`` throttles that server to a link of
that many Mbit/s, shared by all downloads, so the download share of a real first run can be
seen (the files served are this build's: the kube binaries are the one multi-call binary
four times, larger than upstream's four; the byte count is printed). ``--fresh-venv`` makes
the clone create its own .venv from PyPI, as a real first run does; by default it links the
checkout's.

Prints one table and writes ``.state/bench-connected-sim.json``. Target (issue #26): ``make
lab`` under 120 s including downloads. A benchmark, not a test: exit code 1 only when the
target is missed, 2 when it cannot run here.

    .venv/bin/python hack/bench/connected_sim.py [--mbit 100] [--fresh-venv]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support import releases  # noqa: E402
from tests.support.sandbox import missing_toolchain, shared_chart, toolchain_env  # noqa: E402

TARGET_S = 120.0


def _make(target: str, cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    t0 = time.monotonic()
    p = subprocess.run(
        ["make", "--no-print-directory", target],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return time.monotonic() - t0, p


def run_once(mbit: float | None, fresh_venv: bool) -> dict[str, Any]:
    """One fresh clone: ``make lab`` then ``make destroy``; seconds, bytes, exit codes."""
    env = toolchain_env("sim")
    why = missing_toolchain(env)
    chart = shared_chart()
    if why or chart is None:
        why = why or "no offline gpu-operator chart"
        raise SystemExit(f"hack/bench/connected_sim.py: cannot run here: {why}")
    cache = releases.fetch.cache_root(env)
    with tempfile.TemporaryDirectory(prefix="gpulab-bench-connected-") as tmp_s:
        tmp = Path(tmp_s)
        clone = releases.fresh_clone(tmp / "clone", venv=not fresh_venv)
        rate = mbit * 1e6 / 8 if mbit else None
        with releases.serving_build(tmp, cache, rate_bytes_per_s=rate) as server:
            user = releases.user_machine_env(
                tmp, os.path.realpath(env["GPULAB_PULUMI"]), {**server.env(), "GPULAB_CHART_PATH": chart}
            )
            up_s, up = _make("lab", clone, user)
            down_s, down = _make("destroy", clone, user)
            sent = server.bytes_sent
        text = up.stderr
        m = re.search(r"(\d+) files, (\d+) MiB in (\d+) s, each matched", text)
        row = {
            "make lab s": round(up_s, 1),
            "of which sim downloads s": int(m.group(3)) if m else None,
            "make destroy s": round(down_s, 1),
            "downloaded MiB": round(sent / 2**20),
            "link": f"{mbit:g} Mbit/s (throttled loopback)" if mbit else "loopback, unthrottled",
            "venv": "created (pip)" if fresh_venv else "linked",
            "lab rc": up.returncode,
            "destroy rc": down.returncode,
        }
        if up.returncode != 0 or down.returncode != 0:
            row["tail"] = (up.stdout + up.stderr + down.stderr)[-3000:]
        return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--mbit", type=float, default=None, help="throttle the loopback server to this link speed"
    )
    ap.add_argument("--fresh-venv", action="store_true", help="let the clone create its .venv from PyPI")
    args = ap.parse_args()
    if releases.built_binaries(releases.fetch.cache_root(toolchain_env("sim"))) is None:
        print(
            "hack/bench/connected_sim.py: the Go build of the sim toolchain is incomplete: "
            "`make toolchain-tests`"
        )
        return 2
    row = run_once(args.mbit, args.fresh_venv)
    width = max(len(k) for k in row)
    for k, v in row.items():
        if k != "tail":
            print(f"{k:<{width}}  {v}")
    if "tail" in row:
        print(row["tail"], file=sys.stderr)
    met = row["lab rc"] == 0 and row["destroy rc"] == 0 and row["make lab s"] < TARGET_S
    print(f"target: make lab < {TARGET_S:.0f} s including downloads: {'met' if met else 'MISSED'}")
    out = ROOT / ".state" / "bench-connected-sim.json"
    out.parent.mkdir(exist_ok=True)
    record = {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "cores": os.cpu_count(), **row}
    out.write_text(json.dumps(record, indent=1) + "\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
