"""``no-plaintext-secrets``."""

from __future__ import annotations

from gpulab.core.argv import decode, encode
from policy import validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden

from ..harness import (
    check_resource,
    ctl_start,
    release,
    smoke_pod,
)

# --- no-plaintext-secrets -----------------------------------------------------------
SECRET_CTX = StackContext(
    dry_run=False,
    config={"gpu-lab:ngcKey": "nvapi-0123456789", "gpu-lab:cluster": "minikube"},
    secret_keys=frozenset({"gpu-lab:ngcKey"}),
)


def test_secrets_in_environment_only_pass() -> None:
    cmd = ctl_start() | {"environment": {"NGC_KEY": "nvapi-0123456789"}}
    with stack_context_overridden(SECRET_CTX):
        assert check_resource("no-plaintext-secrets", validators.T_COMMAND, cmd).passed
        assert check_resource("no-plaintext-secrets", validators.T_RELEASE, release()).passed


def test_secret_in_argv_or_helm_value_violates_naming_the_key_not_the_value() -> None:
    cmd = ctl_start()
    cmd["create"] = encode([*decode(cmd["create"]), "--key=nvapi-0123456789"])
    values = release()["values"] | {"operator": {"env": [{"name": "K", "value": "nvapi-0123456789"}]}}
    pod = smoke_pod()
    pod["spec"]["containers"][0]["env"] = [{"name": "K", "value": "nvapi-0123456789"}]
    with stack_context_overridden(SECRET_CTX):
        outcomes = [
            check_resource("no-plaintext-secrets", validators.T_COMMAND, cmd),
            check_resource("no-plaintext-secrets", validators.T_RELEASE, release(values=values)),
            check_resource("no-plaintext-secrets", validators.T_POD, pod),
        ]
    for o in outcomes:
        assert "secret config gpu-lab:ngcKey in " in o.text
        assert "nvapi-0123456789" not in o.text
    assert "create[14]" in outcomes[0].text and "values.operator.env[0].value" in outcomes[1].text


def test_secrets_without_stack_config_are_not_evaluated() -> None:
    with stack_context_overridden(StackContext()):
        o = check_resource("no-plaintext-secrets", validators.T_COMMAND, ctl_start())
    assert not o.violations and o.not_applicable and "no stack config" in o.not_applicable
