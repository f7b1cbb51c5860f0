"""What the variants share (variants.base): the helpers' subcommand runner, the work dir, the
simulated output keys, the config seam (each variant's own settings in LabConfig)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.cluster import ClusterOutputs
from gpulab.config.lab import NO_SETTINGS, ConfigError, LabConfig
from gpulab.core import outputs as out
from gpulab.core.errors import GpuLabError
from gpulab.core.names import MIN_CPUS
from variants import registry
from variants.base import (
    HOST_FIELDS,
    OPERATOR_FIELDS,
    Capabilities,
    ConfigRules,
    HostNeeds,
    Lifecycle,
    OperatorNeeds,
    Variant,
    ctl_main,
)
from variants.existing.settings import ExistingSettings
from variants.k3s.settings import K3sSettings
from variants.kind.settings import KindSettings
from variants.minikube.settings import MinikubeSettings
from variants.registry import parse_config
from variants.sim.settings import SimSettings


def test_ctl_main_prints_the_document_and_returns_its_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert ctl_main("x_ctl", lambda: ({"b": 1, "a": 2}, 0), sort_keys=True) == 0
    assert capsys.readouterr().out == json.dumps({"a": 2, "b": 1}) + "\n"
    assert ctl_main("x_ctl", lambda: ([{"check": "c", "ok": False}], 1)) == 1


def test_ctl_main_prints_a_lab_error_with_its_tag(capsys: pytest.CaptureFixture[str]) -> None:
    def fail() -> tuple[object, int]:
        raise GpuLabError("the cause\n  fix: the fix")

    assert ctl_main("x_ctl", fail) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "x_ctl: the cause\n  fix: the fix\n"
    with pytest.raises(ValueError):
        ctl_main("x_ctl", lambda: (_ for _ in ()).throw(ValueError("not caught")))


def test_a_helper_made_cluster_lives_in_the_variants_work_dir() -> None:
    kind = registry.get("kind")
    assert kind.local.workdir("lab") == ".state/kind/lab"
    cfg = parse_config({"cluster": "sim", "profile": "lab"}, env={})
    assert registry.get("sim").local.named_cluster(cfg) == {
        "name": "lab",
        "workdir": ".state/sim/lab",
        "timeout_seconds": cfg.cluster_timeout_seconds,
    }


def test_simulated_fields_are_the_host_and_operator_keys() -> None:
    sim = parse_config({"cluster": "sim"}, env={})
    assert registry.get("sim").config.simulated_fields(sim) == [*HOST_FIELDS, *OPERATOR_FIELDS]
    assert out.ALLOCATABLE_GPUS in OPERATOR_FIELDS and out.HOST_GPU_COUNT in HOST_FIELDS


@pytest.mark.parametrize("name", registry.NAMES)
def test_the_operator_toolkit_defaults_off_only_where_the_node_runtime_injects_gpus(name: str) -> None:
    v = registry.get(name)
    assert v.operator.operator_toolkit(None) is (not v.operator.runtime_injects_gpus)
    assert v.operator.operator_toolkit(False) is False
    if name != "kind":  # kind's node gets the host's toolkit, always (true is refused in config)
        assert v.operator.operator_toolkit(True) is True
    assert (
        registry.get("minikube").operator.runtime_injects_gpus
        and registry.get("kind").operator.runtime_injects_gpus
    )


def test_the_compute_pods_keys_are_simulated_where_the_smoke_pods_are() -> None:
    assert {out.COMPUTE_PHASE, out.COMPUTE_RESULT} <= set(OPERATOR_FIELDS)


# --- the config seam: each variant parses and reads its own settings ------------------------
#: The settings type of each variant (variants/<name>/settings.py).
SETTINGS = {
    "minikube": MinikubeSettings,
    "kind": KindSettings,
    "k3s": K3sSettings,
    "existing": ExistingSettings,
    "sim": SimSettings,
}


def test_every_variant_declares_its_settings_type() -> None:
    assert set(SETTINGS) == set(registry.NAMES)


@pytest.mark.parametrize("name", ["minikube", "kind", "k3s", "sim"])
def test_the_chosen_variant_s_settings_ride_in_lab_config(name: str) -> None:
    cfg = parse_config({"cluster": name}, env={})
    assert type(cfg.variant_settings) is SETTINGS[name]
    assert cfg.settings(SETTINGS[name]) == SETTINGS[name]()  # the defaults: Pulumi.yaml's
    other = next(t for n, t in SETTINGS.items() if n != name)
    with pytest.raises(TypeError, match=f"cluster={name}: the variant settings are .*not {other.__name__}"):
        cfg.settings(other)


def test_a_bare_lab_config_reads_each_variant_s_defaults() -> None:
    assert LabConfig().variant_settings is NO_SETTINGS
    assert LabConfig().settings(KindSettings) == KindSettings()
    assert LabConfig().settings(MinikubeSettings).cpus == MIN_CPUS


def test_a_variant_without_settings_of_its_own_gets_none_and_the_default_capture() -> None:
    class Bare(Variant):
        name = "bare"

        def cluster(self, cfg: LabConfig, opts: object = None) -> ClusterOutputs:
            raise NotImplementedError

    problems: list[str] = []
    assert Bare().config.resolve(lambda k: None, {}, problems, {}) is NO_SETTINGS and problems == []
    assert Bare().config.default_capture(lambda k: 2) == "h200-1gpu"
    assert registry.get("sim").config.default_capture(lambda k: 2) == "h200-2gpu"


# --- the seam's shape: a name, five facets, the component and the GPU expectation ------------


def test_the_variant_seam_is_narrow() -> None:
    members = {n for n in dir(Variant) if not n.startswith("_")} | set(Variant.__annotations__)
    assert members == {
        "name",
        "capabilities",
        "config",
        "operator",
        "host",
        "local",
        "cluster",
        "gpu_expectation",
    }


@pytest.mark.parametrize("name", registry.NAMES)
def test_each_variant_s_facets_are_its_own_and_named_after_it(name: str) -> None:
    v = registry.get(name)
    assert v.name == name
    assert isinstance(v.capabilities, Capabilities) and isinstance(v.operator, OperatorNeeds)
    assert isinstance(v.config, ConfigRules) and v.config.name == name
    assert isinstance(v.host, HostNeeds) and v.host.name == name
    assert isinstance(v.local, Lifecycle) and v.local.name == name
    assert v.local.ctl == f"variants.{name}.ctl"


def test_a_variant_that_declares_no_facet_gets_the_defaults_named_after_it() -> None:
    class Bare(Variant):
        name = "bare"

        def cluster(self, cfg: LabConfig, opts: object = None) -> ClusterOutputs:
            raise NotImplementedError

    assert (
        Bare.config == ConfigRules("bare")
        and Bare.host == HostNeeds("bare")
        and Bare.local == Lifecycle("bare")
    )
    assert Bare.capabilities == Capabilities() and Bare.operator == OperatorNeeds()
    assert Bare().local.gone("p", Path(".")) == (False, "the lab does not own bare clusters")


def test_a_variant_s_bounds_are_checked_whichever_variant_is_chosen() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "sim", "memoryMiB": "4096", "expectedGpus": "10001"}, env={})
    assert err.value.problems == [
        "gpu-lab:memoryMiB=4096 is below 8192 (8 GiB, the chapter's minimum)",
        "gpu-lab:expectedGpus=10001 is above its maximum 10000",
    ]
