"""Contract: MicroK8s (the lab pins the snap channel 1.35/stable), snapd's ``snap`` command and
the GPU Operator v26.7.0's MicroK8s values.

Read from source only (no snap here): canonical/microk8s at tag v1.35 (commit edf41ff),
canonical/microk8s-core-addons branch 1.35 (commit ec06cfb), NVIDIA/cloud-native-docs at commit
52dcb7b (the docs of GPU Operator v26.7.0: its release notes' newest entry), NVIDIA/gpu-operator
v26.7.0, NVIDIA/holodeck v0.3.7, containerd v1.7.28 and v2.1.3, snapd's ``snap`` command. The
chart's own defaults are read from the workplace's chart. A channel bump fails
:func:`test_the_pinned_channel_and_its_containerd`: re-read every source named here at the new
track. Nothing here ran a MicroK8s (docs/microk8s.md says what that leaves untested).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from variants import microk8s as m
from variants import registry
from variants.microk8s import ctl


def test_the_pinned_channel_and_its_containerd() -> None:
    """Pulumi.yaml ``microk8sChannel`` (variants/microk8s ``MicroK8sSettings``): 1.35/stable.
    canonical/microk8s v1.35 build-scripts/components/containerd/version.sh: ``v2.1.3`` (v1.34:
    ``v1.7.28``); containerd v2.1.3 docs/cri/config.md ``enable_cdi = true`` by default, v1.7.28
    ``enable_cdi = false``; MicroK8s's containerd-template.toml sets no ``enable_cdi``. So 1.35 is
    the first track whose containerd injects the CDI devices of the chart's default device list
    (``cdi-annotations,cdi-cri``). NVIDIA/cloud-native-docs gpu-operator/platform-support.rst:
    Canonical MicroK8s 1.33 to 1.35 validated (Ubuntu 24.04 and 26.04)."""
    assert m.MicroK8sSettings().channel == "1.35/stable"
    assert m.CDI_TRACK == (1, 35) == m.MicroK8sSettings().track


def test_install_refresh_and_remove() -> None:
    """NVIDIA/holodeck v0.3.7 pkg/provisioner/templates/kubernetes.go ``microk8sTemplate``: ``snap
    install microk8s --classic --channel="${MICROK8S_VERSION}"`` (``snap list microk8s`` first:
    installed already); canonical/microk8s v1.35 snap/snapcraft.yaml ``confinement: classic``
    (``--classic`` required). snapd cmd/snap: ``install``/``refresh`` take ``--channel``; ``remove
    --purge``: "Remove the snap without saving a snapshot of its data"; ``snap list`` prints
    ``Name Version Rev Tracking Publisher Notes`` (cmd_list.go ``outputSnapsDefault``, ``-`` for an
    empty field) and fails when the named snap is not installed."""
    assert ctl.install_argv("1.35/stable") == [
        "snap",
        "install",
        "microk8s",
        "--classic",
        "--channel=1.35/stable",
    ]
    assert ctl.refresh_argv("1.35/stable") == ["snap", "refresh", "microk8s", "--channel=1.35/stable"]
    assert ctl.remove_argv() == ["snap", "remove", "--purge", "microk8s"]
    assert m.list_argv() == ["snap", "list", "microk8s"]
    listed = (
        "Name      Version  Rev   Tracking     Publisher   Notes\n"
        "microk8s  v1.35.0  8480  1.35/stable  canonical✓  classic\n"
    )
    assert m.parse_tracking(listed) == "1.35/stable"


def test_the_snap_s_directories_and_command() -> None:
    """canonical/microk8s-core-addons 1.35 addons/nvidia/enable: ``SNAP_DATA`` defaults to
    /var/snap/microk8s/current, ``SNAP_COMMON`` to /var/snap/microk8s/common, the helper command
    ``$SNAP/microk8s-*.wrapper`` under /snap/microk8s/current; snapd puts a snap's commands in
    /snap/bin (holodeck's ``sudo microk8s ...``). canonical/microk8s v1.35
    microk8s-resources/default-args/kube-apiserver ``--secure-port=16443``."""
    assert (m.SNAP.name, m.SNAP.command, m.SNAP.mount) == ("microk8s", "/snap/bin/microk8s", "/snap/microk8s")
    assert m.SNAP.data == "/var/snap/microk8s/current" and m.SNAP.common == "/var/snap/microk8s/common"
    assert m.SNAP.api_port == 16443
    assert m.SNAP.marker.startswith(m.SNAP.common + "/")  # removed by snap remove --purge


def test_containerd_its_template_and_its_socket() -> None:
    """canonical/microk8s v1.35 microk8s-resources/default-args/containerd: ``--config
    ${SNAP_DATA}/args/containerd.toml``, ``--address ${SNAP_COMMON}/run/containerd.sock``;
    microk8s-resources/wrappers/run-containerd-with-args renders ``$SNAP_DATA/args/
    containerd-template.toml`` into ``$SNAP_DATA/args/containerd.toml`` (sed over ``${SNAP}``,
    ``${SNAP_DATA}``, ``${SNAPSHOTTER}``, ``${RUNTIME}``, ``${RUNTIME_TYPE}``) on every start, so an
    edit must go to the template."""
    assert m.SNAP.containerd_config == "/var/snap/microk8s/current/args/containerd.toml"
    assert m.SNAP.containerd_template == "/var/snap/microk8s/current/args/containerd-template.toml"
    assert m.SNAP.containerd_socket == "/var/snap/microk8s/common/run/containerd.sock"
    assert registry.get("microk8s").spec.containerd == (
        "/var/snap/microk8s/current/args/",
        "/var/snap/microk8s/common/run/containerd.sock",
    )


def test_the_toolkit_values_are_nvidia_s_for_microk8s() -> None:
    """NVIDIA/cloud-native-docs gpu-operator/getting-started.rst "MicroK8s" (GPU Operator
    v26.7.0): ``toolkit.env`` ``CONTAINERD_CONFIG=/var/snap/microk8s/current/args/
    containerd-template.toml``, ``CONTAINERD_SOCKET=/var/snap/microk8s/common/run/
    containerd.sock``, ``RUNTIME_CONFIG_SOURCE=file=/var/snap/microk8s/current/args/
    containerd.toml`` (release notes 25.10.0: the install procedure changed with the drop-in
    files); the snap's own addon (core-addons 1.35 addons/nvidia/enable) passes the same three.
    NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go
    ``transformRuntimeConfigAndSocketMounts``: ``CONTAINERD_CONFIG`` is the top-level config the
    toolkit edits (mounted from its directory), ``CONTAINERD_SOCKET`` the socket it signals, a
    ``file=`` source is read under the host's root at /host."""
    assert m.TOOLKIT_ENV == (
        ("CONTAINERD_CONFIG", "/var/snap/microk8s/current/args/containerd-template.toml"),
        ("CONTAINERD_SOCKET", "/var/snap/microk8s/common/run/containerd.sock"),
        ("RUNTIME_CONFIG_SOURCE", "file=/var/snap/microk8s/current/args/containerd.toml"),
    )


def test_the_chart_passes_toolkit_env_and_defaults_cdi_on(chart: Path) -> None:
    """The GPU Operator chart v26.7.0 (the workplace's copy): values.yaml ``toolkit.env: []`` and
    ``cdi.enabled: true``; templates/clusterpolicy.yaml copies ``.Values.toolkit.env`` into the
    ClusterPolicy's ``toolkit.env``, which is where the operator reads the three values."""
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert values["toolkit"]["env"] == [] and values["cdi"]["enabled"] is True
    assert (
        "env: {{ toYaml .Values.toolkit.env | nindent 6 }}"
        in (chart / "templates" / "clusterpolicy.yaml").read_text()
    )


def test_status_and_config() -> None:
    """canonical/microk8s v1.35 scripts/wrappers/status.py: ``-w``/``--wait-ready``,
    ``-t``/``--timeout`` (seconds; 0, the default, waits forever), exit 1 when not ready;
    microk8s-resources/wrappers/microk8s-config.wrapper: ``-l``/``--use-loopback`` prints
    ``$SNAP_DATA/credentials/client.config`` as is (server https://127.0.0.1:16443:
    microk8s-resources/client.config.template), without it the default interface's address
    replaces 127.0.0.1. Both wrappers refuse a user outside the ``microk8s`` group
    (``exit_if_no_permissions``), so the lab runs them as root."""
    assert ctl.status_argv(60) == ["/snap/bin/microk8s", "status", "--wait-ready", "--timeout", "60"]
    assert ctl.config_argv() == ["/snap/bin/microk8s", "config", "--use-loopback"]
    assert ctl.STATUS_TRY_SECONDS > 0  # never 0: that would wait forever
