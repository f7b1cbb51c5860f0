"""variants.minikube.reuse and ctl.up: a profile that exists is checked before anything waits.

The inputs are written `docker container inspect` and `minikube profile list -o json`
outputs (tests/data/docker-inspect/README.md says from which documented formats)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulab.core import run as cmd
from variants.minikube import ctl, reuse

DATA = Path(__file__).resolve().parents[3] / "data" / "docker-inspect"


def data(name: str) -> str:
    return (DATA / name).read_text()


def lab_config() -> dict[str, object]:
    config = reuse.profile_config(data("minikube-profile-list.json"), "gpu-lab")
    assert config is not None
    return dict(config)


def findings(host_config: str | None, config: dict[str, object] | None = None) -> dict[str, bool]:
    found = reuse.reuse_findings("gpu-lab", 4, 8192, "v1.34.0", host_config, config or lab_config())
    return {f.check: f.ok for f in found}


def test_profile_config_is_read_from_the_listing_and_absent_profiles_are_none() -> None:
    assert lab_config()["GPUs"] == "all"
    assert reuse.profile_config(data("minikube-profile-list.json"), "other") is None
    assert (
        reuse.profile_config("* Exiting due to MK_USAGE_NO_PROFILE: No minikube profile was found.", "x")
        is None
    )


def test_a_profile_made_by_the_lab_passes() -> None:
    assert findings(data("minikube-gpus-all.hostconfig.json")) == {"reused-node-gpus": True}
    # --gpus=nvidia.com: a CDI device request.
    assert findings(data("minikube-cdi.hostconfig.json")) == {"reused-node-gpus": True}


def test_a_node_container_without_device_requests_fails_with_delete_then_make_lab() -> None:
    [f] = reuse.reuse_findings(
        "gpu-lab", 4, 8192, "v1.34.0", data("minikube-no-gpus.hostconfig.json"), lab_config()
    )
    assert f.check == "reused-node-gpus" and not f.ok
    assert "created without GPUs (HostConfig.DeviceRequests null)" in f.message
    assert f.fix.startswith("minikube delete -p gpu-lab && make lab")


def test_another_kubernetes_version_and_fewer_resources_fail() -> None:
    by_hand = reuse.profile_config(data("minikube-profile-list-by-hand.json"), "gpu-lab")
    found = reuse.reuse_findings(
        "gpu-lab", 4, 8192, "v1.34.0", data("minikube-2cpus.hostconfig.json"), by_hand
    )
    failed = {f.check: f.message for f in found if not f.ok}
    assert "runs Kubernetes v1.31.0, the lab asks for v1.34.0" in failed["reused-kubernetes-version"]
    assert "2 CPUs < 4, 4000 MiB < 8192" in failed["reused-node-resources"]


def test_resources_fall_back_to_the_containers_limits() -> None:
    """A profile config without CPUs/Memory: NanoCpus 2e9 and 4000 MB from HostConfig."""
    found = reuse.reuse_findings("gpu-lab", 4, 8192, "v1.34.0", data("minikube-2cpus.hostconfig.json"), {})
    assert [f.check for f in found if not f.ok] == ["reused-node-resources"]


def test_a_container_that_cannot_be_inspected_falls_back_to_the_stored_gpus_setting() -> None:
    assert findings(None) == {"reused-node-gpus": True}
    no_gpus = {**lab_config(), "GPUs": ""}
    assert findings(None, no_gpus) == {"reused-node-gpus": False}


def test_up_stops_on_a_reused_profile_without_gpus_before_starting_or_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []

    def fake_run(argv: list[str], **_: object) -> cmd.Result:
        calls.append(list(argv))
        if argv[:3] == ["minikube", "profile", "list"]:
            return cmd.Result(0, data("minikube-profile-list.json"), "")
        if argv[:3] == ["docker", "container", "inspect"]:
            return cmd.Result(0, data("minikube-no-gpus.hostconfig.json"), "")
        raise AssertionError(f"nothing else may run: {argv}")

    monkeypatch.setattr(cmd, "run", fake_run)
    monkeypatch.setattr(cmd, "check", lambda argv, **_: fake_run(argv))
    with pytest.raises(ctl.ReusedProfileError) as exc:
        ctl.up(ctl.StartSpec("gpu-lab", 4, 8192, "v1.34.0"))
    assert "reused-node-gpus" in str(exc.value) and "minikube delete -p gpu-lab && make lab" in str(exc.value)
    assert calls[1] == ["docker", "container", "inspect", "gpu-lab", "--format", "{{json .HostConfig}}"]
    assert len(calls) == 2
