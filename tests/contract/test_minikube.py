"""Contract: minikube (kubernetes/minikube v1.37.0, the floor) and the cri-dockerd it bundles.

Read from source only (no Docker here): every ``minikube`` command line and JSON field the
lab's minikube variant uses (variants/minikube/ctl.py, reuse.py, ``gone``), what
``--gpus=all`` does to the node's Docker, and the release facts behind the floor
(variants/minikube/releases.py). A bump of the floor fails
:func:`test_the_floor_and_the_release_table`.
"""

from __future__ import annotations

from gpulab.config.lab import LabConfig
from gpulab.host import preflight
from variants.minikube import ctl, releases


def test_the_floor_and_the_release_table() -> None:
    """kubernetes/minikube, per tag, deploy/kicbase/Dockerfile ``ARG CRI_DOCKERD_VERSION`` and
    pkg/minikube/constants/constants.go ``NewestKubernetesVersion``/``OldestKubernetesVersion``:
    v1.35.0 cri-dockerd v0.3.15 (newest Kubernetes v1.32.0), v1.36.0 v0.4.0 (v1.33.1), v1.37.0
    v0.4.0 (v1.28.0 .. v1.34.0), v1.38.0 v0.4.1 (v1.35.0), v1.38.1 v0.4.1 (v1.35.1); master
    (2026-08) v0.4.3. Mirantis/cri-dockerd core/sandbox_run.go: v0.3.25 still returns
    ``RuntimeHandler %q not supported`` for any handler but ``docker``; v0.4.0 maps it to a
    configured Docker runtime (``IsRuntimeConfigured``)."""
    assert preflight.MIN_MINIKUBE == (1, 37, 0)
    assert LabConfig().kubernetes_version == "v1.34.0"
    floor = releases.release("v1.37.0")
    assert floor == releases.Release("v1.37.0", "v0.4.0", "v1.28.0", "v1.34.0")
    assert releases.release("v1.36.0") == releases.Release("v1.36.0", "v0.4.0", "v1.20.0", "v1.33.1")
    assert releases.release("v1.35.0") == releases.Release("v1.35.0", "v0.3.15", "v1.20.0", "v1.32.0")
    assert releases.CRI_DOCKERD_RUNTIME_HANDLERS == (0, 4, 0)


def test_start_command_line() -> None:
    """cmd/minikube/cmd/start_flags.go (v1.37.0): flags ``driver``, ``container-runtime``,
    ``gpus`` (``-g``), ``cpus``, ``memory``, ``kubernetes-version``; cmd/minikube/cmd/start.go
    ``validateGPUs``: ``--gpus`` takes nvidia, nvidia.com, amd or all and only with the docker
    driver and the docker container runtime."""
    argv = ctl.start_argv(ctl.StartSpec("gpu-lab", 4, 8192, "v1.34.0"))
    assert argv == [
        "minikube",
        "start",
        "-p",
        "gpu-lab",
        "--driver=docker",
        "--container-runtime=docker",
        "--gpus=all",
        "--cpus=4",
        "--memory=8192mb",
        "--kubernetes-version=v1.34.0",
    ]


def test_status_profile_list_addon_delete_and_kubeconfig() -> None:
    """v1.37.0: pkg/minikube/cluster/status.go ``Status`` (``Host``, ``Kubelet``,
    ``APIServer``, ``Running``) printed by ``minikube status -o json``;
    cmd/minikube/cmd/config/profile_list.go ``-o json``: ``{"valid": [...], "invalid": [...]}``
    of pkg/minikube/config/types.go ``Profile`` (``Name``); pkg/minikube/assets/addons.go addon
    ``nvidia-device-plugin`` (enabled by ``--gpus``: pkg/minikube/cruntime/docker.go);
    ``minikube delete -p``; kubectl's ``config view --flatten --minify --context``."""
    assert ctl.status_argv("p") == ["minikube", "status", "-p", "p", "-o", "json"]
    assert ctl.is_running('{"Name":"p","Host":"Running","Kubelet":"Running","APIServer":"Running"}')
    assert not ctl.is_running('{"Name":"p","Host":"Running","Kubelet":"Stopped","APIServer":"Running"}')
    assert ctl.addon_argv("p", True) == ["minikube", "addons", "enable", "nvidia-device-plugin", "-p", "p"]
    assert ctl.delete_argv("p") == ["minikube", "delete", "-p", "p"]
    assert ctl.kubeconfig_argv("p") == [
        "kubectl",
        "config",
        "view",
        "--flatten",
        "--minify",
        "--context",
        "p",
    ]


def test_the_version_check_reads_minikube_s_own_output() -> None:
    """cmd/minikube/cmd/version.go (v1.37.0): ``--short`` prints the version alone
    (``v1.37.0``); the long form starts ``minikube version: v1.37.0``."""
    assert preflight.check_minikube_version("v1.37.0\n").ok
    assert preflight.check_minikube_version("minikube version: v1.37.0\ncommit: x\n").ok
    assert not preflight.check_minikube_version("v1.36.0\n").ok


def test_gpus_all_makes_nvidia_docker_s_default_runtime_in_the_node() -> None:
    """pkg/minikube/cruntime/docker.go (v1.37.0): for ``--gpus`` all/nvidia/nvidia.com the
    node's daemon.json gets ``default-runtime: nvidia`` with ``runtimes.nvidia.path =
    /usr/bin/nvidia-container-runtime`` (the kicbase image installs nvidia-container-toolkit:
    deploy/kicbase/Dockerfile), so the node's runtime injects GPUs and the operator's toolkit is
    redundant (``runtime_injects_gpus``); and cri-dockerd hands Docker no CDI device in any
    release (Mirantis/cri-dockerd v0.4.3 core/container_create.go reads no ``CDIDevices``; the
    support added by commit 896bf0aa, #522, is on master only), so the device plugin must pass
    ``NVIDIA_VISIBLE_DEVICES`` (``envvar``)."""
    from variants import registry

    v = registry.get("minikube")
    assert v.spec.runtime_injects_gpus and v.spec.node_runtime == "docker"
    assert v.spec.device_list_strategy(nri_plugin=False) == "envvar"
    assert v.spec.cdi_enabled(None, nri_plugin=False) is False
