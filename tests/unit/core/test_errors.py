"""Every error class the lab raises on purpose derives from gpulab.core.errors.GpuLabError and keeps
its built-in base."""

from __future__ import annotations

import pytest

from gpulab.config import lab as config
from gpulab.core import argv, cuda, run
from gpulab.core.errors import GpuLabError
from gpulab.host import preflight
from gpulab.kube import client as kube
from ops import teardown
from variants import registry
from variants.existing import ctl as existing_ctl
from variants.k3s import ctl as k3s_ctl
from variants.kind import ctl as kind_ctl
from variants.minikube import ctl as minikube_ctl
from variants.sim.ctl import process as sim_process


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        (config.ConfigError, ValueError),
        (argv.ArgvError, ValueError),
        (cuda.UnknownCudaVersionError, KeyError),
        (preflight.PreflightError, RuntimeError),
        (kube.GateError, RuntimeError),
        (teardown.TeardownError, RuntimeError),
        (run.CommandError, RuntimeError),
        (run.ProgramNotFoundError, FileNotFoundError),
        (run.CommandTimeoutError, TimeoutError),
        (kind_ctl.KindError, RuntimeError),
        (k3s_ctl.K3sError, RuntimeError),
        (minikube_ctl.StartError, RuntimeError),
        (existing_ctl.KubeconfigError, ValueError),
        (existing_ctl.ClusterError, RuntimeError),
        (sim_process.SimClusterError, RuntimeError),
        (sim_process.PortInUseError, RuntimeError),
    ],
)
def test_error_derives_from_the_base_and_keeps_its_builtin(cls: type, base: type) -> None:
    assert issubclass(cls, GpuLabError) and issubclass(cls, base)


def test_callers_catching_the_builtin_still_catch_it() -> None:
    with pytest.raises(ValueError):
        registry.parse_config({"gpu-lab:cpus": "1"})
    with pytest.raises(GpuLabError, match="cpus=1 is below 4"):
        registry.parse_config({"gpu-lab:cpus": "1"})
