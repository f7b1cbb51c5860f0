"""Test order for parallel runs (``make test``: pytest-xdist, ``--dist loadgroup``).

Workers take tests in collection order, so the slowest go first: the end-to-end tests that
build several labs, then every other end-to-end test, then the engine tests, then the rest. A
long lab started last would run alone at the end while the other workers idle. Only the order
changes, never which tests run; within each rank the collection order is kept.
"""

from __future__ import annotations

from typing import Final

import pytest

#: End-to-end tests that build more than one lab or cluster (measured on 2 cores, 6 workers:
#: 110-400 s each), by the start of their node id: started first.
MULTI_LAB: Final = (
    "tests/e2e/test_sim_faults.py::test_etcd_killed_then_etcd_frozen",
    "tests/e2e/test_sim_faults.py::test_engine_killed_at_the_gate",
    "tests/e2e/test_sim_verify.py",
    "tests/e2e/test_existing_lab.py",
    "tests/e2e/test_sim_faults.py::test_engine_killed_at_the_helm_release",
    "tests/e2e/test_sim_faults.py::test_two_labs_at_once",
    "tests/e2e/test_sim_wrong_cluster.py",
    "tests/e2e/test_sim_failures.py",
    "tests/e2e/test_sim_fleet.py",
    "tests/e2e/test_sim_connected.py",
)


def _rank(item: pytest.Item) -> tuple[int, int]:
    for i, prefix in enumerate(MULTI_LAB):
        if item.nodeid.startswith(prefix):
            return (0, i)
    if item.get_closest_marker("sim"):
        return (1, 0)
    if item.get_closest_marker("engine"):
        return (2, 0)
    return (3, 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest first (see the module docstring); a stable sort, so ties keep their order."""
    items.sort(key=_rank)
