"""Contract: the simulated lab's kwok (sigs.k8s.io/kwok v0.8.0, toolchain/versions.env).

Read in the v0.8.0 module the offline build compiles (the Go module cache): the kwokctl
configuration fields the sim lab writes and how kwok serves a container's log, which the
per-container compute logs (issue 20, point 5) depend on. The e2e tests run it for real.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml

from tests.support.releases import fetch
from variants.sim.ctl import render

ROOT = Path(__file__).resolve().parents[2]


def versions() -> dict[str, str]:
    """toolchain/versions.env as ``{KEY: value}``."""
    lines = (ROOT / "toolchain" / "versions.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


def test_the_kwok_version_is_the_one_read() -> None:
    """toolchain/versions.env ``KWOK_VERSION``: the release whose sources this module cites."""
    assert versions()["KWOK_VERSION"] == "0.8.0"


def test_kwokctl_configuration_fields() -> None:
    """kwok v0.8.0 pkg/apis/config/v1alpha1/kwokctl_configuration_types.go: ``runtime``,
    ``kubeVersion``, ``bindAddress``, ``kubeBinaryPrefix``, ``kubectlBinary``, ``etcdBinary``,
    ``kwokControllerBinary``; kind ``KwokctlConfiguration`` of ``config.kwok.x-k8s.io/v1alpha1``."""
    text = render.render_kwokctl_config(
        kube_version="v1.36.3",
        bin_dir=Path("/b"),
        log_file=Path("/w/l.log"),
        compute_log_file=Path("/w/v.log"),
    )
    config = next(yaml.safe_load_all(text))
    assert (
        config["apiVersion"] == "config.kwok.x-k8s.io/v1alpha1" and config["kind"] == "KwokctlConfiguration"
    )
    assert set(config["options"]) == {
        "runtime",
        "kubeVersion",
        "bindAddress",
        "kubeBinaryPrefix",
        "kubectlBinary",
        "etcdBinary",
        "kwokControllerBinary",
    }
    assert config["options"]["runtime"] == "binary"


def test_cluster_logs_pick_the_entry_that_names_the_container() -> None:
    """kwok v0.8.0 pkg/apis/v1alpha1/cluster_logs_types.go (``ClusterLogs``: ``selector``,
    ``logs``), logs_types.go (``Log``: ``containers``, ``logsFile``, ``previousLogsFile``,
    ``follow``), object_selector.go (``matchNamespaces``, ``matchNames``), and
    pkg/kwok/server/debugging_logs.go ``findLogInLogs``: the first entry whose ``containers``
    lists the container, else the first entry that lists none. So ``vectoradd-<i>`` reads its
    own log (the one GPU it lists) and any other container the default."""
    doc = render.render_compute_logs(Path("/w/logs/vectoradd.log"), ("default",))
    assert doc["apiVersion"] == "kwok.x-k8s.io/v1alpha1" and doc["kind"] == "ClusterLogs"
    assert set(doc["spec"]["selector"]) == {"matchNamespaces", "matchNames"}
    entries = doc["spec"]["logs"]
    assert all(set(e) <= {"containers", "logsFile", "previousLogsFile", "follow"} for e in entries)

    def served(container: str) -> str:
        for e in entries:  # findLogInLogs, as written in kwok
            if container in e.get("containers", []):
                return str(e["logsFile"])
        return str(next(e for e in entries if not e.get("containers"))["logsFile"])

    assert served("vectoradd-1") == "/w/logs/vectoradd-1.log"
    assert served("vectoradd-99") == "/w/logs/vectoradd.log"


def test_the_single_control_plane_runs_without_leader_election() -> None:
    """The sim's kube-controller-manager and kube-scheduler get ``--leader-elect=false``.

    Kubernetes v1.36.3: both bind ``--leader-elect`` through component-base's
    ``options.BindLeaderElectionFlags`` (config/options/leaderelectionconfig.go, a bool flag;
    cmd/kube-scheduler/app/options/options.go, controller-manager options/generic.go), default
    true (cmd/kube-scheduler/app/options/options.go ``LeaderElect: true``; component-base
    config/v1alpha1/defaults.go for the controller-manager). kwok v0.8.0
    pkg/kwokctl/runtime/util.go ``applyComponentPatch``: a ``componentsPatches`` entry whose
    ``name`` is the component's appends ``--<key>=<value>`` for each ``extraArgs`` item (without
    ``override``), after kwokctl's own arguments, which set no ``--leader-elect``; the last value
    of a pflag bool wins. Where the sim build is cached, the binaries' ``--help`` is read too.
    """
    config = next(
        yaml.safe_load_all(
            render.render_kwokctl_config(
                kube_version="v1.36.3",
                bin_dir=Path("/b"),
                log_file=Path("/w/l.log"),
                compute_log_file=Path("/w/v.log"),
            )
        )
    )
    patches = {p["name"]: p for p in config["componentsPatches"]}
    for component in ("kube-controller-manager", "kube-scheduler"):
        assert patches[component]["extraArgs"] == [{"key": "leader-elect", "value": "false"}]
        assert "override" not in patches[component]["extraArgs"][0]
    bin_dir = fetch.cache_root(os.environ) / "sim" / "bin"
    for component in ("kube-controller-manager", "kube-scheduler"):
        binary = bin_dir / component
        if not binary.is_file():
            continue  # not built here; the sources above are the citation
        text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
        line = next((x for x in text.splitlines() if x.strip().startswith("--leader-elect ")), "")
        assert line.rstrip().endswith("(default true)"), f"{component} --help: {line!r}"
