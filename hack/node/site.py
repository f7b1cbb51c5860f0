"""The Python packages a real-node run carries, pinned from this checkout's virtualenv.

Workplace only (hack/node; README.md there). The GPU machine has CPython 3.12 and no
network: ``stage.sh`` (the harness's kubernetes client) and ``stage-pulumi.sh`` (the program's
packages) install wheels for it into a fresh folder, ``pip install --no-deps`` of exactly the
pins this prints. The pins are the closure of the roots' requirements as the distributions
installed here declare them (``importlib.metadata``, recursively; a requirement that only an
extra asks for, or whose marker is false on the target, is left out), at the versions installed
here: what the tests ran against, never a guess of what the machine's own Python might have.

    python site.py pins kubernetes nvidia-ml-py          # name==version, one a line
    python site.py pins -r requirements.txt --check-imports gpulab variants ...
    python site.py verify DIR PIN...                     # every pin installed in DIR
    python site.py build OUT.tar.xz kubernetes ...       # pins, pip install --no-deps, verify, xz

``--check-imports`` fails when a module the given sources import (outside ``try: ... except
ImportError``) is neither the standard library, nor first-party, nor in the closure: a package
the program needs that the machine would not get.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata as md
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

try:
    from packaging.requirements import Requirement
except ImportError:  # pragma: no cover - pip vendors it
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[assignment,no-redef]

#: The GPU machine's interpreter (FIELD-NOTES "A real node on the lent H200": Ubuntu 24.04,
#: CPython 3.12 on x86-64): what requirement markers are evaluated for. ``extra`` is empty, so
#: a requirement only an extra asks for is left out.
TARGET = {
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
    "platform_python_implementation": "CPython",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "sys_platform": "linux",
    "os_name": "posix",
    "extra": "",
}
#: Imported by the program only where the machine has them (gpulab.tflops's backends: the
#: machine's own torch virtualenv, else CuPy), never carried.
MACHINE_OPTIONAL = frozenset({"torch", "cupy"})
#: The project's own top-level modules (the program's packages and the offline stand-ins,
#: which import each other by file).
FIRST_PARTY = frozenset(
    {"gpulab", "variants", "components", "program", "policy", "ops", "hack", "toolchain", "pulumi_protos",
     "command_logic", "command_exec", "pulumi_resource_command", "pulumi_language_python", "__main__"}
)  # fmt: skip


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


class SiteError(Exception):
    """A requirement not installed here, or an import nothing carried provides."""


def closure(roots: Iterable[str], target: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """canonical name -> (name, version) of ``roots`` and everything they require, as installed.

    Raises:
        SiteError: a root or a requirement is not installed in this environment.
    """
    env = {**TARGET, **(target or {})}
    out: dict[str, tuple[str, str]] = {}
    todo = [(r, "(root)") for r in roots]
    while todo:
        spec, by = todo.pop()
        req = Requirement(spec)
        key = canonical(req.name)
        if key in out:
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            raise SiteError(
                f"{req.name} (required by {by}) is not installed in {sys.prefix}: run make venv"
            ) from None
        name, version = dist.metadata["Name"], dist.version
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            raise SiteError(f"{name} {version} installed here does not satisfy {spec} (required by {by})")
        out[key] = (name, version)
        for dep in dist.requires or []:
            r = Requirement(dep)
            if r.marker is not None and not r.marker.evaluate(env):
                continue
            todo.append((str(Requirement(f"{r.name}{r.specifier}")), name))
    return out


def read_requirements(path: Path) -> list[str]:
    """The requirement lines of a requirements file (comments, options and blanks left out)."""
    lines = (ln.split("#", 1)[0].strip() for ln in path.read_text().splitlines())
    return [ln for ln in lines if ln and not ln.startswith("-")]


def pins(dists: dict[str, tuple[str, str]]) -> list[str]:
    return sorted(f"{name}=={version}" for name, version in dists.values())


def _guarded(handlers: Sequence[ast.ExceptHandler]) -> bool:
    names = set()
    for h in handlers:
        for t in h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]:
            if isinstance(t, ast.Name):
                names.add(t.id)
    return bool(names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def imports(tree: ast.AST) -> Iterator[str]:
    """The top-level module names ``tree`` imports (absolute imports), except inside a ``try``
    whose handlers catch ImportError (an optional import)."""

    def walk(node: ast.AST) -> Iterator[str]:
        if isinstance(node, ast.Try) and _guarded(node.handlers):
            for child in node.handlers + node.orelse + node.finalbody:
                yield from walk(child)
            return
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        for sub in ast.iter_child_nodes(node):
            yield from walk(sub)

    yield from walk(tree)


def python_files(paths: Iterable[Path]) -> Iterator[Path]:
    for p in paths:
        if p.is_dir():
            yield from (f for f in sorted(p.rglob("*.py")) if "__pycache__" not in f.parts)
        elif p.suffix == ".py" or p.is_file():
            yield p


def missing_imports(dists: dict[str, tuple[str, str]], sources: Iterable[Path]) -> dict[str, list[str]]:
    """module -> the files that import it, for every module the sources import that neither the
    standard library, nor the project, nor a distribution of ``dists`` provides."""
    provided = md.packages_distributions()
    local: set[str] = set()
    files = list(python_files(sources))
    for f in files:  # modules beside each other (the stand-ins import their siblings by name)
        local.add(f.stem)
        if f.name == "__init__.py":
            local.add(f.parent.name)
    out: dict[str, list[str]] = {}
    for f in files:
        try:
            tree = ast.parse(f.read_text(), str(f))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for mod in imports(tree):
            if mod in sys.stdlib_module_names or mod in FIRST_PARTY | MACHINE_OPTIONAL or mod in local:
                continue
            if any(canonical(d) in dists for d in provided.get(mod, [])):
                continue
            out.setdefault(mod, []).append(str(f))
    return out


def verify(site: Path, wanted: Iterable[str]) -> list[str]:
    """The pins of ``wanted`` that have no ``.dist-info`` in ``site`` (pip skipped or lost them),
    and the distributions whose RECORD names a file that is not there."""
    have: dict[str, Path] = {}
    for info in site.glob("*.dist-info"):
        meta = (info / "METADATA").read_text(errors="replace")
        m = re.search(r"^Name: (.+)$", meta, re.M)
        v = re.search(r"^Version: (.+)$", meta, re.M)
        if m and v:
            have[f"{canonical(m.group(1).strip())}=={v.group(1).strip()}"] = info
    problems = []
    for pin in wanted:
        name, _, version = pin.partition("==")
        found = have.get(f"{canonical(name)}=={version}")
        if found is None:
            problems.append(f"{pin}: not installed in {site}")
            continue
        record = found / "RECORD"
        for line in record.read_text().splitlines() if record.exists() else []:
            rel = line.split(",")[0]
            listed = rel and not rel.startswith(("..", "/")) and "__pycache__" not in rel
            if listed and not (site / rel).exists():
                problems.append(f"{pin}: {rel} missing")
                break
    return problems


PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


def pip_argv(python: str, dest: Path, wanted: Sequence[str]) -> list[str]:
    """pip's command for wheels of exactly ``wanted`` for :data:`TARGET`, into ``dest``: a new
    folder (``pip --target`` into an existing one skips a package whose top folder exists
    already, e.g. ``google/`` when protobuf comes after googleapis-common-protos)."""
    plats = [a for p in PLATFORMS for a in ("--platform", p)]
    return [
        python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-compile",
        "--only-binary=:all:", "--python-version", TARGET["python_version"], "--implementation", "cp",
        *plats, "--target", str(dest), *wanted,
    ]  # fmt: skip


def build(out: Path, wanted: Sequence[str], drop: Sequence[str] = (), python: str = sys.executable) -> None:
    """``out`` (a .tar.xz): the wheels of ``wanted`` installed into a new folder, checked with
    :func:`verify`, less ``drop`` (paths in it) and the packages' own tests.

    Raises:
        SiteError: pip failed, or left a pin out or incomplete.
    """
    import shutil
    import subprocess
    import tarfile
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"  # not there yet: pip makes it
        run = subprocess.run(pip_argv(python, site, wanted), capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise SiteError(f"pip exited {run.returncode}: {(run.stderr or run.stdout).strip()[-1500:]}")
        problems = verify(site, wanted)
        if problems:
            raise SiteError("; ".join(problems))
        for rel in (*drop, "bin"):
            target = site / rel
            if target.is_dir():
                shutil.rmtree(target)
        for f in site.rglob("*_test.py"):
            f.unlink()
        partial = out.with_name(out.name + ".partial")
        with tarfile.open(partial, "w:xz", preset=9) as t:
            for f in sorted(site.iterdir()):
                t.add(f, arcname=f.name)
        partial.replace(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pins", help="the pinned closure of the roots, one name==version a line")
    p.add_argument("roots", nargs="*")
    p.add_argument("-r", "--requirements", type=Path, action="append", default=[])
    p.add_argument("--check-imports", nargs="+", type=Path, default=[], metavar="SOURCE")
    v = sub.add_parser("verify", help="every pin installed in DIR with its files")
    v.add_argument("dir", type=Path)
    v.add_argument("pins", nargs="+")
    b = sub.add_parser("build", help="the closure's wheels for the machine, verified, as OUT.tar.xz")
    b.add_argument("out", type=Path)
    b.add_argument("roots", nargs="*")
    b.add_argument("-r", "--requirements", type=Path, action="append", default=[])
    b.add_argument("--check-imports", nargs="+", type=Path, default=[], metavar="SOURCE")
    b.add_argument("--drop", action="append", default=[], help="a path in the site left out")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "verify":
            problems = verify(a.dir, a.pins)
            for prob in problems:
                print(f"site.py verify: {prob}", file=sys.stderr)
            return 1 if problems else 0
        roots = [*a.roots, *(r for f in a.requirements for r in read_requirements(f))]
        dists = closure(roots)
        missing = missing_imports(dists, a.check_imports) if a.check_imports else {}
        if missing:
            for mod, files in sorted(missing.items()):
                print(f"site.py: {mod} is imported by {files[0]} but nothing carried provides it",
                      file=sys.stderr)  # fmt: skip
            return 1
        if a.cmd == "build":
            print(f"[site] {a.out.name}: {' '.join(pins(dists))}", file=sys.stderr)
            build(a.out, pins(dists), a.drop)
            return 0
    except SiteError as exc:
        print(f"site.py: {exc}", file=sys.stderr)
        return 1
    print("\n".join(pins(dists)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
