"""ops.redact: learned secret values and secret shapes never survive into text or JSON."""

from __future__ import annotations

import base64
import json

from ops.redact import REDACTED, Redactor

SENTINEL = "gpulab-sentinel-6f1d2c9a"
PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkL0Wq3Tq\n-----END EC PRIVATE KEY-----\n"
KEY_DATA = base64.b64encode(PEM.encode()).decode()
TOKEN = "kwok-admin-token-3b1f7e"
KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: {KEY_DATA}
    server: https://127.0.0.1:32766
  name: lab
users:
- name: admin
  user:
    client-key-data: {KEY_DATA}
    token: {TOKEN}
"""


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_learned_values_go_in_every_form() -> None:
    r = Redactor()
    r.learn({"nested": [SENTINEL]})
    text = f"env {SENTINEL}; annotation {b64(SENTINEL)}; json {json.dumps(SENTINEL + chr(10))}"
    clean = r.text(text)
    assert SENTINEL not in clean and b64(SENTINEL) not in clean
    assert clean.startswith(f"env {REDACTED}; annotation {REDACTED}")
    assert r.leaks(clean) == [] and r.leaks(text) == ["gpul..."]


def test_short_values_are_not_learned() -> None:
    r = Redactor()
    r.learn("true")
    r.learn("1")
    assert r.text("ready: true, replicas 1") == "ready: true, replicas 1"
    assert r.learned == 0


def test_kubeconfig_fields_learned_but_not_the_server() -> None:
    r = Redactor()
    r.learn_kubeconfig(KUBECONFIG)
    log = f"dialing https://127.0.0.1:32766 with Bearer {TOKEN}\nkey {PEM}"
    clean = r.text(log)
    assert TOKEN not in clean and "PRIVATE KEY" not in clean and KEY_DATA not in clean
    assert "https://127.0.0.1:32766" in clean
    assert r.leaks(clean) == []


def test_shapes_without_learning() -> None:
    r = Redactor()
    jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlLXNpZw"
    text = f"a {PEM} b {KEY_DATA} c {jwt} d Authorization: Bearer abcdefgh12345\ntoken: s3cr3t-v4lu3\n"
    clean = r.text(text)
    for secret in ("PRIVATE KEY", KEY_DATA, jwt, "abcdefgh12345", "s3cr3t-v4lu3"):
        assert secret not in clean, secret
    assert "Authorization: Bearer [redacted]" in clean and "token: [redacted]" in clean


def test_json_credential_keys_and_env_names() -> None:
    r = Redactor()
    pod = {
        "metadata": {"name": "p", "annotations": {"note": SENTINEL}},
        "spec": {
            "automountServiceAccountToken": False,
            "volumes": [{"name": "v", "secret": {"secretName": "gpu-operator-creds"}}],
            "containers": [
                {
                    "env": [
                        {"name": "NGC_API_KEY", "value": "nvapi-abcdefghijk"},
                        {"name": "HTTP_PASSWORD", "value": "hunter2hunter2"},
                        {"name": "LOG_LEVEL", "value": "info"},
                        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}},
                    ]
                }
            ],
        },
        "status": {"token": "abc", "password": ""},
    }
    r.learn(SENTINEL)
    clean = r.json(pod)
    env = clean["spec"]["containers"][0]["env"]
    assert [e.get("value") for e in env] == [REDACTED, REDACTED, "info", None]
    assert env[3]["valueFrom"] == {"secretKeyRef": {"name": "s", "key": "token"}}
    assert clean["metadata"]["annotations"]["note"] == REDACTED
    assert clean["spec"]["volumes"][0]["secret"] == {"secretName": "gpu-operator-creds"}
    assert clean["spec"]["automountServiceAccountToken"] is False
    assert clean["status"] == {"token": REDACTED, "password": ""}


def test_secret_data_learned_decoded_but_not_the_namespace() -> None:
    r = Redactor()
    r.learn_secret_data({"token": b64(SENTINEL), "namespace": b64("gpu-operator")})
    assert r.text(f"{SENTINEL} in gpu-operator") == f"{REDACTED} in gpu-operator"
