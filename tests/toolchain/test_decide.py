"""toolchain/decide.py: which Pulumi toolchain a machine uses, and what it builds."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.releases import fetch

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("decide", ROOT / "toolchain" / "decide.py")
assert _spec and _spec.loader
decide_mod = importlib.util.module_from_spec(_spec)
sys.modules["decide"] = decide_mod
_spec.loader.exec_module(decide_mod)
decide = decide_mod.decide
ToolchainError = decide_mod.ToolchainError
VERSIONS = decide_mod.read_versions()
GPU_STACKS = ("minikube", "kind", "k3s", "existing")


def which_of(**found: str):
    return lambda name: found.get(name)


def run(stack: str, *, purpose: str = "lab", env=None, pulumi=None, version=None, go=True, **kw):
    tools = {"go": "/usr/local/go/bin/go"} if go else {}
    if pulumi:
        tools["pulumi"] = pulumi
    return decide(stack, purpose, env or {}, which_of(**tools), lambda _p: version, VERSIONS, **kw)


def test_floor_is_declared_and_not_above_the_offline_build() -> None:
    floor = decide_mod.parse_version(VERSIONS["PULUMI_CLI_FLOOR"])
    assert floor is not None and floor[0] == 3
    assert floor <= decide_mod.parse_version(VERSIONS["PULUMI_VERSION"])


@pytest.mark.parametrize("stack", GPU_STACKS)
def test_a_recent_user_cli_builds_nothing_for_gpu_stacks_even_without_go(stack: str) -> None:
    d = run(stack, pulumi="/usr/local/bin/pulumi", version="v3.290.0", go=False)
    assert (d.mode, d.cli, d.build, d.needs_go) == ("user", "/usr/local/bin/pulumi", [], False)
    assert "v3.290.0" in d.reason and "/usr/local/bin/pulumi" in d.reason


def test_a_cli_at_the_floor_is_used() -> None:
    floor = VERSIONS["PULUMI_CLI_FLOOR"]
    assert run("minikube", pulumi="/p", version=floor).mode == "user"


def test_a_cli_below_the_floor_means_the_offline_build_and_says_why() -> None:
    d = run("minikube", pulumi="/opt/pulumi", version="v3.100.0")
    assert d.mode == "offline" and d.build == ["pulumi"] and d.needs_go
    assert "v3.100.0" in d.reason and "older than the floor" in d.reason


def test_a_cli_below_the_floor_and_no_go_names_both_fixes() -> None:
    with pytest.raises(ToolchainError) as e:
        run("minikube", pulumi="/opt/pulumi", version="v3.100.0", go=False)
    assert "pulumi self upgrade" in str(e.value) and "Go >= 1.26" in str(e.value)


def test_a_v2_cli_is_not_usable() -> None:
    d = run("kind", pulumi="/p", version="v2.25.2")
    assert d.mode == "offline" and "not a v3 CLI" in d.reason


def test_a_cli_that_does_not_answer_is_not_used() -> None:
    d = run("kind", pulumi="/p", version=None)
    assert d.mode == "offline" and "does not answer" in d.reason


def test_no_cli_and_no_go_says_install_pulumi() -> None:
    with pytest.raises(ToolchainError, match="install the Pulumi CLI"):
        run("minikube", go=False)


def test_no_cli_but_an_offline_build_in_the_cache_needs_no_go() -> None:
    d = run("minikube", go=False, offline_built=True)
    assert d.mode == "offline" and not d.needs_go


def test_the_offline_flag_wins_over_a_recent_cli() -> None:
    d = run("minikube", env={"GPULAB_OFFLINE": "1"}, pulumi="/p", version="v3.290.0")
    assert d.mode == "offline" and "GPULAB_OFFLINE=1" in d.reason
    assert run("minikube", env={"GPULAB_OFFLINE": "0"}, pulumi="/p", version="v3.290.0").mode == "user"


def test_our_own_build_on_path_is_not_taken_for_the_users(tmp_path: Path) -> None:
    own = tmp_path / "bin" / "pulumi"
    own.parent.mkdir()
    own.write_text("")
    d = run("minikube", pulumi=str(own), version="v" + VERSIONS["PULUMI_VERSION"], own_bin=str(own))
    assert d.mode == "offline" and "no pulumi on PATH" in d.reason


def test_the_sim_stack_and_the_tests_build_the_simulated_control_plane() -> None:
    assert run("sim", pulumi="/p", version="v3.290.0").build == ["sim"]
    assert run("minikube", purpose="tests", pulumi="/p", version="v3.290.0").build == ["sim"]
    assert run("sim").build == ["pulumi", "sim"]


def test_the_sim_stack_without_go_may_download_its_control_plane() -> None:
    """Without go the sim control plane's release binaries may still be downloaded
    (toolchain/sim/fetch.py asks the servers); only GPULAB_OFFLINE rules that out."""
    d = run("sim", pulumi="/p", version="v3.290.0", go=False)
    assert d.build == ["sim"] and not d.needs_go
    with pytest.raises(ToolchainError, match="GPULAB_OFFLINE=1: the simulated control plane") as e:
        run("sim", env={"GPULAB_OFFLINE": "1"}, pulumi="/p", version="v3.290.0", go=False)
    assert "unset GPULAB_OFFLINE to download" in str(e.value)
    offline = {"env": {"GPULAB_OFFLINE": "1"}, "offline_built": True}
    assert not run("sim", go=False, sim_built=True, **offline).needs_go  # type: ignore[arg-type]
    assert run("sim", **offline).needs_go  # type: ignore[arg-type]


def test_cli_prints_json_and_shell_lines(tmp_path: Path) -> None:
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    (fakebin / "go").write_text("#!/bin/sh\nexit 0\n")
    (fakebin / "go").chmod(0o755)
    env = {"PATH": f"{fakebin}:/usr/bin:/bin", "GPULAB_CACHE": str(tmp_path / "cache"), "HOME": str(tmp_path)}
    script = str(ROOT / "toolchain" / "decide.py")
    p = subprocess.run(
        [sys.executable, script, "--stack", "minikube"], capture_output=True, text=True, env=env
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["mode"] == "offline"
    sh = subprocess.run(
        [sys.executable, script, "--stack", "sim", "--shell"], capture_output=True, text=True, env=env
    )
    assert "GPULAB_TOOLCHAIN_MODE=offline" in sh.stdout.splitlines()
    assert "GPULAB_TOOLCHAIN_BUILD='pulumi sim'" in sh.stdout.splitlines()
    (fakebin / "go").unlink()
    err = subprocess.run(
        [sys.executable, script, "--stack", "minikube"], capture_output=True, text=True, env=env
    )
    assert err.returncode == 1 and "install the Pulumi CLI" in err.stderr


def test_under_sudo_the_lab_refuses_instead_of_building_the_offline_toolchain() -> None:
    # `sudo make lab`: secure_path dropped the user's PATH (no pulumi found), euid 0, SUDO_USER set.
    with pytest.raises(ToolchainError) as err:
        run("k3s", env={"SUDO_USER": "alice"}, euid=0)
    text = str(err.value)
    assert "not through sudo (SUDO_USER=alice)" in text and "secure_path" in text
    assert "sudo chown -R alice: .venv .state stacks" in text
    # Root itself (a root login, CI) and a user with SUDO_USER left in the environment are fine.
    assert run("k3s", env={}, euid=0).mode == "offline"
    assert run("k3s", env={"SUDO_USER": "alice"}, euid=1000).mode == "offline"


def test_make_refuses_to_run_through_sudo_before_it_creates_the_venv() -> None:
    import os

    if os.geteuid() != 0:
        pytest.skip("the guard applies to root only; this test runs as a user")
    env = {**os.environ, "SUDO_USER": "alice"}
    proc = subprocess.run(["make", "-n", "lab"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "run make as alice, not through sudo" in proc.stderr


def test_the_sim_cache_check_loads_no_download_machinery() -> None:
    """decide.py answers "is the sim build cached?" on every scripts/env.sh (about 250 times a
    suite) from toolchain/sim/buildcache.py alone: fetch.py's urllib, tarfile and thread pool
    stay unloaded, and the answer is the one fetch.py gives."""
    code = (
        "import importlib.util, json, pathlib, sys\n"
        "spec = importlib.util.spec_from_file_location('d', sys.argv[1])\n"
        "d = importlib.util.module_from_spec(spec); sys.modules['d'] = d; spec.loader.exec_module(d)\n"
        "cache = pathlib.Path(sys.argv[2])\n"
        "answer = d.sim_built(cache, d.read_versions(d.VERSIONS))\n"
        "print(json.dumps([answer, sorted(m for m in ('urllib.request', 'tarfile', 'concurrent.futures')"
        " if m in sys.modules)]))\n"
    )
    cache = fetch.cache_root(os.environ)
    p = subprocess.run(
        [sys.executable, "-I", "-c", code, str(ROOT / "toolchain" / "decide.py"), str(cache)],
        capture_output=True,
        text=True,
        check=True,
    )
    answer, loaded = json.loads(p.stdout)
    assert loaded == [], loaded
    assert answer == bool(fetch.cached_build(cache, fetch.read_versions())), answer
