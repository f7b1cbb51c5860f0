"""Contract: kind v0.30.0, NVIDIA's nvkind recipe and the container toolkit v1.20.0 in the node.

Read from source only (no Docker here): every ``kind`` command line and config field the
kind variant uses (variants/kind/ctl.py), the host settings nvkind relies on, and the
``nvidia-ctk`` flags run inside the node. A bump of the node image or of the node's toolkit
fails the test that pins it.
"""

from __future__ import annotations

import yaml

from gpulab.core import fixes
from variants.kind import ctl
from variants.kind.settings import DEFAULT_NODE_IMAGE


def test_create_get_and_delete_command_lines() -> None:
    """kubernetes-sigs/kind v0.30.0 pkg/cmd/kind/create/cluster/createcluster.go: flags
    ``name``, ``config``, ``image``, ``retain``, ``wait``, ``kubeconfig``;
    pkg/cmd/kind/delete/cluster/deletecluster.go ``name``, ``kubeconfig``;
    pkg/cmd/kind/get/{clusters,nodes,kubeconfig}: ``get nodes --name``, ``get kubeconfig --name``."""
    assert ctl.create_argv(
        "gpu-lab", "/w/kind-config.yaml", DEFAULT_NODE_IMAGE, "/w/kubeconfig.yaml", 600
    ) == [
        "kind",
        "create",
        "cluster",
        "--name",
        "gpu-lab",
        "--config",
        "/w/kind-config.yaml",
        "--image",
        DEFAULT_NODE_IMAGE,
        "--kubeconfig",
        "/w/kubeconfig.yaml",
        "--wait",
        "600s",
    ]
    assert ctl.delete_argv("gpu-lab", "/w/k") == [
        "kind",
        "delete",
        "cluster",
        "--name",
        "gpu-lab",
        "--kubeconfig",
        "/w/k",
    ]
    assert ctl.get_clusters_argv() == ["kind", "get", "clusters"]
    assert ctl.get_nodes_argv("gpu-lab") == ["kind", "get", "nodes", "--name", "gpu-lab"]
    assert ctl.get_kubeconfig_argv("gpu-lab") == ["kind", "get", "kubeconfig", "--name", "gpu-lab"]


def test_the_default_node_image_is_kind_v0_30_0_s() -> None:
    """kind v0.30.0 pkg/apis/config/defaults/image.go ``Image``: kindest/node:v1.34.0 pinned by
    this digest."""
    assert DEFAULT_NODE_IMAGE == (
        "kindest/node:v1.34.0@sha256:7416a61b42b1662ca6ca89f02028ac133a309a2a30ba309614e8ec94d976dc5a"
    )


def test_the_kind_config_mounts_dev_null_where_the_toolkit_reads_device_requests() -> None:
    """kind v0.30.0 pkg/apis/config/v1alpha4/types.go: ``kind.x-k8s.io/v1alpha4`` ``Cluster``,
    nodes with ``role`` and ``extraMounts`` (``hostPath``, ``containerPath``). NVIDIA/nvkind
    README ("Setup") and NVIDIA/nvidia-container-toolkit v1.20.0
    internal/config/image/cuda_image.go ``DeviceListAsVolumeMountsRoot =
    /var/run/nvidia-container-devices``: a mount at ``<root>/all`` requests every GPU."""
    doc = yaml.safe_load(ctl.render_kind_config("gpu-lab"))
    assert doc["apiVersion"] == "kind.x-k8s.io/v1alpha4" and doc["kind"] == "Cluster"
    assert doc["nodes"][1] == {
        "role": "worker",
        "extraMounts": [{"hostPath": "/dev/null", "containerPath": "/var/run/nvidia-container-devices/all"}],
    }


def test_host_settings_nvkind_needs_and_their_fixes() -> None:
    """NVIDIA/nvidia-container-toolkit v1.20.0: api/config/v1/config.go toml key
    ``accept-nvidia-visible-devices-as-volume-mounts``; cmd/nvidia-ctk/config (``--set``,
    ``--in-place``); cmd/nvidia-ctk/runtime/configure ``--runtime``, ``--nvidia-set-as-default``
    (alias ``--set-as-default``). NVIDIA/nvkind README and .github/workflows/gpu-e2e.yaml run
    the same two commands on the host."""
    assert ctl.VOLUME_MOUNTS_KEY == "accept-nvidia-visible-devices-as-volume-mounts"
    assert str(ctl.RUNTIME_CONFIG) == "/etc/nvidia-container-runtime/config.toml"
    assert fixes.docker_default_runtime().startswith(
        "sudo nvidia-ctk runtime configure --runtime=docker --set-as-default"
    )
    assert "nvidia-ctk config --set accept-nvidia-visible-devices-as-volume-mounts=true --in-place" in (
        fixes.docker_volume_mounts()
    )


def test_the_node_s_containerd_handler_from_the_file_with_the_chart_s_toolkit() -> None:
    """In the node: NVIDIA/nvkind pkg/nvkind/node.go (commit 9f70016, 2026-06-09) runs
    ``nvidia-ctk runtime configure --runtime=containerd --config-source=file`` then restarts
    containerd; nvidia-container-toolkit v1.20.0 cmd/nvidia-ctk/runtime/configure/configure.go
    takes ``--config-source`` command|file (default file); the toolkit packages are
    1.20.0-1 (versions.mk ``PACKAGE_REVISION := 1``), the chart's ``toolkit.version``.
    ``nvidia-ctk runtime configure`` adds the runtime (``AddRuntime``) and, with
    ``--cdi.enabled``, CDI; it sets no ``container_annotations`` (only the operator's
    nvidia-ctk-installer does, cmd/nvidia-ctk-installer/container/runtime/containerd), so the
    node's nvidia runtime sees no CDI annotation and the device plugin passes ``envvar``."""
    assert ctl.NODE_CONFIGURE_CONTAINERD.split() == [
        "nvidia-ctk",
        "runtime",
        "configure",
        "--runtime=containerd",
        "--config-source=file",
        "systemctl",
        "restart",
        "containerd",
    ]
    assert ctl.NODE_TOOLKIT_VERSION == "1.20.0-1"
    assert "nvidia-container-toolkit=1.20.0-1" in ctl.NODE_INSTALL_TOOLKIT
    from variants import registry

    assert registry.get("kind").spec.device_list_strategy(nri_plugin=False) == "envvar"
