"""ops.endpoint: the API server endpoint recorded at create against where each
variant says its cluster answers now."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpulab.core import run as cmd
from gpulab.core.errors import GpuLabError
from gpulab.kube import identity
from ops import endpoint
from variants import registry


def kubeconfig(url: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
            "users": [{"name": "u", "user": {"token": "t"}}],
        }
    )


RECORDED = {"server": "https://127.0.0.1:32771", "caSha256": None, "kubeSystemUid": "u1"}


def same_cluster(kc: str, timeout: float = 10) -> identity.Identity:
    return identity.Identity(identity.from_kubeconfig(kc)[0], None, "u1")


def runner(stdout: str, code: int = 0, log: list[list[str]] | None = None) -> Any:
    def run(argv: list[str]) -> cmd.Result:
        if log is not None:
            log.append(argv)
        return cmd.Result(code, stdout, "")

    return run


def test_minikube_reads_the_profile_s_context_as_its_cluster_command_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kubernetes/minikube v1.37.0: the docker driver publishes 8443 as ``--publish=127.0.0.1::8443``
    (pkg/drivers/kic/oci/oci.go, a host port Docker picks at each container start) and reads it
    back with ``docker container inspect`` (pkg/drivers/kic/oci/network.go ``ForwardedPort``);
    ``minikube update-context`` rewrites the profile's context to it
    (cmd/minikube/cmd/update-context.go, ``kubeconfig.UpdateEndpoint``), as ``minikube status``
    advises when it finds the context ``Misconfigured`` (pkg/minikube/cluster/status.go)."""
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[list[str]] = []
    local = registry.get("minikube")
    live = local.kubeconfig(
        "gpu-lab", Path("/x"), lambda k: "", runner(kubeconfig("https://127.0.0.1:40123"), log=calls)
    )
    assert calls == [["kubectl", "config", "view", "--flatten", "--minify", "--context", "gpu-lab"]]
    assert live is not None and "https://127.0.0.1:40123" in live
    assert local.kubeconfig("gpu-lab", Path("/x"), lambda k: "", runner("", 1)) is None
    fix = local.spec.moved_fix("gpu-lab", "minikube", "https://127.0.0.1:32771", "https://127.0.0.1:40123")
    assert "`minikube update-context -p gpu-lab`" in fix
    assert "`GPULAB_STACK=minikube make destroy && GPULAB_STACK=minikube make lab`" in fix


def test_kind_reads_kind_get_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    """sigs.k8s.io/kind v0.33.0: ``kind get kubeconfig`` writes the node's admin.conf with the
    server the node container publishes now (pkg/cluster/internal/kubeconfig/kubeconfig.go
    ``get``; pkg/cluster/internal/providers/docker/provider.go ``GetAPIServerEndpoint``), a
    host port chosen once at create (provision.go, ``common.PortOrGetFreePort``);
    ``kind export kubeconfig`` merges the same into kubectl's file (``Export``)."""
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    calls: list[list[str]] = []
    local = registry.get("kind")
    live = local.kubeconfig(
        "lab", Path("/x"), lambda k: "", runner(kubeconfig("https://127.0.0.1:41000"), log=calls)
    )
    assert calls == [["kind", "get", "kubeconfig", "--name", "lab"]]
    assert live is not None and "41000" in live
    assert "`kind export kubeconfig --name lab`" in local.spec.moved_fix("lab", "kind", "a", "b")


def test_k3s_reads_its_file_without_asking_for_a_password() -> None:
    calls: list[list[str]] = []
    local = registry.get("k3s")
    assert (
        local.kubeconfig("p", Path("/x"), lambda k: "", runner("sudo: a password is required", 1, calls))
        is None
    )
    assert calls[0][-2:] == ["cat", "/etc/rancher/k3s/k3s.yaml"]
    assert calls[0][:-2] in ([], ["sudo", "-n", "--"])  # as root, or `sudo -n`: never a prompt


def test_existing_reads_the_configured_context(tmp_path: Path) -> None:
    users = tmp_path / "config"
    users.write_text(kubeconfig("https://10.0.0.1:6443"))
    local = registry.get("existing")
    values = {"kubeconfigPath": str(users), "kubeContext": ""}
    live = local.kubeconfig("p", tmp_path, values.__getitem__)
    assert live is not None and identity.from_kubeconfig(live)[0] == "https://10.0.0.1:6443"
    values["kubeconfigPath"] = str(tmp_path / "absent")
    with pytest.raises(GpuLabError, match="cannot be used"):  # endpoint.moved: "cannot tell"
        local.kubeconfig("p", tmp_path, values.__getitem__)


def test_moved_only_for_the_recorded_cluster_at_another_endpoint(tmp_path: Path) -> None:
    sim = registry.get("sim")
    work = tmp_path / ".state" / "sim" / "p"
    work.mkdir(parents=True)

    def moved(url: str | None, read: Any = same_cluster, recorded: Any = RECORDED) -> Any:
        if url is None:
            (work / "kubeconfig.yaml").unlink(missing_ok=True)
        else:
            (work / "kubeconfig.yaml").write_text(kubeconfig(url))
        return endpoint.moved(sim, "p", tmp_path, lambda k: "", recorded, "sim", read=read)

    change = moved("https://localhost:32771")
    assert change is not None
    assert (change.recorded.server, change.live.server) == (
        "https://127.0.0.1:32771",
        "https://localhost:32771",
    )
    assert "now names https://localhost:32771, not https://127.0.0.1:32771" in str(change)
    assert moved("https://127.0.0.1:32771") is None  # the recorded endpoint
    assert moved(None) is None  # the variant cannot tell
    assert moved("https://localhost:32771", recorded=None) is None  # nothing recorded

    def other(kc: str, timeout: float = 10) -> identity.Identity:
        return identity.Identity("https://localhost:32771", None, "u2")

    def silent(kc: str, timeout: float = 10) -> identity.Identity:
        raise identity.IdentityError("the API server did not answer")

    assert moved("https://localhost:32771", read=other) is None  # another cluster: identity's case
    assert moved("https://localhost:32771", read=silent) is None


def test_the_smoke_node_recorded_against_the_live_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node the smoke Pod ran on (``smokeNode``) renamed or made anew under another name:
    both named, with the fix; nothing said while it is there or when nothing was recorded."""
    from gpulab.kube import client as kube

    live = ["kind-control-plane", "kind-worker2"]
    monkeypatch.setattr(kube, "node_names", lambda api, timeout=5: live)
    outputs = {"smokeNode": "kind-worker", "smokeMeasuredAt": "2026-12-03T10:00:00+00:00"}
    said = endpoint.node_gone(object(), outputs, "kind")
    assert said is not None
    assert "ran on node kind-worker (measured 2026-12-03T10:00:00+00:00)" in said
    assert "its nodes: kind-control-plane, kind-worker2" in said
    assert "fix: `GPULAB_STACK=kind make verify`" in said
    assert endpoint.node_gone(object(), {**outputs, "smokeNode": "kind-worker2"}, "kind") is None
    assert endpoint.node_gone(object(), {}, "kind") is None

    def silent(api: Any, timeout: float = 5) -> list[str]:
        raise kube.GateError("no answer")

    monkeypatch.setattr(kube, "node_names", silent)
    assert endpoint.node_gone(object(), outputs, "kind") is None
