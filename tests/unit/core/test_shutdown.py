"""gpulab.core.shutdown: a process that asked ends with its objects frozen, after its atexit
handlers and with its exit code; the check entry points and the program ask."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.program_harness import run_program, sim

ROOT = Path(__file__).resolve().parents[3]

#: Registered first (so run last, atexit being last in, first out), these handlers print how
#: many objects were frozen when they ran.
PROBE = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print(f'last frozen={gc.get_freeze_count()}', file=sys.stderr))\n"
)


def _frozen(stderr: str, tag: str) -> int:
    line = next(line for line in stderr.splitlines() if line.startswith(f"{tag} frozen="))
    return int(line.split("=", 1)[1])


def test_the_exit_freezes_after_the_later_handlers_and_keeps_the_exit_code() -> None:
    code = (
        PROBE
        + "from gpulab.core.shutdown import skip_final_collection\n"
        + "skip_final_collection()\n"
        + "skip_final_collection()\n"  # asking twice changes nothing
        + "atexit.register(lambda: print(f'later frozen={gc.get_freeze_count()}', file=sys.stderr))\n"
        + "sys.exit(3)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 3
    # A handler registered after the request still ran, before the freeze; the last one after it.
    assert _frozen(p.stderr, "later") == 0
    assert _frozen(p.stderr, "last") > 1000


def test_without_it_nothing_is_frozen_at_exit() -> None:
    p = subprocess.run(
        [sys.executable, "-c", PROBE + "sys.exit(0)\n"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0 and _frozen(p.stderr, "last") == 0


@pytest.mark.parametrize(
    ("module", "args", "code"),
    [
        # No kubeconfig: the check fails at once, naming it (exit 1).
        ("gpulab.kube", ["ping"], 1),
        # A usage error (argparse's exit 2) still ends the same way.
        ("gpulab.kube.identity", ["no-such-command"], 2),
    ],
)
def test_the_check_entry_points_exit_frozen(tmp_path: Path, module: str, args: list[str], code: int) -> None:
    (tmp_path / "sitecustomize.py").write_text(PROBE)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}", "GPULAB_KUBECONFIG": ""}
    p = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == code, p.stderr
    assert _frozen(p.stderr, "last") > 1000


def test_the_program_asks_before_anything_can_fail(chart: str) -> None:
    assert run_program(sim(chart)).final_collection_skipped
    refused = run_program(sim(chart, simGpus="lots"))
    assert refused.error is not None and refused.final_collection_skipped
