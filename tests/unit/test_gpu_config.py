"""gpulab.gpu_config: the gate's grace, MIG and the smoke resource, parsed with the config."""

from __future__ import annotations

import pytest

from gpulab.config import ConfigError, parse_config


def test_defaults_are_no_mig_and_a_minute_of_grace() -> None:
    gpu = parse_config({}, env={}).gpu
    assert (gpu.grace_seconds, gpu.mig_strategy, gpu.expected_mig, gpu.smoke_resource) == (60, "none", {}, "")
    assert parse_config({}, env={}).operator.mig_strategy == "none"


def test_the_mig_keys_are_parsed_and_reach_the_operator() -> None:
    cfg = parse_config(
        {
            "gpu-lab:cluster": "sim",
            "gpu-lab:migStrategy": "mixed",
            "gpu-lab:expectedMigDevices": "1g.18gb=7",
            "gpu-lab:smokeResource": "nvidia.com/mig-1g.18gb",
            "gpu-lab:simMigDevices": "1g.18gb=7",
            "gpu-lab:gpuGraceSeconds": "10",
            "gpu-lab:capture": "h200-1gpu-mig",
        },
        env={},
    )
    assert cfg.gpu.expected_mig == {"1g.18gb": 7} and cfg.gpu.sim_mig == {"1g.18gb": 7}
    assert cfg.operator.mig_strategy == "mixed" and cfg.gpu.grace_seconds == 10


def test_bad_values_are_refused_all_at_once() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config(
            {
                "gpu-lab:migStrategy": "half",
                "gpu-lab:expectedMigDevices": "7",
                "gpu-lab:smokeResource": "nvidia.com/tpu",
                "gpu-lab:simMigDevices": "1g.18gb=7",
                "gpu-lab:gpuGraceSeconds": "0",
            },
            env={},
        )
    text = "\n".join(exc.value.problems)
    assert "migStrategy='half' is unknown" in text and "expectedMigDevices='7'" in text
    assert "smokeResource='nvidia.com/tpu' must be" in text and "gpuGraceSeconds=0 must be > 0" in text
    assert "simMigDevices applies to cluster=sim only" in text


def test_a_mig_smoke_resource_needs_mixed() -> None:
    with pytest.raises(ConfigError, match="exists only with migStrategy mixed"):
        parse_config({"gpu-lab:smokeResource": "nvidia.com/mig-1g.18gb"}, env={})


def test_sim_gpus_zero_is_the_node_without_gpus() -> None:
    cfg = parse_config({"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "0"}, env={})
    assert cfg.sim_gpus == 0 and cfg.capture == "h200-1gpu"
    with pytest.raises(ConfigError, match=r"simGpus=9 must be 0\.\.8"):
        parse_config({"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "9"}, env={})
