"""Test order for parallel runs (``make test``: pytest-xdist, ``--dist loadgroup``).

Workers take tests in collection order (``make test`` passes ``--no-loadscope-reorder``), so
the slowest go first: :data:`SLOWEST`, then every other end-to-end test, then the engine
tests, then the rest. A long lab started last would run alone at the end while the other
workers idle. Only the order changes, never which tests run; within each rank the collection
order is kept.
"""

from __future__ import annotations

from typing import Final

import pytest

#: The slowest end-to-end tests (most build more than one lab or cluster), by the start of
#: their node id, in the order the workers take them. xdist hands each worker two at the start
#: (loadgroup keeps one queued behind the running one), so worker i runs entries i and i + 6
#: back to back: the first six are the longest, longest first, and the next six run shortest
#: first, so the longest of the first round is paired with the shortest of the second. Measured
#: on 2 cores, 6 workers (CI, 2026-12-03): 175-490 s each.
SLOWEST: Final = (
    "tests/e2e/test_sim_faults.py::test_etcd_killed_then_frozen",
    "tests/e2e/test_sim_faults.py::test_engine_killed_at_the_helm_release_then_at_the_gate",
    "tests/e2e/test_sim_lab.py::test_the_lab_up_verify",
    "tests/e2e/test_sim_failures.py",
    "tests/e2e/test_sim_faults.py::test_two_labs_at_once",
    "tests/e2e/test_sim_device_plugin.py",
    "tests/e2e/test_sim_2gpu.py",
    "tests/e2e/test_sim_fleet.py::test_a_node_short",
    "tests/e2e/test_sim_mig.py",
    "tests/e2e/test_sim_connected.py",
    "tests/e2e/test_sim_wrong_cluster.py",
    "tests/e2e/test_existing_lab.py",
    "tests/e2e/test_sim_timeslicing.py",
    "tests/e2e/test_sim_fleet.py",
)


def _rank(item: pytest.Item) -> tuple[int, int]:
    for i, prefix in enumerate(SLOWEST):
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
