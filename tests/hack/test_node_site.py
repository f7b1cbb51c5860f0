"""hack/node/site.py: the Python packages a real-node run carries (stage.sh's and
stage-pulumi.sh's site.tar.xz), pinned from this checkout's virtualenv.

The 2026-12-03 run on the H200 needed two hand fixes here: stage.sh's hard-coded list pinned
the kubernetes client 37's pydantic (36.0.3 does not use it: "No package metadata was found for
pydantic"), and stage-pulumi.sh left out what it assumed the machine's Python has (PyYAML,
grpcio, protobuf, Jinja2, MarkupSafe, six, python-dateutil, certifi). These tests run the
scripts' own commands against the .venv."""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / "hack" / "node"
_spec = importlib.util.spec_from_file_location("node_site", NODE / "site.py")
assert _spec and _spec.loader
site = importlib.util.module_from_spec(_spec)
sys.modules["node_site"] = site
_spec.loader.exec_module(site)


def _bash_array(script: Path, name: str) -> list[str]:
    """The words of ``name=(...)`` in ``script`` (the roots or sources the script passes)."""
    m = re.search(rf"^{name}=\(([^)]*)\)", script.read_text(), re.M)
    assert m, f"no {name}=(...) in {script}"
    return m.group(1).split()


def _pins(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(NODE / "site.py"), "pins", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def _names(stdout: str) -> set[str]:
    return {site.canonical(ln.split("==")[0]) for ln in stdout.split()}


def test_stage_pins_the_kubernetes_clients_own_requirements() -> None:
    """stage.sh's roots resolve in the .venv, and the pins are what the installed client's
    distribution requires (no extra), recursively, at the installed versions: whatever
    kubernetes version requirements.txt pins, never another version's list."""
    roots = _bash_array(NODE / "stage.sh", "roots")
    assert roots == ["kubernetes", "nvidia-ml-py"]
    p = _pins(*roots)
    assert p.returncode == 0, p.stderr
    names = _names(p.stdout)
    direct = {
        site.canonical(re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0])
        for r in md.requires("kubernetes") or []
        if "extra ==" not in r
    }
    assert direct and direct <= names
    assert f"kubernetes=={md.version('kubernetes')}" in p.stdout.split()
    assert f"nvidia-ml-py=={md.version('nvidia-ml-py')}" in p.stdout.split()
    # The client's own, as 36.0.3 declares them (the hand fix's list, less nothing).
    assert {"python-dateutil", "six", "websocket-client", "requests-oauthlib", "oauthlib", "durationpy",
            "urllib3", "pyyaml", "certifi", "requests"} <= names  # fmt: skip
    assert names == set(site.closure(roots))


def test_a_root_that_is_not_installed_stops_with_its_name() -> None:
    p = _pins("kubernetes", "no-such-distribution-gpulab")
    assert p.returncode == 1
    assert "no-such-distribution-gpulab (required by (root)) is not installed" in p.stderr


def test_markers_are_evaluated_for_the_machines_python_and_extras_left_out(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    class Dist:
        def __init__(self, name: str, requires: list[str]) -> None:
            self.metadata = {"Name": name}
            self.version = "1.0"
            self.requires = requires

    dists = {
        "root": Dist(
            "root", ["a>=1", 'b; extra == "x"', 'c; python_version < "3.12"', 'd; sys_platform == "linux"']
        ),
        "a": Dist("a", ["d"]),
        "d": Dist("d", []),
    }  # fmt: skip

    def distribution(name: str) -> Dist:
        if name not in dists:
            raise md.PackageNotFoundError(name)
        return dists[name]

    monkeypatch.setattr(site.md, "distribution", distribution)
    assert site.closure(["root"]) == {"root": ("root", "1.0"), "a": ("a", "1.0"), "d": ("d", "1.0")}
    dists["root"].requires.append("a>=2")
    with pytest.raises(site.SiteError, match=r"a 1\.0 installed here does not satisfy a>=2"):
        site.closure(["root"])


def test_the_pulumi_site_carries_every_import_of_the_program() -> None:
    """stage-pulumi.sh's command: requirements.txt's closure, checked against every module the
    program, the policy pack and the toolchain's stand-ins import; what the hand fix added is
    in it (nothing is left to the machine's own Python)."""
    srcs = _bash_array(NODE / "stage-pulumi.sh", "srcs")
    assert {"gpulab", "program", "policy", "hack/offline/langhost"} <= set(srcs)
    p = _pins("-r", "requirements.txt", "--check-imports", *srcs)
    assert p.returncode == 0, p.stderr
    names = _names(p.stdout)
    assert {"pyyaml", "grpcio", "protobuf", "jinja2", "markupsafe", "six", "python-dateutil", "certifi",
            "requests", "pulumi", "pulumi-kubernetes", "pulumi-policy", "pulumi-command", "kubernetes",
            "nvidia-ml-py"} <= names  # fmt: skip
    assert "have=" not in (NODE / "stage-pulumi.sh").read_text()


def test_check_imports_names_a_module_nothing_carries(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text(
        "import json\nimport yaml\nfrom gpulab import core\nimport sibling\n"
        "try:\n    import optional_thing\nexcept ImportError:\n    pass\n"
        "def f():\n    import torch\n    import grpc\n"
    )
    (tmp_path / "sibling.py").write_text("")
    dists = site.closure(["PyYAML"])
    missing = site.missing_imports(dists, [tmp_path])
    assert missing == {"grpc": [str(tmp_path / "mod.py")]}
    assert site.missing_imports(site.closure(["PyYAML", "grpcio"]), [tmp_path]) == {}


def _dist(site_dir: Path, name: str, version: str, files: dict[str, str]) -> None:
    info = site_dir / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    for rel, text in files.items():
        (site_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (site_dir / rel).write_text(text)
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in files) + f"{info.name}/RECORD,,\n")


def test_verify_finds_a_package_pip_skipped(tmp_path: Path) -> None:
    """``pip --target`` into a folder that has ``google/`` already skips protobuf's
    ``google/protobuf`` (the hand fix's trap): its RECORD names files that are not there."""
    _dist(tmp_path, "protobuf", "5.29.6", {"google/protobuf/__init__.py": ""})
    _dist(tmp_path, "six", "1.17.0", {"six.py": ""})
    assert site.verify(tmp_path, ["protobuf==5.29.6", "six==1.17.0"]) == []
    (tmp_path / "google" / "protobuf" / "__init__.py").unlink()
    problems = site.verify(tmp_path, ["protobuf==5.29.6", "six==1.17.0", "grpcio==1.85.3"])
    assert problems == [
        "protobuf==5.29.6: google/protobuf/__init__.py missing",
        f"grpcio==1.85.3: not installed in {tmp_path}",
    ]


def test_pip_installs_exactly_the_pins_into_a_new_folder(tmp_path: Path) -> None:
    argv = site.pip_argv("python3", tmp_path / "new", ["six==1.17.0"])
    assert "--no-deps" in argv and argv[argv.index("--target") + 1] == str(tmp_path / "new")
    assert argv[argv.index("--python-version") + 1] == "3.12" and argv[-1] == "six==1.17.0"
