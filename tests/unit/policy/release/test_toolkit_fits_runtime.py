"""``toolkit-fits-runtime``."""

from __future__ import annotations

from policy import validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden

from ..harness import (
    check_resource,
    release,
    unverified_lines,
)

# --- toolkit-fits-runtime -----------------------------------------------------------
K3S_ENV = [
    {"name": "CONTAINERD_CONFIG", "value": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"},
    {"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"},
]


def test_toolkit_on_k3s_needs_k3s_containerd_paths() -> None:
    values = {"driver": {"enabled": False}, "toolkit": {"enabled": True, "env": K3S_ENV}}
    cfg = {"clusterRuntime": "k3s"}
    assert check_resource("toolkit-fits-runtime", validators.T_RELEASE, release(values=values), cfg).passed
    o = check_resource("toolkit-fits-runtime", validators.T_RELEASE, release(), cfg)  # chart defaults
    assert "toolkit.env CONTAINERD_CONFIG=/var/lib/rancher/k3s" in o.text
    stock = [
        {"name": "CONTAINERD_CONFIG", "value": "/etc/containerd/config.toml"},
        {"name": "CONTAINERD_SOCKET", "value": "/run/containerd/containerd.sock"},
    ]
    values = {"toolkit": {"enabled": True, "env": stock}}
    o = check_resource("toolkit-fits-runtime", validators.T_RELEASE, release(values=values), cfg)
    assert "CONTAINERD_CONFIG=/etc/containerd/config.toml" in o.text


def test_the_fix_names_the_config_file_the_variant_s_record_gives_the_toolkit() -> None:
    # k3s: its rendered config.toml; MicroK8s: the template it renders its config from on every
    # start (an edit of containerd.toml would be lost); RKE2, no lab variant: config.toml.
    cases = {
        "k3s": "CONTAINERD_CONFIG=/var/lib/rancher/k3s/agent/etc/containerd/config.toml and "
        "CONTAINERD_SOCKET=/run/k3s/containerd/containerd.sock",
        "microk8s": "CONTAINERD_CONFIG=/var/snap/microk8s/current/args/containerd-template.toml and "
        "CONTAINERD_SOCKET=/var/snap/microk8s/common/run/containerd.sock",
        "rke2": "CONTAINERD_CONFIG=/var/lib/rancher/rke2/agent/etc/containerd/config.toml and "
        "CONTAINERD_SOCKET=/run/k3s/containerd/containerd.sock",
    }
    for runtime, fix in cases.items():
        o = check_resource(
            "toolkit-fits-runtime", validators.T_RELEASE, release(), {"clusterRuntime": runtime}
        )
        assert not o.passed and f"set toolkit.env {fix} (" in o.text, runtime
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "microk8s"})):
        env = [
            {
                "name": "CONTAINERD_CONFIG",
                "value": "/var/snap/microk8s/current/args/containerd-template.toml",
            },
            {"name": "CONTAINERD_SOCKET", "value": "/var/snap/microk8s/common/run/containerd.sock"},
        ]
        values = {"toolkit": {"enabled": True, "env": env}}
        assert check_resource("toolkit-fits-runtime", validators.T_RELEASE, release(values=values)).passed


def test_toolkit_on_minikube_docker_runtime_rejects_containerd_settings() -> None:
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "minikube"})):
        assert check_resource("toolkit-fits-runtime", validators.T_RELEASE, release()).passed
        values = {"toolkit": {"enabled": True, "env": K3S_ENV}}
        o = check_resource("toolkit-fits-runtime", validators.T_RELEASE, release(values=values))
        assert "gpu-lab:cluster=minikube" in o.text and "Docker" in o.text


def test_toolkit_runtime_unknown_is_not_evaluated_and_listed_by_the_report_policy() -> None:
    with stack_context_overridden(StackContext()):
        o = check_resource("toolkit-fits-runtime", validators.T_RELEASE, release())
    assert not o.violations and o.not_applicable and "runtime is unknown" in o.not_applicable
    lines = unverified_lines()
    assert len(lines) == 1 and lines[0].startswith("[toolkit-fits-runtime] not evaluated:")
