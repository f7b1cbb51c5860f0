"""gpulab.config.gpus: the gate's grace, MIG and the smoke resource, parsed with the config."""

from __future__ import annotations

import pytest

from gpulab.config.lab import ConfigError
from variants.registry import parse_config
from variants.sim.settings import SimSettings


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
    assert cfg.gpu.expected_mig == {"1g.18gb": 7} and dict(cfg.gpu.sim_mig_devices) == {"1g.18gb": 7}
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
    assert cfg.settings(SimSettings).gpus == 0 and cfg.capture == "h200-1gpu"
    with pytest.raises(ConfigError, match=r"simGpus=9 must be 0\.\.8"):
        parse_config({"gpu-lab:cluster": "sim", "gpu-lab:simGpus": "9"}, env={})


def test_smoke_gpus_all_is_the_default_and_a_count_or_all_is_accepted() -> None:
    from gpulab.config.gpus import parse_smoke_gpus

    assert parse_config({}, env={}).smoke_gpus == 0  # all
    assert parse_config({"gpu-lab:smokeGpus": "3"}, env={}).smoke_gpus == 3
    problems: list[str] = []
    assert parse_smoke_gpus("0", problems) == 0 and parse_smoke_gpus("two", problems) == 0
    assert problems == [
        "gpu-lab:smokeGpus='0' must be all or a count >= 1",
        "gpu-lab:smokeGpus='two' must be all or a count >= 1",
    ]
    with pytest.raises(ConfigError, match="smokeGpus='many' must be all"):
        parse_config({"gpu-lab:smokeGpus": "many"}, env={})


@pytest.mark.parametrize(
    ("requested", "host", "replicas", "resource", "strategy", "want"),
    [
        (0, 2, 1, "nvidia.com/gpu", "none", 2),  # all: both GPUs of the host
        (0, 8, 1, "nvidia.com/gpu", "none", 8),
        (1, 8, 1, "nvidia.com/gpu", "none", 1),  # an explicit count is kept
        (3, 2, 4, "nvidia.com/gpu", "none", 3),
        # time-slicing: N replicas need not be N GPUs (k8s-device-plugin README, time-slicing)
        (0, 2, 4, "nvidia.com/gpu", "none", 1),
        (0, 1, 1, "nvidia.com/mig-1g.18gb", "mixed", 1),  # MIG: the Pod gets MIG devices
        (0, 2, 1, "nvidia.com/gpu", "single", 1),
        (0, None, 1, "nvidia.com/gpu", "none", 1),  # not this host (existing, hostProbe off)
    ],
)
def test_smoke_gpu_count(
    requested: int, host: int | None, replicas: int, resource: str, strategy: str, want: int
) -> None:
    from gpulab.config.gpus import smoke_gpu_count

    assert smoke_gpu_count(requested, host, replicas, resource, strategy) == want
