"""variants.sim.ctl.queues: Kueue's controller as a process of the sim: its configuration, the
EndpointSlice the API server reaches its webhook through, the address it listens on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpulab.config.queues import MANAGER_CONFIG, NAMESPACE, WEBHOOK_SERVICE
from variants.sim.ctl import ports, queues
from variants.sim.ctl.process import SimClusterError

PORTS = {"kueueWebhookPort": 32001, "kueueHealthPort": 32002}


def test_the_process_config_is_the_charts_with_the_labs_addresses() -> None:
    got = yaml.safe_load(
        queues.process_config(yaml.safe_dump(MANAGER_CONFIG), "192.0.2.2", PORTS, Path("/w/certs"))
    )
    assert got["webhook"] == {"port": 32001, "host": "192.0.2.2", "certDir": "/w/certs"}
    assert got["health"]["healthProbeBindAddress"] == "127.0.0.1:32002"
    assert got["metrics"]["bindAddress"] == "0" and got["leaderElection"]["leaderElect"] is False
    assert got["namespace"] == NAMESPACE
    # Everything else as the chart's (the lab's) configuration says.
    assert got["waitForPodsReady"] == MANAGER_CONFIG["waitForPodsReady"]
    assert got["integrations"] == MANAGER_CONFIG["integrations"]
    with pytest.raises(ValueError, match="not a kueue Configuration"):
        queues.process_config("kind: Other\n", "192.0.2.2", PORTS, Path("/w"))


def test_the_endpoint_slice_points_the_webhook_service_at_the_host_and_is_the_labs() -> None:
    s = queues.endpoint_slice("192.0.2.2", PORTS)
    labels = s["metadata"]["labels"]
    assert labels["kubernetes.io/service-name"] == WEBHOOK_SERVICE and s["metadata"]["namespace"] == NAMESPACE
    # Not the EndpointSlice controller's: it neither deletes nor rewrites it.
    assert (
        labels["endpointslice.kubernetes.io/managed-by"]
        == queues.MANAGED_BY
        != "endpointslice-controller.k8s.io"
    )
    assert labels["gpulab.dev/simulated"] == "true"
    assert s["endpoints"] == [{"addresses": ["192.0.2.2"], "conditions": {"ready": True}}]
    assert s["ports"] == [{"name": "", "port": 32001, "protocol": "TCP"}]


def test_the_address_is_never_loopback() -> None:
    assert queues.host_address("10.1.2.3") == "10.1.2.3"
    with pytest.raises(SimClusterError, match=r"127\.0\.0\.0/8"):
        queues.host_address("127.0.0.1")


def test_extra_ports_join_the_labs_reservation_and_stay(tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    lab = tmp_path / "lab"
    lab.mkdir()
    held = ports.reserve(lab, lambda w: True, path=registry, free=lambda p: True)
    extra = ports.extend(lab, queues.PORT_OPTIONS, lambda w: True, path=registry, free=lambda p: True)
    assert set(extra) == set(queues.PORT_OPTIONS) and not set(extra.values()) & set(held.values())
    assert ports.extend(lab, queues.PORT_OPTIONS, lambda w: True, path=registry, free=lambda p: True) == extra
    other = tmp_path / "other"
    other.mkdir()
    theirs = ports.extend(other, queues.PORT_OPTIONS, lambda w: True, path=registry, free=lambda p: True)
    assert not set(theirs.values()) & {*held.values(), *extra.values()}
