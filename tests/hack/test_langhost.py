"""The offline language host's stand-in starts a policy pack the way Pulumi's own Python host
does: in the virtualenv ``PulumiPolicy.yaml`` names, resolved against the pack's directory.

The rules are read from pulumi/pulumi v3.259.0 (the newest tag the source tools here serve):
``sdk/python/cmd/pulumi-language-python/main.go`` ``parseOptions`` defaults ``virtualenv`` to
``venv`` for plugins but not for policy packs (``RunPlugin``: ``isPlugin := req.Kind !=
AnalyzerPlugin``), ``InstallDependencies`` defaults it for ``IsPlugin`` requests (``pulumi
install`` in a pack), and ``sdk/python/toolchain/pip.go`` ``resolveVirtualEnvironmentPath``
joins a relative one to the root directory, which for a pack is the pack's own directory
(``sdk/go/common/resource/plugin/analyzer_plugin.go`` ``NewPolicyAnalyzer``: root and
program directory = the policy pack path).
"""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime.proto import language_pb2

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "pulumi_language_python", ROOT / "hack" / "offline" / "langhost" / "pulumi_language_python.py"
)
assert _spec and _spec.loader
host = importlib.util.module_from_spec(_spec)
sys.modules["pulumi_language_python"] = host
_spec.loader.exec_module(host)


def info(directory: Path, options: dict[str, object] | None = None) -> language_pb2.ProgramInfo:
    """A ProgramInfo as the engine sends it for a policy pack (root = program dir = the pack)."""
    pi = language_pb2.ProgramInfo(root_directory=str(directory), program_directory=str(directory))
    if options is not None:
        s = struct_pb2.Struct()
        s.update(options)
        pi.options.CopyFrom(s)
    return pi


def test_the_lab_s_pack_runs_in_the_project_s_venv() -> None:
    pack = ROOT / "policy"
    options = yaml.safe_load((pack / "PulumiPolicy.yaml").read_text())["runtime"]["options"]
    assert options == {"virtualenv": "../.venv"}
    venv = host.virtualenv_for(info(pack, options))
    assert venv is not None and venv.resolve() == (ROOT / ".venv").resolve()
    venv_python = ROOT / ".venv" / "bin" / "python"
    if venv_python.exists():  # `make venv` made it
        assert Path(host.python_for(info(pack, options))).resolve() == venv_python.resolve()


def test_a_pack_without_the_option_keeps_the_ambient_python_a_plugin_gets_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PULUMI_PYTHON_CMD", raising=False)
    assert host.virtualenv_for(info(tmp_path, {})) is None
    assert host.python_for(info(tmp_path, {})) == "python3"
    assert host.virtualenv_for(info(tmp_path, {}), plugin=True) == tmp_path / "venv"
    monkeypatch.setenv("PULUMI_PYTHON_CMD", "/opt/py/bin/python3")
    assert host.python_for(info(tmp_path)) == "/opt/py/bin/python3"


def test_a_missing_venv_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="make venv"):
        host.python_for(info(tmp_path / "policy", {"virtualenv": "../.venv"}))


def test_the_venv_is_activated_as_the_official_host_does(tmp_path: Path) -> None:
    env = host.activated({"PATH": "/usr/bin", "PYTHONHOME": "/x", "HOME": "/h"}, tmp_path / ".venv")
    assert env["VIRTUAL_ENV"] == str(tmp_path / ".venv")
    assert env["PATH"] == f"{tmp_path / '.venv' / 'bin'}:/usr/bin"
    assert "PYTHONHOME" not in env and env["HOME"] == "/h"
    assert host.activated({"PATH": "/usr/bin"}, None) == {"PATH": "/usr/bin"}


class _Context:
    def add_callback(self, fn: object) -> None:
        pass


def test_run_plugin_starts_the_pack_with_the_venv_s_python_and_not_path_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pack whose venv python is a script that records how it was started: PATH holds no
    # python at all, so only the declared virtualenv can start it.
    pack, venv = tmp_path / "policy", tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    pack.mkdir()
    record = tmp_path / "started"
    py = venv / "bin" / "python"
    py.write_text(f'#!/bin/sh\necho "$VIRTUAL_ENV|$PWD|$*" > {record}\n')
    py.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    request = language_pb2.RunPluginRequest(
        kind="analyzer", args=["127.0.0.1:1234"], info=info(pack, {"virtualenv": "../.venv"})
    )
    replies = list(host.LanguageHost("127.0.0.1:1").RunPlugin(request, _Context()))
    assert replies[-1].exitcode == 0
    venv_seen, cwd, argv = record.read_text().strip().split("|")
    assert venv_seen == str(venv) and cwd == str(pack)
    assert argv == f"-u -m pulumi.policy 127.0.0.1:1234 {pack}"


def test_the_host_stops_on_the_engines_sigint_even_when_started_with_sigint_ignored() -> None:
    """The engine stops a plugin with SIGINT and kills it 5 s later (pulumi#19603,
    sdk/go/common/resource/plugin/plugin.go): a host started with SIGINT ignored (a background
    job of a script) must still stop on it, or every `pulumi` run waits those 5 s."""
    script = ROOT / "hack" / "offline" / "langhost" / "pulumi_language_python.py"
    proc = subprocess.Popen(
        [sys.executable, str(script), "127.0.0.1:1"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip().isdigit()  # serving: its port
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=5) == 0  # the engine's own bound before it kills
    finally:
        proc.kill()
        proc.wait()
