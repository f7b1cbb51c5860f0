"""variants.minikube.releases: the floor follows from what each release bundles.

Each row was read at its tag in kubernetes/minikube: ``deploy/kicbase/Dockerfile``
(``ARG CRI_DOCKERD_VERSION``) and ``pkg/minikube/constants/constants.go``
(``NewestKubernetesVersion``, ``OldestKubernetesVersion``); cri-dockerd's RuntimeClass
handling from Mirantis/cri-dockerd ``core/sandbox_run.go`` at v0.3.25 and v0.4.0.
"""

from __future__ import annotations

import pytest

from gpulab import preflight
from gpulab.config import LabConfig
from variants.minikube import releases
from variants.minikube.host import _bundled


def test_the_floor_is_the_first_release_with_cri_dockerd_0_4_and_the_lab_s_kubernetes() -> None:
    assert releases.floor(LabConfig().kubernetes_version) == preflight.MIN_MINIKUBE == (1, 37, 0)
    # v1.36.0 has cri-dockerd v0.4.0, but its newest Kubernetes is v1.33.1.
    v136 = releases.release("v1.36.0")
    assert v136 is not None and v136.honours_runtime_class() and not v136.supports("v1.34.0")
    # Up to v1.35.0 the bundled cri-dockerd is 0.3.x: RuntimeHandler "nvidia" not supported.
    assert [r.minikube for r in releases.RELEASES if not r.honours_runtime_class()] == [
        "v1.32.0",
        "v1.33.0",
        "v1.33.1",
        "v1.34.0",
        "v1.35.0",
    ]


def test_an_older_kubernetes_lowers_no_floor_below_cri_dockerd_0_4() -> None:
    assert releases.floor("v1.30.0") == (1, 36, 0)
    with pytest.raises(LookupError):
        releases.floor("v1.40.0")


def test_preflight_names_what_a_listed_release_bundles() -> None:
    assert _bundled("minikube version: v1.35.0\ncommit: dd5d320e41b5451cdf3c01891bc4e13d189586ed\n") == (
        "cri-dockerd v0.3.15"
    )
    assert _bundled("v1.99.0\n") == "" and _bundled("garbage") == "" and _bundled("") == ""
    found = preflight.check_minikube_version("v1.35.0", _bundled("v1.35.0"))
    assert not found.ok and "(it bundles cri-dockerd v0.3.15)" in found.message


def test_parse_and_text_round_trip() -> None:
    assert releases.text(releases.parse("v1.37.0")) == "v1.37.0"
    with pytest.raises(ValueError):
        releases.parse("1.37")
