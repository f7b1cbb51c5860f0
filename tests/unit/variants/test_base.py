"""What the variants share (variants.base): the helpers' subcommand runner, the work dir, the
simulated output keys."""

from __future__ import annotations

import json

import pytest

from gpulab.core import outputs as out
from gpulab.core.errors import GpuLabError
from variants import registry
from variants.base import HOST_FIELDS, OPERATOR_FIELDS, ctl_main
from variants.registry import parse_config


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
    assert kind.workdir("lab") == ".state/kind/lab"
    cfg = parse_config({"cluster": "sim", "profile": "lab"}, env={})
    assert registry.get("sim").named_cluster(cfg) == {
        "name": "lab",
        "workdir": ".state/sim/lab",
        "timeout_seconds": cfg.cluster_timeout_seconds,
    }


def test_simulated_fields_are_the_host_and_operator_keys() -> None:
    sim = parse_config({"cluster": "sim"}, env={})
    assert registry.get("sim").simulated_fields(sim) == [*HOST_FIELDS, *OPERATOR_FIELDS]
    assert out.ALLOCATABLE_GPUS in OPERATOR_FIELDS and out.HOST_GPU_COUNT in HOST_FIELDS


@pytest.mark.parametrize("name", registry.NAMES)
def test_the_operator_toolkit_defaults_off_only_where_the_node_runtime_injects_gpus(name: str) -> None:
    v = registry.get(name)
    assert v.operator_toolkit(None) is (not v.runtime_injects_gpus)
    assert v.operator_toolkit(False) is False
    if name != "kind":  # kind's node gets the host's toolkit, always (true is refused in config)
        assert v.operator_toolkit(True) is True
    assert registry.get("minikube").runtime_injects_gpus and registry.get("kind").runtime_injects_gpus


def test_the_compute_pods_keys_are_simulated_where_the_smoke_pods_are() -> None:
    assert {out.COMPUTE_PHASE, out.COMPUTE_RESULT} <= set(OPERATOR_FIELDS)
