"""scripts/lab's own handling of what a user passes through make: ``PULUMI_ARGS``.

The user's CLI is a stand-in (``user_cli_path``) that logs every call's arguments and
answers 0: nothing reaches an engine, so this runs in a second.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support import releases


def _preview_calls(tmp_path: Path, extra: dict[str, str]) -> list[list[str]]:
    """``scripts/lab preview`` in a fresh clone for the sim stack, with ``extra`` in the
    environment, against a stand-in CLI that logs each call's arguments (NUL-separated, one
    record per call) and answers 0; the calls that are ``preview``, each its argument list."""
    clone = releases.fresh_clone(tmp_path / "clone")
    (clone / "a.txt").write_text("a glob would match me\n")
    log = tmp_path / "calls.log"
    fake = tmp_path / "fake-pulumi"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\0' \"$@\" >> {log}\nprintf '\\036' >> {log}\n")
    fake.chmod(0o755)
    env = releases.user_machine_env(tmp_path, str(fake), {"GPULAB_STACK": "sim", **extra})
    p = subprocess.run(
        ["bash", "scripts/lab", "preview"], cwd=clone, env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr[-3000:]
    calls = [rec.split("\0")[:-1] for rec in log.read_text().split("\x1e")[:-1]]
    return [c for c in calls if c[:1] == ["preview"]]


#: What scripts/lab itself passes to ``pulumi preview`` for the sim stack.
PREVIEW = ["preview", "--stack", "sim", "--policy-pack", "policy"]


def test_pulumi_args_reach_the_cli_as_words_with_nothing_interpreted(tmp_path: Path) -> None:
    """``make lab PULUMI_ARGS=...`` splits at whitespace (spaces, tabs, newlines) only: a glob,
    ``$HOME``, ``$(...)``, ``;`` and quotes reach the CLI literally, one word each, and nothing
    runs (no file named by the ``$(...)`` appears)."""
    marker = tmp_path / "ran"
    value = f'--diff  *.txt $HOME\t$(touch {marker});x "two words"\n--color=never'
    words = ["--diff", "*.txt", "$HOME", "$(touch", f"{marker});x", '"two', 'words"', "--color=never"]
    assert _preview_calls(tmp_path, {"PULUMI_ARGS": value}) == [[*PREVIEW, *words]]
    assert not marker.exists()


def test_no_pulumi_args_adds_no_argument(tmp_path: Path) -> None:
    assert _preview_calls(tmp_path, {}) == [PREVIEW]
