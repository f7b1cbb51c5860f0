"""ARCHITECTURE.md's checkable claims, checked: the import graph is a DAG of floors.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING`` (grimp reads
them all), so no import inside a function can hide a cycle. ``make lint`` runs the same
contracts (pyproject.toml ``[tool.importlinter]``) with ``lint-imports``.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

from tests.support.pyast import parse

ROOT = Path(__file__).resolve().parents[2]


PACKAGES = ("program", "policy", "ops", "variants", "components", "gpulab")


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
    # One variant importing another: the variants' contract names none, and catches it.
    kind = tmp_path / "variants" / "kind" / "settings.py"
    kind.write_text(
        kind.read_text() + "\n\ndef _other() -> None:\n    from variants.minikube import settings  # noqa\n"
    )
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout and "gpulab.core.names -> gpulab.verdict.checklist" in broken.stdout
    assert "variants.kind.settings -> variants.minikube.settings" in broken.stdout


def test_the_import_contracts_name_no_variant() -> None:
    """A new variant is its folder: the contracts cover ``variants.*`` without naming one."""
    text = (ROOT / "pyproject.toml").read_text()
    from variants.registry import NAMES

    contracts = text[text.index("[tool.importlinter]") :]
    assert not [n for n in NAMES if f"variants.{n}" in contracts]


def test_the_test_sandboxes_copy_every_package_of_the_program() -> None:
    from tests.support import sandbox

    assert set(PACKAGES) <= set(sandbox.COPY)


#: Where a variant's name may be compared: its own folder and the registry (the names' one home).
_NAMES_ALLOWED = ("variants/",)
_CORE = ("gpulab", "components", "program", "policy", "ops", "__main__.py")


def _compared_names(tree: ast.AST, names: frozenset[str]) -> list[tuple[int, str]]:
    """``(line, name)`` of each variant name a program decides on: an operand of ``==``, ``!=``,
    ``in`` (also inside a tuple, list or set), a ``match`` case, or a dict literal's key (a
    table by variant, like a tool table). ``"kind"`` as a dict key is Kubernetes' and NVLink's
    field name, not the variant."""
    found: list[tuple[int, str]] = []

    def check(node: ast.AST, *, key: bool = False) -> None:
        items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        for item in items:
            if isinstance(item, ast.Constant) and item.value in names and not (key and item.value == "kind"):
                found.append((item.lineno, item.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                check(operand)
        elif isinstance(node, ast.MatchValue):
            check(node.value)
        elif isinstance(node, ast.Dict):
            for k in node.keys:
                if k is not None:
                    check(k, key=True)
    return found


def test_no_variant_name_is_compared_outside_variants() -> None:
    from variants.registry import NAMES

    names = frozenset(NAMES)
    leaks = []
    for top in _CORE:
        paths = [ROOT / top] if top.endswith(".py") else sorted((ROOT / top).rglob("*.py"))
        for path in paths:
            for line, name in _compared_names(parse(path.read_text()), names):
                leaks.append(f"{path.relative_to(ROOT)}:{line}: {name!r}")
    assert leaks == [], "ask the variant (a capability) or the outputs, never its name"
    # The finder finds one: the comparisons ops/bundle.py, the checklist items and
    # gpulab/core/argv.py made before the variants answered for themselves.
    assert _compared_names(parse('if kind == "existing" or x in ("k3s", "y"): pass'), names) == [
        (1, "existing"),
        (1, "k3s"),
    ]
    assert _compared_names(parse('T = {"minikube": [1], "kind": 2}'), names) == [(1, "minikube")]


def test_one_subprocess_runner() -> None:
    """Only gpulab/core/run.py starts processes (subprocess, os.system, os.popen, os.exec*,
    os.spawn*) in the lab's code, but for the command interpreter (gpulab/core/argv.py execs
    the argv) and the TFLOPS benchmark (gpulab/tflops/: stdlib only, shipped into the
    benchmark Pod, so it cannot import gpulab.core). Not checked: the variants' helpers (the
    sim's supervisor keeps long-running processes, which run.py's finished-process API does
    not model) and the offline toolchain, which runs apart."""
    starters = {"subprocess", "system", "popen", "execvp", "execv", "execve", "spawnv", "Popen"}
    allowed = {"gpulab/core/run.py", "gpulab/core/argv.py"}
    found = []
    for top in _CORE:
        paths = [ROOT / top] if top.endswith(".py") else sorted((ROOT / top).rglob("*.py"))
        for path in paths:
            rel = str(path.relative_to(ROOT))
            if rel in allowed or rel.startswith("gpulab/tflops/"):
                continue
            for node in ast.walk(parse(path.read_text())):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    mods = [a.name for a in node.names] + (
                        [node.module] if isinstance(node, ast.ImportFrom) else []
                    )
                    if "subprocess" in mods:
                        found.append(f"{rel}:{node.lineno}: imports subprocess")
                elif (
                    isinstance(node, ast.Attribute)
                    and node.attr in starters
                    and isinstance(node.value, ast.Name)
                ) and node.value.id == "os":
                    found.append(f"{rel}:{node.lineno}: os.{node.attr}")
    assert found == [], "run processes through gpulab.core.run"


_TOP = (
    "gpulab/",
    "variants/",
    "components/",
    "program/",
    "policy/",
    "tests/",
    "toolchain/",
    "hack/",
    "stacks/",
    "scripts/",
)


def test_architecture_md_names_only_files_and_modules_that_exist() -> None:
    """Every repository path (``gpulab/...``) and module (``gpulab.kube.identity``) that
    ARCHITECTURE.md names in backticks exists; the next variant's sketch (rke2) excepted."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    tokens = set(re.findall(r"`([^`\s<>|]+)`", text))
    paths = [t for t in tokens if t.startswith(_TOP) and "rke2" not in t and re.fullmatch(r"[\w./-]+", t)]
    missing = [p for p in sorted(paths) if not (ROOT / p.rstrip("/")).exists()]
    modules = [t for t in tokens if re.fullmatch(r"(gpulab|variants|components|program|policy)(\.\w+)+", t)]

    def exists(module: str) -> bool:
        # The module itself, or an attribute of one (``gpulab.kube.identity.embed``).
        for cut in (0, 1):
            parts = module.split(".")[: len(module.split(".")) - cut]
            base = ROOT.joinpath(*parts)
            if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
                return True
        return False

    assert missing == [] and [m for m in sorted(modules) if not exists(m)] == []
    assert paths and modules  # the check reads what it should


