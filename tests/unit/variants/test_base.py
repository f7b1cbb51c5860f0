"""What the variants share (variants.base): the helpers' subcommand runner, the work dir, the
simulated output keys, the config seam (each variant's own settings in LabConfig)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.cluster import ClusterOutputs
from gpulab.config.lab import ConfigError, LabConfig
from gpulab.config.variant import NO_SETTINGS, VariantSettings, VariantSpec
from gpulab.core import outputs as out
from gpulab.core.errors import GpuLabError
from gpulab.core.names import MIN_CPUS
from variants import registry
from variants.base import (
    HOST_FIELDS,
    OPERATOR_FIELDS,
    Status,
    Variant,
    ctl_main,
    named_cluster,
)
from variants.existing.settings import ExistingSettings
from variants.k3s.settings import K3sSettings
from variants.kind.settings import KindSettings
from variants.microk8s import MicroK8sSettings
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
    assert kind.spec.workdir("lab") == ".state/kind/lab"
    cfg = parse_config({"cluster": "sim", "profile": "lab"}, env={})
    assert named_cluster(registry.get("sim").spec, cfg) == {
        "name": "lab",
        "workdir": ".state/sim/lab",
        "timeout_seconds": cfg.cluster_timeout_seconds,
    }


def test_simulated_fields_are_the_host_and_operator_keys() -> None:
    assert registry.get("sim").spec.simulated_fields == (*HOST_FIELDS, *OPERATOR_FIELDS)
    assert registry.get("existing").spec.simulated_fields == OPERATOR_FIELDS
    assert out.ALLOCATABLE_GPUS in OPERATOR_FIELDS and out.HOST_GPU_COUNT in HOST_FIELDS


@pytest.mark.parametrize("name", registry.NAMES)
def test_the_operator_toolkit_defaults_off_only_where_the_node_runtime_injects_gpus(name: str) -> None:
    v = registry.get(name).spec
    assert v.toolkit(None) is (not v.runtime_injects_gpus)
    assert v.toolkit(False) is False and v.toolkit(True) is True  # kind's true is refused in config
    if name != "existing":  # its config needs a kubeconfig (tests/unit/config)
        assert parse_config({"cluster": name}, env={}).operator.toolkit is v.toolkit(None)
    assert (
        registry.get("minikube").spec.runtime_injects_gpus and registry.get("kind").spec.runtime_injects_gpus
    )


def test_the_compute_pods_keys_are_simulated_where_the_smoke_pods_are() -> None:
    assert {out.COMPUTE_PHASE, out.COMPUTE_RESULT} <= set(OPERATOR_FIELDS)


# --- the config seam: each variant parses and reads its own settings ------------------------
#: The settings type of the variants this module names (variants/<name>/settings.py).
SETTINGS = {
    "minikube": MinikubeSettings,
    "kind": KindSettings,
    "k3s": K3sSettings,
    "microk8s": MicroK8sSettings,
    "existing": ExistingSettings,
    "sim": SimSettings,
}


@pytest.mark.parametrize("name", registry.NAMES)
def test_every_variant_s_settings_type_is_its_own(name: str) -> None:
    own = registry.get(name).spec.settings
    assert issubclass(own, VariantSettings)
    # Its own folder's: settings.py, or the package itself for a variant as small as MicroK8s.
    assert own is VariantSettings or own.__module__ in (f"variants.{name}.settings", f"variants.{name}")
    assert SETTINGS.get(name, own) is own


@pytest.mark.parametrize("name", ["minikube", "kind", "k3s", "microk8s", "sim"])
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


class Bare(Variant):
    """A variant that declares nothing but its name and its component."""

    spec = VariantSpec("bare")

    def create(self, cfg: LabConfig, opts: object = None) -> ClusterOutputs:
        raise NotImplementedError


def test_a_variant_without_settings_of_its_own_gets_none_and_the_default_capture() -> None:
    problems: list[str] = []
    assert Bare.spec.settings.resolve(lambda k: None, {}, problems, {}) == NO_SETTINGS and problems == []
    assert NO_SETTINGS.capture is None and not NO_SETTINGS.simulated
    assert SimSettings(gpus=2).capture == "h200-2gpu" and SimSettings(gpus=1).capture == "h200-1gpu"
    assert parse_config({"cluster": "sim", "simGpus": "2"}, env={}).capture == "h200-2gpu"


# --- the seam's shape: one record and six verbs ----------------------------------------------


def test_the_variant_seam_is_one_record_and_six_verbs() -> None:
    members = {n for n in dir(Variant) if not n.startswith("_")} | set(Variant.__annotations__)
    verbs = {"preflight", "create", "status", "delete", "kubeconfig", "gpu_expectation"}
    assert members == {"spec", "name", *verbs}


@pytest.mark.parametrize("name", registry.NAMES)
def test_each_variant_s_record_is_its_own(name: str) -> None:
    v = registry.get(name)
    assert isinstance(v.spec, VariantSpec) and v.name == v.spec.name == name
    assert v.spec.ctl == f"variants.{name}.ctl"


def test_a_variant_that_declares_nothing_gets_the_defaults() -> None:
    bare = Bare()
    assert bare.spec == VariantSpec("bare") and bare.spec.settings is VariantSettings
    assert bare.status("p", Path(".")) == Status(False, "the lab does not own bare clusters")
    assert bare.delete("p", Path(".")) is None and bare.kubeconfig("p", Path("."), lambda k: None) is None
    assert bare.preflight(LabConfig()) == []
    assert bare.spec.hint("p") == "make the API server reachable"
    assert bare.spec.queue_controller_argv("p") is None
    assert bare.spec.moved_fix("p", "s", "https://a", "https://b").startswith(
        "make the cluster answer at https://a"
    )


def test_a_variant_s_bounds_are_checked_whichever_variant_is_chosen() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"cluster": "sim", "memoryMiB": "4096", "expectedGpus": "10001"}, env={})
    assert err.value.problems == [
        "gpu-lab:memoryMiB=4096 is below 8192 (8 GiB, the chapter's minimum)",
        "gpu-lab:expectedGpus=10001 is above its maximum 10000",
    ]
