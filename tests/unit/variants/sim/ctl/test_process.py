"""Unit tests of variants.sim.ctl.process: the bin dir, missing binaries, start-failure diagnosis.
No binaries, no processes, no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from variants.sim import ctl as sc


def test_default_cache_bin_dir_follows_build_sh() -> None:
    assert sc.default_cache_bin_dir({"GPULAB_CACHE": "/c"}) == Path("/c/sim/bin")
    assert sc.default_cache_bin_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/gpu-lab/sim/bin")
    assert sc.default_cache_bin_dir({"HOME": "/h"}) == Path("/h/.cache/gpu-lab/sim/bin")


def test_missing_binaries_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(sc.SimClusterError) as err:
        sc.Tools.locate(tmp_path)
    assert "make toolchain" in err.value.fix
    assert "kube-apiserver" in err.value.cause


def test_port_conflict_is_diagnosed_with_the_port(tmp_path: Path) -> None:
    paths = sc.Paths("lab", tmp_path)
    logs = paths.cluster_dir / "logs"
    logs.mkdir(parents=True)
    (logs / "kube-apiserver.log").write_text("starting\n")
    (logs / "etcd.log").write_text(
        '{"level":"fatal","msg":"listen failed",'
        '"error":"listen tcp 127.0.0.1:32765: bind: address already in use"}\n'
    )
    err = sc._diagnose_start_failure(paths, ["etcd"])
    assert isinstance(err, sc.PortInUseError)
    assert "etcd" in err.cause and "port 32765" in err.cause
    assert (tmp_path / "failed-start-logs" / "etcd.log").exists()


def test_dead_component_is_named_with_its_log(tmp_path: Path) -> None:
    paths = sc.Paths("lab", tmp_path)
    logs = paths.cluster_dir / "logs"
    logs.mkdir(parents=True)
    (logs / "kube-apiserver.log").write_text('Error: invalid argument "x" for "--advertise-address"\n')
    err = sc._diagnose_start_failure(paths, ["kube-apiserver"])
    assert not isinstance(err, sc.PortInUseError)
    assert "kube-apiserver exited" in err.cause
    assert "--advertise-address" in err.cause
    assert "down --name lab" in err.fix
