"""``make test``'s ``--dist loadgroup`` really sends an ``xdist_group`` to one worker.

The suite relies on it: a module-scoped lab (tests/e2e/test_sim_failures.py) is built once
only if its tests share a worker; spread over six, it is built six times, and nothing fails.
pytest 9.2 stopped the grouping silently (node ids became structured, xdist 3.8 still appends
``@group`` to the legacy ``_nodeid``: pytest-dev/pytest-xdist#1386), so this test runs a
grouped module through the pinned pytest and xdist and asserts where its tests ran.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

MODULE = """
import os
import pytest

@pytest.mark.xdist_group("one-lab")
@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    print(os.environ["PYTEST_XDIST_WORKER"])


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    pass
"""


def test_a_group_runs_on_one_worker_and_the_rest_spreads(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(MODULE)
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup", "-v"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    ran = re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED test_grouped\.py::(test_\w+)\[\d\](@\S+)?", p.stdout)
    grouped = [(worker, suffix) for worker, name, suffix in ran if name == "test_grouped"]
    assert len(grouped) == 8, p.stdout
    assert {suffix for _, suffix in grouped} == {"@one-lab"}, f"the group's suffix is missing:\n{p.stdout}"
    assert len({worker for worker, _ in grouped}) == 1, f"one group, several workers:\n{p.stdout}"
    free = {worker for worker, name, _ in ran if name == "test_free"}
    assert len(free) > 1, f"ungrouped tests should spread over the workers:\n{p.stdout}"
