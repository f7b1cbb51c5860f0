"""The minikube cluster component through the real engine, with minikube faked.

The fake (tests/engine/fakebin) records every minikube call, so the test sees the exact
order the engine ran the create and delete commands in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.support.sandbox import Project

pytestmark = pytest.mark.engine

FAKEBIN = Path(__file__).resolve().parent / "fakebin"
PROGRAM = """
import pulumi
from variants.minikube.component import MinikubeArgs, MinikubeCluster

cfg = pulumi.Config("gpu-lab")
cluster = MinikubeCluster("minikube", MinikubeArgs(
    profile="lab", cpus=cfg.require_int("cpus"), memory_mib=8192,
    kubernetes_version="v1.34.0", addon_device_plugin=False))
pulumi.export("kubernetesVersion", cluster.kubernetes_version)
"""


def _calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if not line.startswith(("status", "profile"))]


def test_changing_cpus_replaces_the_cluster_delete_first(project: Project, tmp_path: Path) -> None:
    (project.dir / "__main__.py").write_text(PROGRAM)
    # The test's own program, and the project's config block: gpulab.config reads its schema there.
    config = yaml.safe_dump({"config": yaml.safe_load((project.dir / "Pulumi.yaml").read_text())["config"]})
    (project.dir / "Pulumi.yaml").write_text(
        "name: gpu-lab\nruntime:\n  name: python\n  options:\n    virtualenv: .venv\n" + config
    )
    log, state = tmp_path / "minikube.log", tmp_path / "profiles"
    log.touch()
    project.env.update(
        PATH=f"{FAKEBIN}:{project.env['PATH']}", FAKE_MINIKUBE_LOG=str(log), FAKE_MINIKUBE_STATE=str(state)
    )
    project.init("mk", cpus=4)
    project.pulumi("up", "--yes", "--skip-preview", "--stack", "mk")
    first = _calls(log)
    assert first[0].startswith("start -p lab --driver=docker --container-runtime=docker --gpus=all --cpus=4")
    assert first[1] == "addons disable nvidia-device-plugin -p lab"

    project.pulumi("config", "set", "--stack", "mk", "gpu-lab:cpus", "6")
    preview = project.pulumi("preview", "--stack", "mk", "--diff").stdout
    assert "replace" in preview, preview

    log.write_text("")
    project.pulumi("up", "--yes", "--skip-preview", "--stack", "mk")
    second = _calls(log)
    deletes = [i for i, c in enumerate(second) if c.startswith("delete -p lab")]
    starts = [i for i, c in enumerate(second) if c.startswith("start -p lab")]
    assert deletes and starts, second
    assert deletes[0] < starts[0], f"created before deleting the same profile: {second}"
    assert "--cpus=6" in second[starts[0]]
    assert (state / "lab").exists()

    # A re-run with no change runs nothing.
    log.write_text("")
    project.pulumi("up", "--yes", "--skip-preview", "--stack", "mk", "--expect-no-changes")
    assert _calls(log) == []

    # Destroy after the profile was deleted by hand: delete succeeds on a missing profile.
    (state / "lab").unlink()
    project.pulumi("destroy", "--yes", "--skip-preview", "--stack", "mk")
    assert not any(c.startswith("delete") for c in _calls(log)), "deleted a profile that was gone"
