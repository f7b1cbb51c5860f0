"""program.edge.stop_quietly_on_interrupt: SIGINT (the engine's shutdown of its plugins, or a
terminal's Ctrl-C) ends the program with one line and exit code 1, never a traceback.

Upstream: pulumi/pulumi v3.274.1 sdk/go/common/resource/plugin/plugin.go starts each plugin in a
process group of its own (``cmdutil.RegisterProcessGroup``) and stops it with
``cmdutil.InterruptChildren`` (sdk/go/common/util/cmdutil/child_unix.go: ``kill(-pid, SIGINT)``),
then SIGKILL after 5 s: the language host's group holds the program, so it gets that SIGINT."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from program.edge import INTERRUPTED
from tests.unit.program_harness import run_program, sim

ROOT = Path(__file__).resolve().parents[3]

#: A program blocked the way the lab's is while the engine works (in a wait), then interrupted.
PROGRAM = """
import os, signal, threading, time
from program.edge import stop_quietly_on_interrupt
stop_quietly_on_interrupt()
threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    time.sleep(30)
except Exception as exc:  # what the SDK does with a failed RPC: handle it and go on
    raise RuntimeError("handled") from exc
print("not reached")
"""


def test_sigint_ends_the_program_with_one_line_and_exit_code_1() -> None:
    p = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert p.stderr.strip() == INTERRUPTED
    assert "Traceback" not in p.stderr and "not reached" not in p.stdout


def test_without_it_the_same_program_dies_with_a_keyboardinterrupt_traceback() -> None:
    # Python's own SIGINT handler, as a program started from a terminal or by the engine has it:
    # a shell without job control starts background commands with SIGINT ignored, and a
    # process started with SIGINT ignored keeps it ignored (the test then saw "not reached").
    default = "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    p = subprocess.run(
        [sys.executable, "-c", PROGRAM.replace("stop_quietly_on_interrupt()\n", default)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode != 0 and "KeyboardInterrupt" in p.stderr and "Traceback" in p.stderr


def test_the_program_installs_it_first_even_when_config_is_refused(chart: str) -> None:
    assert run_program(sim(chart)).sigint_quiet
    refused = run_program(sim(chart, simGpus="lots"))
    assert refused.error is not None and refused.sigint_quiet
