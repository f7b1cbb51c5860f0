"""Contract: the simulated lab's kwok (sigs.k8s.io/kwok v0.8.0, toolchain/versions.env).

Read in the v0.8.0 module the offline build compiles (the Go module cache): the kwokctl
configuration fields the sim lab writes and how kwok serves a container's log, which the
per-container compute logs (issue 20, point 5) depend on. The e2e tests run it for real.
"""

from __future__ import annotations

from pathlib import Path

import yaml

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
