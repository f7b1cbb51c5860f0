"""The MicroK8s variant: Canonical's MicroK8s snap installed on this host by the lab, removed on
destroy.

The variant is data first: :data:`SNAP` (where the snap keeps its containerd, its socket and its
command), :data:`TOOLKIT_ENV` (the GPU Operator's toolkit pointed there, NVIDIA's values),
and its one config key, ``microk8sChannel`` (:class:`MicroK8sSettings`, which checks it and
refuses CDI before the track whose containerd reads it; its type and default are Pulumi.yaml's,
gpulab.config.schema); the record,
``MicroK8s.spec``, and the verbs below only read them. This
module also holds the host checks (pure, each given its probe), so that the helper, ``ctl.py``
(``snap install``/``refresh``/``remove``, the wait and the kubeconfig), imports this module and
not the other way round.

Sources, each pinned in tests/contract/test_microk8s.py:

* canonical/microk8s tag v1.35 (edf41ff): ``microk8s-resources/default-args/containerd`` (the
  daemon's ``--config ${SNAP_DATA}/args/containerd.toml`` and ``--address
  ${SNAP_COMMON}/run/containerd.sock``), ``microk8s-resources/wrappers/run-containerd-with-args``
  (``containerd.toml`` rendered from ``args/containerd-template.toml`` on every start),
  ``microk8s-config.wrapper`` (``-l``/``--use-loopback``), ``scripts/wrappers/status.py``
  (``--wait-ready``, ``--timeout``; exit 1 when not ready), ``default-args/kube-apiserver``
  (``--secure-port=16443``), ``build-scripts/components/containerd/version.sh`` (v2.1.3; v1.34
  ships v1.7.28), ``snap/snapcraft.yaml`` (``confinement: classic``).
* NVIDIA/cloud-native-docs (52dcb7b, the GPU Operator v26.7.0 docs) ``gpu-operator/
  getting-started.rst`` "MicroK8s": ``CONTAINERD_CONFIG``, ``CONTAINERD_SOCKET`` and
  ``RUNTIME_CONFIG_SOURCE``; ``platform-support.rst``: MicroK8s 1.33 to 1.35 validated.
* canonical/microk8s-core-addons branch 1.35 (ec06cfb) ``addons/nvidia/enable`` (the snap's own
  ``gpu``/``nvidia`` addon, which installs the GPU Operator with the same three values).
* NVIDIA/holodeck v0.3.7 ``pkg/provisioner/templates/kubernetes.go`` (``microk8sTemplate``:
  ``snap install microk8s --classic --channel=<track>``, ``microk8s status --wait-ready``,
  ``microk8s config``).
* containerd v2.1.3 / v1.7.28 ``docs/cri/config.md``: ``enable_cdi`` true / false by default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from gpulab.config import schema
from gpulab.config.lab import NAMESPACE
from gpulab.config.variant import VariantSettings
from gpulab.core import run as cmd
from gpulab.host.preflight import Finding
from variants.base import (
    Getter,
    RootSteps,
    Runner,
    Status,
    Tool,
    Variant,
    VariantSpec,
    as_root,
    get_text,
    run_quietly,
)

if TYPE_CHECKING:
    import pulumi

    from components.cluster import ClusterOutputs
    from gpulab.config.lab import LabConfig


# --------------------------------------------------------------------------- the data

#: The oldest track whose containerd reads CDI by default (1.35: containerd v2.1.3, enable_cdi
#: true; 1.34: v1.7.28, false, and MicroK8s's template does not set it): the chart's
#: cdi-annotations,cdi-cri device list reaches containers from there on.
CDI_TRACK: Final = (1, 35)
#: A snap channel of MicroK8s: ``<track>/<risk>`` with a Kubernetes minor as the track.
CHANNEL: Final = re.compile(r"^(1)\.(\d+)/(stable|candidate|beta|edge)$")


@dataclass(frozen=True)
class MicroK8sSettings(VariantSettings):
    """What ``snap install`` is given.

    Attributes:
        channel: ``microk8sChannel``, ``1.MINOR/RISK`` (the snap's track is the Kubernetes
            minor; ``snap install --channel``); it decides the Kubernetes version.
    """

    channel: str = schema.default("microk8sChannel")

    @property
    def track(self) -> tuple[int, int]:
        """``(1, MINOR)`` of :attr:`channel` (checked by :meth:`check`)."""
        return track_of(self.channel)

    @classmethod
    def check(cls, get: Getter, problems: list[str]) -> None:
        """A line when ``microk8sChannel`` is not a MicroK8s channel."""
        channel = get_text(get, "microk8sChannel")
        if not CHANNEL.match(channel):
            problems.append(
                f"{NAMESPACE}:microk8sChannel={channel!r} must be a MicroK8s snap channel 1.MINOR/RISK "
                "(RISK: stable, candidate, beta or edge), e.g. 1.35/stable"
            )

    @classmethod
    def resolve(
        cls, get: Getter, values: Mapping[str, object], problems: list[str], env: Mapping[str, str]
    ) -> MicroK8sSettings:
        """:func:`parse`; on a track before :data:`CDI_TRACK` (containerd 1.7 reads no CDI) a
        line unless ``cdi`` is set to false: the record's CDI default (on, the chart's) is one
        for every channel, so the older tracks must turn it off themselves."""
        channel = get_text(get, "microk8sChannel")
        if CHANNEL.match(channel) and track_of(channel) < CDI_TRACK and values.get("cdi") is not False:
            problems.append(
                f"{NAMESPACE}:cdi={'true' if values.get('cdi') else 'auto'} with microk8sChannel={channel}: "
                "its containerd (v1.7) does not read CDI (enable_cdi is false and MicroK8s's template does "
                f"not set it); set cdi=false, or use a channel of track 1.{CDI_TRACK[1]} or later"
            )
        return parse(get)


def track_of(channel: str) -> tuple[int, int]:
    """``"1.35/stable"`` -> ``(1, 35)``.

    Raises:
        ValueError: ``channel`` is not a MicroK8s channel (:data:`CHANNEL`).
    """
    m = CHANNEL.match(channel)
    if not m:
        raise ValueError(f"not a MicroK8s channel: {channel!r}")
    return int(m.group(1)), int(m.group(2))


def parse(get: Getter) -> MicroK8sSettings:
    """The settings as config holds them (checked by :meth:`MicroK8sSettings.check`)."""
    return MicroK8sSettings(channel=get_text(get, "microk8sChannel"))


@dataclass(frozen=True)
class SnapLayout:
    """Where the MicroK8s snap keeps what the lab touches (snap ``microk8s``, classic confinement).

    Attributes:
        name: the snap's name.
        command: the snap's command (``/snap/bin/<name>``; sudo's ``secure_path`` may lack
            ``/snap/bin``, so the lab names it whole).
        mount: the snap's mount directory; gone once the snap is removed.
        data: ``$SNAP_DATA`` through its ``current`` link (the addon's default).
        common: ``$SNAP_COMMON`` (kept across revisions, removed by ``snap remove --purge``).
        api_port: the API server's ``--secure-port``, the kubeconfig's port.
    """

    name: str = "microk8s"
    command: str = "/snap/bin/microk8s"
    mount: str = "/snap/microk8s"
    data: str = "/var/snap/microk8s/current"
    common: str = "/var/snap/microk8s/common"
    api_port: int = 16443

    @property
    def args_dir(self) -> str:
        """``$SNAP_DATA/args/``: the daemons' arguments and containerd's config (template and
        rendered), the directory policy ``toolkit-fits-runtime`` expects the config in."""
        return f"{self.data}/args/"

    @property
    def containerd_template(self) -> str:
        """The template MicroK8s renders containerd's config from on every start: what the
        operator's toolkit edits (``CONTAINERD_CONFIG``), so its change survives the render."""
        return self.args_dir + "containerd-template.toml"

    @property
    def containerd_config(self) -> str:
        """The config containerd runs with (rendered): what the toolkit reads
        (``RUNTIME_CONFIG_SOURCE=file=...``; its default source, ``containerd config dump`` run in
        the toolkit's container, does not see MicroK8s's config)."""
        return self.args_dir + "containerd.toml"

    @property
    def containerd_socket(self) -> str:
        """containerd's ``--address``."""
        return f"{self.common}/run/containerd.sock"

    @property
    def marker(self) -> str:
        """The lab's record that it installed the snap, in ``$SNAP_COMMON`` so that
        ``snap remove --purge`` removes it with the snap."""
        return f"{self.common}/gpulab-installed.json"


SNAP: Final = SnapLayout()
#: The operator's toolkit pointed at MicroK8s's containerd (NVIDIA's getting-started.rst
#: "MicroK8s", the values the snap's own nvidia addon passes).
TOOLKIT_ENV: Final[tuple[tuple[str, str], ...]] = (
    ("CONTAINERD_CONFIG", SNAP.containerd_template),
    ("CONTAINERD_SOCKET", SNAP.containerd_socket),
    ("RUNTIME_CONFIG_SOURCE", f"file={SNAP.containerd_config}"),
)
#: The helper's subcommand and its step name.
STEPS: Final = {"up": "microk8s-install"}

CHECK_NOT_UNDER_SUDO: Final = "microk8s-not-under-sudo"
CHECK_SUDO: Final = "microk8s-sudo"
CHECK_INSTALLED: Final = "microk8s-installed"


# --------------------------------------------------------------------------- host checks


def list_argv() -> list[str]:
    """``snap list microk8s``: no root needed; exit 1 when the snap is not installed."""
    return ["snap", "list", SNAP.name]


def parse_tracking(output: str) -> str | None:
    """``snap list microk8s`` output -> the channel it tracks (``"1.35/stable"``); None when it
    lists no microk8s. Columns are found by the header (snapd cmd/snap/cmd_list.go: ``Name
    Version Rev Tracking Publisher Notes``, ``-`` for an empty field)."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    if not lines or "Tracking" not in lines[0]:
        return None
    col = lines[0].index("Tracking")
    for row in lines[1:]:
        if row[0] == SNAP.name and len(row) > col and row[col] != "-":
            return row[col].removeprefix("latest/")
    return None


def plan(tracking: str | None, ours: bool, wanted: str) -> str:
    """What ``up`` does: ``install`` (none there), ``reuse`` (it tracks the wanted channel),
    ``refresh`` (another channel, the lab's own install) or ``refuse`` (another channel,
    somebody else's: the lab does not take over a MicroK8s it did not make)."""
    if tracking is None:
        return "install"
    if tracking == wanted:
        return "reuse"
    return "refresh" if ours else "refuse"


#: The snap's install, refresh and removal, ``microk8s status|config`` and the marker: as root.
ROOT_STEPS: Final = RootSteps(
    stack="microk8s",
    steps="the snap steps (snap install/refresh/remove, microk8s status and config, the marker)",
    why_root="snap installs, refreshes and removes snaps as root only",
    sudo_check=CHECK_SUDO,
    not_under_sudo_check=CHECK_NOT_UNDER_SUDO,
)
check_sudo = ROOT_STEPS.check_sudo
check_not_under_sudo = ROOT_STEPS.check_not_under_sudo


def check_installed(tracking: str | None, ours: bool, wanted: str) -> Finding:
    """The MicroK8s there (tracking ``tracking``; the lab's when ``ours``) may track ``wanted``."""
    action = plan(tracking, ours, wanted)
    if action != "refuse":
        what = {"install": "not installed; will install", "reuse": "installed on that channel"}
        return Finding(
            CHECK_INSTALLED, True, f"microk8s {wanted}: {what.get(action, f'refresh from {tracking}')}"
        )
    return Finding(
        CHECK_INSTALLED,
        False,
        f"microk8s tracking {tracking} is installed and gpu-lab did not install it; the lab would move it "
        f"to {wanted}",
        f"use it as it is (scripts/pulumi config set gpu-lab:microk8sChannel {tracking}), or remove it "
        f"first (sudo snap remove microk8s)",
    )


def installed_tracking(run: cmd.Probe = cmd.probe) -> str | None:
    """The channel the installed microk8s snap tracks, or None when none is installed."""
    rc, out, _ = run(list_argv())
    return parse_tracking(out) if rc == 0 else None


def marker_present(run: cmd.Probe = cmd.probe, euid: int | None = None) -> bool:
    """Whether the lab's marker (:attr:`SnapLayout.marker`) exists (asked as root)."""
    rc, _, _ = run(as_root(["test", "-e", SNAP.marker], euid))
    return rc == 0


def host_findings(
    wanted: str,
    run: cmd.Probe = cmd.probe,
    euid: Callable[[], int] = os.geteuid,
    env: Mapping[str, str] = os.environ,
) -> list[Finding]:
    """Every host check the MicroK8s lab needs (passing ones included), in order: not run
    through sudo, root steps without a prompt, no foreign MicroK8s on another channel (the
    marker is asked only when sudo works). ``snap`` itself is a tool of the record (``VariantSpec.tools``)."""
    uid = euid()
    found = [check_not_under_sudo(uid, env.get("SUDO_USER")), check_sudo(uid, run)]
    ours = marker_present(run, uid) if found[1].ok else False
    found.append(check_installed(installed_tracking(run), ours, wanted))
    return found


# --------------------------------------------------------------------------- the variant


class MicroK8s(Variant):
    """MicroK8s on this host; its root steps run through ``sudo -n`` (variants/microk8s/ctl.py).
    The lab installs the GPU Operator itself with Helm, not the snap's ``gpu`` addon, so its
    chart, values and gate are the other variants'."""

    spec = VariantSpec(
        name="microk8s",
        gpu_stack_note=(
            "on this variant NVIDIA's toolkit comes from the GPU Operator, which the lab installs; with "
            "the toolkit on the host (or MicroK8s's own gpu addon), use cluster=existing on "
            "`microk8s config`'s kubeconfig"
        ),
        settings=MicroK8sSettings,
        node_runtime="microk8s",
        # MicroK8s's own containerd: the toolkit edits its template, reads its rendered config.
        containerd=(SNAP.args_dir, SNAP.containerd_socket),
        toolkit_env=TOOLKIT_ENV,
        tools=(
            Tool(
                "snap",
                "install snapd (sudo apt-get install snapd on Ubuntu/Debian): MicroK8s ships as a snap "
                "only (NVIDIA holodeck installs it on Debian-family hosts alone)",
            ),
        ),
        bundle_tools={"snap": ("snap", "list", SNAP.name)},
        steps=STEPS,
        endpoint_fix=(
            "MicroK8s now answers at {live}, not {recorded} where the stack read it at create (its "
            f"kube-apiserver --secure-port, {SNAP.api_port} as installed, in {SNAP.args_dir}kube-apiserver "
            "changed): put the recorded port back and restart it (`sudo microk8s stop && sudo microk8s "
            "start`), or make the lab anew with "
            "`GPULAB_STACK={stack} make destroy && GPULAB_STACK={stack} make lab` (Pulumi would replace "
            "every object of the lab to use the new address)"
        ),
        start_or_delete_hint=(
            "start it (`sudo microk8s start`) or remove it (`sudo snap remove --purge microk8s`)"
        ),
        node_command="{cmd}",  # the snap runs on this host: it is the GPU node
    )

    def preflight(self, cfg: LabConfig) -> Sequence[Finding]:
        """Not run through sudo, root steps without a prompt, no foreign MicroK8s on another
        channel (:func:`host_findings`); ``snap`` itself is a tool of the record."""
        return host_findings(cfg.settings(MicroK8sSettings).channel)

    def create(self, cfg: LabConfig, opts: pulumi.ResourceOptions | None = None) -> ClusterOutputs:
        """One ``microk8s-cluster`` command: ``ctl up --channel C --timeout T``, ``down`` on
        destroy; a new channel replaces it delete-first (the snap is one install per host)."""
        from components.cluster import CommandCluster

        channel = cfg.settings(MicroK8sSettings).channel
        timeout = cfg.cluster_timeout_seconds
        cluster = CommandCluster(
            "gpulab:microk8s:MicroK8sCluster",
            self.name,
            ctl=self.spec.ctl,
            up=["--channel", channel, "--timeout", str(timeout)],
            triggers=[channel],
            timeout=timeout * 2 + 60,  # the snap's install, then the wait for the node
            opts=opts,
        )
        cluster.finish({"channel": channel, "installed": cluster.fact("installed")})
        return cluster

    def status(self, profile: str, root: Path, run: Runner = run_quietly) -> Status:
        """The snap on this host: gone when its mount is."""
        present = Path(SNAP.mount).exists()
        return Status(not present, f"{SNAP.mount} {'exists' if present else 'is gone'}")

    def kubeconfig(self, profile: str, root: Path, get: Getter, run: Runner = run_quietly) -> str | None:
        # What the cluster command read at create, through `sudo -n` (None: it would prompt).
        p = run(as_root([SNAP.command, "config", "--use-loopback"]))
        return p.stdout if p.returncode == 0 and "server:" in p.stdout else None


VARIANT = MicroK8s()