def _protocols(folder: str) -> list[str]:
    """``path:Class`` of every class in ``folder`` that subclasses ``Protocol``."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                (isinstance(b, ast.Name) and b.id == "Protocol")
                or (isinstance(b, ast.Attribute) and b.attr == "Protocol")
                for b in node.bases
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.name}")
    return found


def test_the_variant_seam_is_declared_once() -> None:
    """The variant's record is gpulab.config.variant.VariantSpec, and no layer below the
    variants mirrors the seam as a protocol of its own: config parsing and the components take
    the record (a protocol there would be a second declaration)."""
    from gpulab.config.variant import VariantSpec
    from variants.base import Variant

    assert Variant.__annotations__["spec"] in ("ClassVar[VariantSpec]", VariantSpec)
    assert _protocols("gpulab/config") == [] and _protocols("components") == []
    assert _protocols("program") == [] and _protocols("ops") == []


#: The longest a product function may be, def line to last line (issue 36: a function that does
#: not fit on a screen is a list of steps or a table waiting to be named).
MAX_FUNCTION_LINES = 100


def _product_files() -> list[Path]:
    """Every module of the program's packages and its entry point (not tests, not toolchain/)."""
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))] + [ROOT / "__main__.py"]


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_product_function_is_longer_than_a_screen() -> None:
    long = [
        f"{path.relative_to(ROOT)}:{fn.lineno} {fn.name} ({fn.end_lineno - fn.lineno + 1} lines)"
        for path in _product_files()
        for fn in _functions(parse(path.read_text(encoding="utf-8")))
        if fn.end_lineno is not None and fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def _names_used(tree: ast.AST) -> set[str]:
    """Names a module's code refers to: names, attributes and identifiers inside string
    constants (``getattr`` and ``python -m`` targets), not docstrings and not ``__all__``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            skipped.add(id(first.value))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skipped.update(id(n) for n in ast.walk(node.value))
    used: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.update(re.findall(r"[A-Za-z_]\w*", node.value))
    return used


def test_no_product_function_is_called_only_by_tests() -> None:
    """A function the product defines is referred to by the product (its modules, scripts/,
    the Makefile): by name, so dunders and ``main`` (run as ``python -m``) are exempt. One
    that only tests call is code the lab carries for nothing (issue 36 item 7)."""
    defined: dict[str, str] = {}
    used: set[str] = set()
    for path in _product_files():
        tree = parse(path.read_text(encoding="utf-8"))
        for fn in _functions(tree):
            defined.setdefault(fn.name, f"{path.relative_to(ROOT)}:{fn.lineno}")
        used |= _names_used(tree)
    for path in [*sorted((ROOT / "scripts").iterdir()), ROOT / "Makefile"]:
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            used.update(
                re.findall(r"[A-Za-z_]\w*", "\n".join(x for x in lines if not x.lstrip().startswith("#")))
            )
    unused = sorted(
        f"{where} {name}"
        for name, where in defined.items()
        if name not in used and not name.startswith("__") and name != "main"
    )
    assert unused == []


#: What a user's run imports or runs: the program's packages, its entry point, and toolchain/
#: (`make lab` and `make toolchain` run toolchain/decide.py and toolchain/sim/fetch.py anywhere).
_USER_RUN = (*PACKAGES, "__main__.py", "toolchain")
#: The workbench: the tests, and hack/ (the offline build, the real-node harness, the benchmark).
_WORKBENCH = ("tests", "hack")


def _workbench_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of each absolute import of a workbench module in ``tree``: ``import``,
    ``from ... import`` and ``importlib.import_module`` / ``__import__`` of a literal name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        else:
            continue
        found += [(node.lineno, n) for n in names if n.split(".")[0] in _WORKBENCH]
    return found


def test_nothing_a_users_run_imports_imports_tests_or_the_workbench() -> None:
    """No module of the program's packages, ``__main__.py`` or ``toolchain/`` imports ``tests``
    or ``hack`` (issue 36 item 4): a user's run needs neither, and a reader of the product may
    skip both. hack/ may import tests; nothing here may import hack/."""
    found = []
    for top in _USER_RUN:
        paths = [ROOT / top] if top.endswith(".py") else sorted((ROOT / top).rglob("*.py"))
        assert paths, top
        for path in paths:
            for line, module in _workbench_imports(parse(path.read_text(encoding="utf-8"))):
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module}")
    assert found == []
    # The finder sees each form, and not a name that only starts like one nor a relative import.
    sample = (
        "import tests.support.sandbox\n"
        "from hack.node import replay\n"
        "def f():\n    importlib.import_module('tests.unit.program_harness')\n"
        "import testing, hacks\n"
        "from .tests import x\n"
    )
    assert _workbench_imports(parse(sample)) == [
        (1, "tests.support.sandbox"),
        (2, "hack.node"),
        (4, "tests.unit.program_harness"),
    ]


def test_no_variant_s_code_is_imported_outside_variants() -> None:
    """Outside ``variants/`` only the registry and the seam (``variants.registry``,
    ``variants.base``) are imported, never one variant's package (issue 36 item 2: a variant's
    code, its policies' included, lives in its folder and is reached through its record)."""
    found = []
    for top in ("gpulab", "components", "program", "policy", "ops", "__main__.py"):
        paths = [ROOT / top] if top.endswith(".py") else sorted((ROOT / top).rglob("*.py"))
        for path in paths:
            for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "variants" and len(parts) > 1 and parts[1] not in ("registry", "base"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    assert found == []
