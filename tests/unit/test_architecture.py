"""ARCHITECTURE.md's checkable claims, checked: the import graph is a DAG of floors.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING`` (grimp reads
them all), so no import inside a function can hide a cycle. ``make lint`` runs the same
contracts (pyproject.toml ``[tool.importlinter]``) with ``lint-imports``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("program", "policy", "variants", "components", "gpulab")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.find_modules_directly_imported_by(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def build_graph() -> grimp.ImportGraph:
    sys.path.insert(0, str(ROOT))
    try:
        return grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))


def test_no_module_imports_itself_through_others() -> None:
    graph = build_graph()
    assert cycles(graph) == []
    # The finder sees a cycle when there is one: the core importing the verdict closes one.
    graph.add_import(importer="gpulab.core.names", imported="gpulab.verdict.checklist")
    assert any("gpulab.core.names" in c for c in cycles(graph))


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_lint_imports_passes_here_and_fails_on_a_cycle_or_a_floor_crossed(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    kept = _lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    # A function-level import from the core to the verdict: a cycle, and a floor crossed upward.
    names = tmp_path / "gpulab" / "core" / "names.py"
    late = "\n\ndef _late() -> None:\n    from gpulab.verdict import checklist  # noqa\n"
    names.write_text(names.read_text() + late)
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout and "gpulab.core.names -> gpulab.verdict.checklist" in broken.stdout


def test_the_test_sandboxes_copy_every_package_of_the_program() -> None:
    from tests.support import sandbox

    assert set(PACKAGES) <= set(sandbox.COPY)
