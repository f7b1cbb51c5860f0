"""Contract: k3s (the lab pins v1.34.1+k3s1) and the installer at https://get.k3s.io.

Read from source only, and not at the tag: the k3s-io/k3s repository snapshot is larger than
the source tools here can fetch, so files were read at the commits the code index stores
(named below); the facts are long-standing. Nothing here ran a k3s.
"""

from __future__ import annotations

from variants.k3s import ctl, node
from variants.k3s.settings import K3sSettings


def test_the_pinned_release() -> None:
    """The lab's default ``k3sVersion`` (Pulumi.yaml, variants/k3s/settings.py): v1.34.1+k3s1
    (containerd >= 2.1, which the NRI option needs: variants/k3s ``MIN_NRI_CHART``)."""
    assert K3sSettings().version == "v1.34.1+k3s1"


def test_the_installer_and_its_files() -> None:
    """k3s-io/k3s install.sh (commit 0efe2af): ``INSTALL_K3S_VERSION`` picks the release;
    ``BIN_DIR=/usr/local/bin``; a server's ``SYSTEM_NAME=k3s`` gives
    ``${BIN_DIR}/k3s-uninstall.sh``; the script runs its own steps through ``$SUDO`` unless it
    is root (``id -u``), so the lab runs it as root (``sudo -n``, env passed with ``env``)."""
    argv, env = ctl.install_command("/tmp/i/install.sh", "v1.34.1+k3s1")
    assert argv == ["sh", "/tmp/i/install.sh"] and env == {"INSTALL_K3S_VERSION": "v1.34.1+k3s1"}
    assert ctl.INSTALL_SCRIPT_URL == "https://get.k3s.io"
    assert str(ctl.K3S_BIN) == "/usr/local/bin/k3s"
    assert ctl.uninstall_argv() == ["/usr/local/bin/k3s-uninstall.sh"]
    assert ctl.parse_version("k3s version v1.34.1+k3s1 (24fc436e)\ngo version go1.24.6\n") == "v1.34.1+k3s1"


def test_kubeconfig_containerd_and_the_nvidia_runtime() -> None:
    """docs.k3s.io ("Cluster Access", "Configuring containerd", "Alternative Container Runtime
    Support"): the kubeconfig is /etc/rancher/k3s/k3s.yaml (mode 0600 unless
    ``--write-kubeconfig-mode``), containerd's config /var/lib/rancher/k3s/agent/etc/containerd/
    config.toml (rendered on every start; config.toml.tmpl overrides it), its socket
    /run/k3s/containerd/containerd.sock. k3s-io/k3s pkg/agent/containerd/runtimes.go (commit
    080ec81) ``findNvidiaContainerRuntimes``: ``nvidia-container-runtime`` under
    /usr/local/nvidia/toolkit (the GPU Operator's), then /usr/bin, as runtime ``nvidia``;
    pkg/agent/templates/templates.go (commit 053afed) ``ContainerdRuntimeConfig`` has only
    ``RuntimeType`` and ``BinaryName``, so the rendered handler has no ``container_annotations``
    and CDI annotations never reach the runtime: the device plugin passes ``envvar`` and CDI
    stays off unless the NRI plugin injects."""
    assert str(ctl.KUBECONFIG) == "/etc/rancher/k3s/k3s.yaml"
    assert node.CONTAINERD_CONFIG == "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
    assert node.CONTAINERD_SOCKET == "/run/k3s/containerd/containerd.sock"
    assert node.RUNTIME_CLASS == "nvidia"
    from variants import registry

    k3s = registry.get("k3s").spec
    assert k3s.device_list_strategy(nri_plugin=False) == "envvar"
    assert k3s.device_list_strategy(nri_plugin=True) is None


def test_root_steps_through_a_sudo_that_never_prompts() -> None:
    """sudo(8): ``-n`` (non-interactive) fails instead of prompting ("a password is
    required"); ``--`` ends sudo's options; ``-v`` refreshes the cached credentials for
    ``timestamp_timeout`` (15 minutes by default, sudoers(5)); sudo resets the environment
    (``env_reset``) and replaces PATH with ``secure_path``, which is why the lab passes
    ``INSTALL_K3S_VERSION`` through ``env`` and never runs itself through sudo."""
    assert ctl.as_root(["true"], euid=1000) == ["sudo", "-n", "--", "true"]
    assert ctl.root_env_argv(["sh", "s"], {"INSTALL_K3S_VERSION": "v1"}) == [
        "env",
        "INSTALL_K3S_VERSION=v1",
        "sh",
        "s",
    ]
