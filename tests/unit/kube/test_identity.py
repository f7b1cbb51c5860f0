"""gpulab.kube.identity: which cluster a kubeconfig reaches, and the stop when it is another."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
import yaml

from gpulab.kube import identity

CA_DER = b"\x30\x82\x01\x0a-not-a-real-certificate-but-bytes"
PEM = b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(CA_DER) + b"-----END CERTIFICATE-----\n"


def kubeconfig(server: str = "https://127.0.0.1:32766", ca: bytes | None = PEM) -> str:
    cluster: dict[str, str] = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "c", "cluster": cluster},
                {"name": "other", "cluster": {"server": "https://x"}},
            ],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "ctx",
            "users": [{"name": "u", "user": {"token": "t"}}],
        }
    )


def test_server_and_ca_fingerprint_of_the_current_context() -> None:
    server, ca = identity.from_kubeconfig(kubeconfig())
    assert server == "https://127.0.0.1:32766"
    assert (
        ca == hashlib.sha256(CA_DER).hexdigest()
    )  # of the DER bytes, as `openssl x509 -fingerprint -sha256`
    assert identity.from_kubeconfig(kubeconfig(ca=None)) == ("https://127.0.0.1:32766", None)


def test_not_a_kubeconfig_is_an_identity_error() -> None:
    with pytest.raises(identity.IdentityError, match="current context"):
        identity.from_kubeconfig("apiVersion: v1\nclusters: []\n")


def test_same_cluster_is_decided_by_kube_system_uid_when_both_have_it() -> None:
    a = identity.Identity("https://127.0.0.1:1", "ab", "uid-1")
    # The same port and CA, another etcd: another cluster (the dead-etcd case).
    assert not a.same_cluster(identity.Identity("https://127.0.0.1:1", "ab", "uid-2"))
    # Another address, the same data: the same cluster (a kubeconfig rewritten to a new port).
    assert a.same_cluster(identity.Identity("https://10.0.0.1:6443", "cd", "uid-1"))
    # Without the UID on one side: server and CA.
    assert a.same_cluster(identity.Identity("https://127.0.0.1:1", "ab", None))
    assert not a.same_cluster(identity.Identity("https://127.0.0.1:1", "ff", None))


def test_a_mismatch_names_both_clusters_and_the_fix() -> None:
    rec = identity.Identity("https://127.0.0.1:32766", "a" * 64, "uid-recorded")
    live = identity.Identity("https://127.0.0.1:32766", "a" * 64, "uid-other")
    with pytest.raises(identity.IdentityMismatchError) as e:
        identity.verify(rec, live, identity.mismatch_fix("sim"))
    msg = str(e.value)
    assert "recorded: https://127.0.0.1:32766" in msg and "uid-recorded" in msg
    assert "now:      https://127.0.0.1:32766" in msg and "uid-other" in msg
    assert "nothing was changed" in msg and "`GPULAB_STACK=sim make destroy`" in msg


def test_embed_round_trips_and_leaves_the_cluster_untouched() -> None:
    rec = {"server": "https://127.0.0.1:32766", "caSha256": "ab", "kubeSystemUid": "u1"}
    text = identity.embed(kubeconfig(), rec)
    assert identity.embedded(text) == identity.Identity.from_json(rec)
    doc = yaml.safe_load(text)
    doc.pop("extensions")
    assert doc == yaml.safe_load(kubeconfig())
    assert identity.embed(kubeconfig(), None) == kubeconfig()
    assert identity.embedded(kubeconfig()) is None


def test_recorded_identity_comes_from_the_environment_else_the_kubeconfig() -> None:
    rec = {"server": "https://s", "caSha256": None, "kubeSystemUid": "env-uid"}
    embedded = identity.embed(kubeconfig(), {"server": "https://s", "kubeSystemUid": "kc-uid"})
    env = {identity.IDENTITY_ENV: json.dumps(rec)}
    assert identity.recorded_from_env(env, embedded).kube_system_uid == "env-uid"  # type: ignore[union-attr]
    assert identity.recorded_from_env({}, embedded).kube_system_uid == "kc-uid"  # type: ignore[union-attr]
    assert identity.recorded_from_env({}, kubeconfig()) is None


def test_record_compares_with_the_previous_stdout_of_an_update(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # pulumi-command gives an in-place update the previous stdout (PULUMI_COMMAND_STDOUT):
    # a kubeconfig that now reaches another cluster fails the update, naming both.
    previous = {
        "server": "https://127.0.0.1:32766",
        "caSha256": "a",
        "kubeSystemUid": "old",
        "createdAt": "T0",
    }
    monkeypatch.setenv("GPULAB_KUBECONFIG", kubeconfig())
    monkeypatch.setenv(identity.PREVIOUS_STDOUT_ENV, json.dumps(previous) + "\n")
    monkeypatch.setattr(
        identity, "read", lambda kc, api=None, timeout=10: identity.Identity("https://x", "b", "new")
    )
    assert identity.main(["record", "--stack", "existing"]) == 1
    err = capsys.readouterr().err
    assert "another cluster" in err and "old" in err and "new" in err
    assert "`GPULAB_STACK=existing make destroy`" in err
    # The same cluster at the recorded endpoint (a rotated token, say): recorded again,
    # keeping when it was first recorded.
    monkeypatch.setattr(
        identity,
        "read",
        lambda kc, api=None, timeout=10: identity.Identity("https://127.0.0.1:32766", "a", "old"),
    )
    assert identity.main(["record", "--stack", "existing"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kubeSystemUid"] == "old" and out["createdAt"] == "T0"
    assert out["server"] == "https://127.0.0.1:32766" and out["stack"] == "existing"


def test_record_refuses_the_same_cluster_at_a_new_endpoint_naming_both(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The recorded cluster (its kube-system UID) behind a kubeconfig that names another
    endpoint: the update fails, naming both servers and the fix, before the Kubernetes provider
    sees the new kubeconfig. pulumi-kubernetes (v4.25.0, provider/pkg/provider/provider.go
    ``DiffConfig``) plans a replacement of the provider whenever the active cluster of its
    kubeconfig changes, and pulumi (v3.274.1, pkg/resource/deploy/step_generator.go
    ``providerChanged``) then replaces every resource of that provider: accepting the new
    address in silence would replace every object of the lab."""
    previous = {"server": "https://127.0.0.1:32766", "caSha256": "a", "kubeSystemUid": "same"}
    monkeypatch.setenv("GPULAB_KUBECONFIG", kubeconfig("https://localhost:32766"))
    monkeypatch.setenv(identity.PREVIOUS_STDOUT_ENV, json.dumps(previous))
    monkeypatch.setattr(
        identity,
        "read",
        lambda kc, api=None, timeout=10: identity.Identity("https://localhost:32766", "a", "same"),
    )
    assert identity.main(["record", "--stack", "existing"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing recorded
    assert "the API server endpoint of this stack's cluster changed" in captured.err
    assert "recorded: https://127.0.0.1:32766" in captured.err
    assert "live:     https://localhost:32766" in captured.err
    assert "kube-system uid same" in captured.err
    assert "`GPULAB_STACK=existing make destroy && GPULAB_STACK=existing make lab`" in captured.err


def test_a_check_stops_on_a_moved_endpoint_and_on_another_cluster() -> None:
    recorded = identity.Identity("https://127.0.0.1:1", "a", "u", stack="sim")
    identity.verify(recorded, identity.Identity("https://127.0.0.1:1", "a", "u"), "fix", "moved")
    # Without an endpoint fix the caller compares the endpoint itself: only the cluster counts.
    identity.verify(recorded, identity.Identity("https://localhost:1", "a", "u"), "fix")
    with pytest.raises(identity.EndpointChangedError) as moved:
        identity.verify(recorded, identity.Identity("https://localhost:1", "a", "u"), "fix", "moved")
    assert moved.value.recorded.server == "https://127.0.0.1:1"
    assert moved.value.live.server == "https://localhost:1"
    assert str(moved.value).endswith("fix: moved")
    with pytest.raises(identity.IdentityMismatchError):
        identity.verify(recorded, identity.Identity("https://localhost:1", "a", "v"), "fix", "moved")


def test_record_without_a_kubeconfig_says_so(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.delenv("GPULAB_KUBECONFIG", raising=False)
    assert identity.main(["record"]) == 1
    assert "GPULAB_KUBECONFIG is empty" in capsys.readouterr().err


def test_record_then_runs_the_pre_release_check_in_its_process_once_verified(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # The GPU stack's pre-release check (gpulab.kube.crd_check) runs after the identity is
    # verified, in the same process; its report goes to stderr, the identity stays on stdout.
    from gpulab.kube import crd_check

    ran: list[list[str]] = []

    def check(argv: list[str]) -> int:
        ran.append(argv)
        print('{"crds": []}')
        return 0 if "--values" in argv else 1

    live = identity.Identity("https://127.0.0.1:32766", "a", "uid-1")
    monkeypatch.setenv("GPULAB_KUBECONFIG", kubeconfig())
    monkeypatch.delenv(identity.PREVIOUS_STDOUT_ENV, raising=False)
    monkeypatch.setattr(identity, "read", lambda kc, api=None, timeout=10: live)
    monkeypatch.setattr(crd_check, "main", check)
    then = ["--then", "gpulab.kube.crd_check", "--chart", "/c"]
    assert identity.main(["record", "--stack", "sim", *then, "--values", "{}"]) == 0
    io = capsys.readouterr()
    assert ran == [["--chart", "/c", "--values", "{}"]]
    assert json.loads(io.out)["kubeSystemUid"] == "uid-1" and '{"crds": []}' in io.err
    # A failing check fails the command, and no identity is printed (none is recorded).
    assert identity.main(["record", "--stack", "sim", *then]) == 1
    assert capsys.readouterr().out == ""
    # Another cluster than the recorded one: stopped before the check touches it.
    ran.clear()
    previous = {"server": "https://127.0.0.1:32766", "caSha256": "a", "kubeSystemUid": "other"}
    monkeypatch.setenv(identity.PREVIOUS_STDOUT_ENV, json.dumps(previous))
    assert identity.main(["record", "--stack", "sim", *then, "--values", "{}"]) == 1
    assert ran == [] and "another cluster" in capsys.readouterr().err


def test_record_then_runs_only_a_pre_release_check(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("GPULAB_KUBECONFIG", kubeconfig())
    with pytest.raises(SystemExit) as exit_:
        identity.main(["record", "--then", "os", "-c", "x"])
    assert exit_.value.code == 2
    assert "--then os: not a pre-release check (one of gpulab.kube.crd_check)" in capsys.readouterr().err
