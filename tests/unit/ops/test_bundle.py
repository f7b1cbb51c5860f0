"""ops.bundle without a cluster: what it reads from the stack, the redaction, the archive."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from ops import bundle
from ops.redact import Redactor
from tests.unit.ops.test_redact import KEY_DATA, KUBECONFIG, TOKEN

SENTINEL = "gpulab-sentinel-secret-output-7e3a"
CONFIG_SENTINEL = "gpulab-sentinel-secret-config-91bd"
OUTPUTS = {"simulated": True, "hostDriverVersion": "580.159.04", "clusterKind": "sim"}


def fake_pulumi(*args: str) -> str:
    """What ``scripts/pulumi ... --stack sim`` prints (the cluster at 127.0.0.1:9 answers nothing)."""
    kubeconfig = KUBECONFIG.replace("https://127.0.0.1:32766", "https://127.0.0.1:9")
    if args == ("stack", "output", "--json", "--show-secrets"):
        return json.dumps({**OUTPUTS, "kubeconfig": kubeconfig, "apiToken": SENTINEL})
    if args == ("stack", "output", "--json"):
        return json.dumps({**OUTPUTS, "kubeconfig": "[secret]", "apiToken": "[secret]"})
    config = {
        "gpu-lab:cluster": {"value": "sim", "secret": False},
        "e2e:sentinel": {"value": CONFIG_SENTINEL, "secret": True},
    }
    if args == ("config", "--json", "--show-secrets"):
        return json.dumps(config)
    if args == ("config", "--json"):
        return json.dumps({**config, "e2e:sentinel": {"secret": True}})
    if args == ("stack", "export"):
        resources = [{"urn": "urn:pulumi:sim::gpu-lab::pulumi:pulumi:Stack::gpu-lab-sim", "type": "x"}]
        return json.dumps({"deployment": {"resources": resources, "secrets_providers": {"state": KEY_DATA}}})
    raise AssertionError(args)


def members(path: Path) -> dict[str, str]:
    with tarfile.open(path) as tar:
        return {
            m.name.split("/", 1)[1]: tar.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in tar.getmembers()
        }


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle.Stack, "pulumi", lambda self, *a: fake_pulumi(*a))


def test_unreachable_cluster_bundles_the_rest_and_says_so(stack: None, tmp_path: Path) -> None:
    b, redactor = bundle.collect("sim", log_lines=10)
    path, sizes = bundle.write(b, redactor, "sim", tmp_path)
    assert path.name.startswith("debug-bundle-sim-") and path.name.endswith(".tar.gz")
    assert path.stat().st_mode & 0o777 == 0o600
    files = members(path)
    assert set(sizes) == set(files)
    assert {"README.txt", "stack/outputs.json", "stack/config.json", "stack/resources.json"} <= set(files)
    assert {"host/probe.json", "host/preflight.json", "tools.json"} <= set(files)
    assert not any(name.startswith(("cluster/", "logs/")) for name in files)
    readme = files["README.txt"]
    assert "Could not read:" in readme and "  cluster: " in readme
    assert json.loads(files["host/probe.json"])["facts"]["source"] == "capture:h200-1gpu"
    assert json.loads(files["stack/outputs.json"])["hostDriverVersion"] == "580.159.04"
    assert json.loads(files["stack/config.json"])["e2e:sentinel"]["value"] == "[secret]"
    tools = json.loads(files["tools.json"])
    assert tools["packages"]["Jinja2"] and "python" in tools["tools"]


def test_no_secret_anywhere_in_the_archive(stack: None, tmp_path: Path) -> None:
    b, redactor = bundle.collect("sim")
    # A log line and a pod annotation that copied secrets (as a careless operand might).
    b.files["logs/gpu-operator/p/c.log"] = f"auth {TOKEN} key={SENTINEL} cfg={CONFIG_SENTINEL}\n"
    b.add_json("cluster/gpu-operator/pods.json", [{"metadata": {"annotations": {"x": SENTINEL}}}])
    path, _ = bundle.write(b, redactor, "sim", tmp_path)
    whole = "\n".join(members(path).values())
    for secret in (SENTINEL, CONFIG_SENTINEL, TOKEN, KEY_DATA, "PRIVATE KEY"):
        assert secret not in whole, secret
    assert "[redacted]" in members(path)["logs/gpu-operator/p/c.log"]


def test_a_leak_stops_the_bundle(stack: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b, redactor = bundle.collect("sim")
    b.files["logs/x.log"] = SENTINEL
    monkeypatch.setattr(Redactor, "text", lambda self, text: text)
    with pytest.raises(RuntimeError, match="still present"):
        bundle.write(b, redactor, "sim", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_cli_prints_path_size_and_contents(
    stack: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bundle.main(["--stack", "sim", "--out-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    (path,) = tmp_path.glob("debug-bundle-sim-*.tar.gz")
    first = out.splitlines()[0]
    assert str(path) in first and "KiB" in first and "files):" in first
    assert "  stack/outputs.json" in out and "  README.txt" in out
    assert "gpu-lab: could not read cluster:" in err


def test_cli_without_a_stack_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GPULAB_STACK", raising=False)
    assert bundle.main([]) == 2
    assert "no stack" in capsys.readouterr().err


def test_helm_release_status_without_values() -> None:
    import base64
    import gzip

    release = {
        "name": "gpu-operator",
        "namespace": "gpu-operator",
        "version": 2,
        "info": {"status": "deployed", "description": "Upgrade complete", "last_deployed": "2026-12-01"},
        "chart": {"metadata": {"name": "gpu-operator", "version": "v26.7.0", "appVersion": "v26.7.0"}},
        "config": {"ngc": {"apiKey": SENTINEL}},
        "manifest": "kind: Secret\n",
    }
    stored = base64.b64encode(gzip.compress(json.dumps(release).encode()))  # what Helm writes
    secret = {
        "metadata": {"labels": {"name": "gpu-operator", "version": "2", "status": "deployed"}},
        "data": {"release": base64.b64encode(stored).decode()},  # how the API returns it
    }
    status = bundle._helm_release(secret)
    assert status["revision"] == 2 and status["info"]["status"] == "deployed"
    assert status["chart"] == {"name": "gpu-operator", "version": "v26.7.0", "appVersion": "v26.7.0"}
    assert SENTINEL not in json.dumps(status) and "manifest" not in status and "config" not in status


def test_cli_says_what_this_machine_knows_when_the_cluster_does_not_answer(
    stack: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A frozen etcd (SIGSTOP) or a control plane its supervisor took down: the API server's
    # answer (or its silence) cannot say which; the variant's local status can.
    from variants.base import Status
    from variants.sim import VARIANT

    monkeypatch.setattr(
        type(VARIANT),
        "status",
        lambda self, profile, root: Status(False, "", "the sim cluster 'p': etcd stopped"),
    )
    assert bundle.main(["--stack", "sim", "--out-dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "gpu-lab: could not read cluster:" in err
    assert "gpu-lab: this machine says: the sim cluster 'p': etcd stopped" in err


def test_the_bundle_finds_the_project_root() -> None:
    """ROOT is the checkout (where Pulumi.yaml and scripts/ are), wherever ops/ sits in it."""
    from ops import bundle

    assert (bundle.ROOT / "Pulumi.yaml").is_file()
    assert (bundle.ROOT / "scripts" / "lab").is_file()
