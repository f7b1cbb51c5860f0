"""The checklist policy pack (policy/): each policy passes and violates, called the way the
engine calls it (pulumi-policy's own argument classes, the pack's adapters), no engine."""

from __future__ import annotations

import json
import re
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE, UnknownValueError, unknown_checking_proxy

from gpulab import minikube_ctl
from gpulab import outputs as out
from policy import stack_context, validators
from policy.stack_context import StackContext

ROOT = Path(__file__).resolve().parents[2]
UNK = UNKNOWN_STRING_VALUE
STACK_URN = "urn:pulumi:sim::gpu-lab::pulumi:pulumi:Stack::gpu-lab-sim"
NVIDIA = "https://helm.ngc.nvidia.com/nvidia"
SMOKE_OK = "nvidia/cuda:12.4.1-base-ubuntu22.04"
SMOKE_131 = "nvidia/cuda:13.1.0-base-ubuntu24.04"


# --- harness ------------------------------------------------------------------------
def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


class Outcome:
    """What a validator did: violation messages, or not applicable with a reason."""

    def __init__(self) -> None:
        self.violations: list[tuple[str, str | None]] = []
        self.not_applicable: str | None = None

    def report(self, message: str, urn: str | None = None) -> None:
        self.violations.append((message, urn))

    @property
    def passed(self) -> bool:
        return not self.violations and self.not_applicable is None

    @property
    def text(self) -> str:
        return "\n".join(m for m, _ in self.violations)


def check_resource(
    name: str, rtype: str, props: dict[str, Any], config: dict[str, Any] | None = None
) -> Outcome:
    """Run resource policy ``name`` as the engine does (props behind the SDK's proxy)."""
    spec = validators.spec(name)
    args = ResourceValidationArgs(
        rtype, unknown_checking_proxy(props), f"urn:test::{name}", "r", _opts(), None, config
    )
    outcome = Outcome()
    try:
        validators.validate_resource(spec, args, outcome.report)
    except _NotApplicableError as exc:
        outcome.not_applicable = exc.reason or ""
    return outcome


def res(rtype: str, props: dict[str, Any], name: str = "r", urn: str | None = None) -> PolicyResource:
    return PolicyResource(
        rtype, unknown_checking_proxy(props), urn or f"urn:test::{name}", name, _opts(), None, None, [], {}
    )


def check_stack(name: str, resources: list[PolicyResource], config: dict[str, Any] | None = None) -> Outcome:
    spec = validators.spec(name)
    args = StackValidationArgs(resources, config)
    outcome = Outcome()
    try:
        validators.validate_stack(spec, args, outcome.report)
    except _NotApplicableError as exc:
        outcome.not_applicable = exc.reason or ""
    return outcome


def unverified_lines() -> list[str]:
    outcome = Outcome()
    validators.validate_unverified(StackValidationArgs([]), outcome.report)
    return [m for m, _ in outcome.violations]


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    """Each test starts with no recorded findings and an update (not a preview) whose
    stack config is the sim lab's, with no secrets."""
    validators.LEDGER.clear()
    with stack_context.overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "sim"})):
        yield
    validators.LEDGER.clear()


def release(**over: Any) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": "gpu-operator",
        "chart": "gpu-operator",
        "version": "v26.7.0",
        "namespace": "gpu-operator",
        "repositoryOpts": {"repo": NVIDIA},
        "values": {
            "driver": {"enabled": False},
            "toolkit": {"enabled": True},
            "devicePlugin": {"enabled": True},
        },
    }
    props.update(over)
    return props


def smoke_pod(image: str = SMOKE_OK, **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "cuda",
        "image": image,
        "command": ["nvidia-smi"],
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    body: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-smoke"}, "spec": body}


def ctl_start(cpus: int = 4, memory: int = 8192, gpus: str | None = "all") -> dict[str, Any]:
    """The minikube-start LocalCommand's inputs, as components/minikube.py builds them."""
    create = ["python3", "-m", "gpulab.minikube_ctl", "up", "--profile", "gpu-lab", "--cpus", str(cpus)]
    create += ["--memory-mib", str(memory), "--kubernetes-version", "v1.34.0"]
    if gpus:
        create += ["--gpus", gpus]
    return {"purpose": "minikube-start", "create": create, "delete": ["python3", "-m", "gpulab.minikube_ctl"]}


def addon(state: str) -> dict[str, Any]:
    create = ["python3", "-m", "gpulab.minikube_ctl", "addon", "--profile", "gpu-lab", "--state", state]
    return {"purpose": "minikube-addon", "create": create}


def good_outputs(**over: Any) -> dict[str, Any]:
    """Stack exports of a healthy GPU lab (not simulated)."""
    o: dict[str, Any] = {
        out.CLUSTER_KIND: "minikube",
        out.SIMULATED: False,
        out.SIMULATED_FIELDS: [],
        out.HOST_GPU_COUNT: 1,
        out.HOST_GPU_MODELS: ["NVIDIA H200"],
        out.HOST_DRIVER_VERSION: "580.159.04",
        out.HOST_MAX_CUDA: "13.0",
        out.HOST_PROBE_SOURCE: "nvidia-smi",
        out.ALLOCATABLE_GPUS: 1,
        out.CAPACITY_GPUS: 1,
        out.CLUSTER_POLICY_STATE: "ready",
        out.DEVICE_PLUGIN_PODS: [{"name": "p", "phase": "Running", "ready": True, "restarts": 0}],
        out.KUBERNETES_VERSION: "v1.34.0",
        out.SMOKE_PHASE: "Succeeded",
        out.SMOKE_DRIVER_VERSION: "580.159.04",
        out.SMOKE_CUDA_VERSION: "13.0",
        out.SMOKE_EVENTS: ["Scheduled", "Pulling", "Pulled", "Created", "Started"],
        out.SMOKE_IMAGE: SMOKE_OK,
    }
    o.update(over)
    return o


def stack(outputs: dict[str, Any]) -> PolicyResource:
    return res(validators.T_STACK, outputs, "gpu-lab-sim", STACK_URN)


def host_probe(
    source: str = "capture:h200-1gpu", driver: str | None = "580.159.04", max_cuda: str | None = "13.0"
):
    props: dict[str, Any] = {"source": source, "gpuCount": 1, "simulated": source.startswith("capture")}
    if driver:
        props["driverVersion"] = driver
    if max_cuda:
        props["maxCuda"] = max_cuda
    return res(validators.T_HOST_PROBE, props, "host")


# --- the pack as a whole ------------------------------------------------------------
def test_names_are_stable_kebab_case_unique_with_imperative_descriptions() -> None:
    policies = validators.build_policies()
    names = [p.name for p in policies]
    assert len(names) == len(set(names))
    for p in policies:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", p.name), p.name
        first = p.description.split()[0]
        # Imperative: "Pin", "Keep", "Run"..., not "Pins"/"Checks"/"The ...".
        assert first[0].isupper() and not first.endswith("s"), p.description
        assert p.description.endswith(".")


def test_one_stack_policy_per_checklist_item_and_the_report_policy_last() -> None:
    from gpulab import checklist

    policies = validators.build_policies()
    names = [p.name for p in policies]
    for item in checklist.ITEM_IDS:
        assert item in names
    last = policies[-1]
    assert last.name == validators.UNVERIFIED_POLICY
    assert last.enforcement_level == EnforcementLevel.ADVISORY
    assert all(p.enforcement_level == EnforcementLevel.MANDATORY for p in policies[:-1])


def test_readme_documents_every_policy_and_config_property() -> None:
    readme = (ROOT / "policy" / "README.md").read_text()
    for s in validators.SPECS:
        assert f"`{s.name}`" in readme, s.name
        for prop in s.properties:
            assert f"`{prop}`" in readme, (s.name, prop)
    assert f"`{validators.UNVERIFIED_POLICY}`" in readme


def test_config_defaults_are_the_expected_values_and_given_config_wins() -> None:
    s = validators.spec("minikube-start-resources")
    assert s.settings(None) == {"minCpus": 4, "minMemoryMiB": 8192}
    assert s.settings({"minCpus": 8, "enforcementLevel": "advisory"}) == {"minCpus": 8, "minMemoryMiB": 8192}


@pytest.fixture
def sdk_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo the ConfigureStack hook and what it recorded after the test."""
    from pulumi_policy import policy as sdk

    monkeypatch.setattr(
        sdk._PolicyAnalyzerServicer, "ConfigureStack", sdk._PolicyAnalyzerServicer.ConfigureStack
    )
    monkeypatch.setattr(stack_context, "_recorded", None)


def test_pack_main_only_assembles_the_pack(monkeypatch: pytest.MonkeyPatch, sdk_restored: None) -> None:
    import pulumi_policy

    made: dict[str, Any] = {}

    def fake_pack(**kwargs: Any) -> None:  # the real one serves gRPC forever
        made.update(kwargs)

    monkeypatch.setattr(pulumi_policy, "PolicyPack", fake_pack)
    runpy.run_path(str(ROOT / "policy" / "__main__.py"), run_name="__main__")
    assert made["name"] == validators.PACK_NAME
    assert [p.name for p in made["policies"]] == [p.name for p in validators.build_policies()]
    assert made["enforcement_level"] == EnforcementLevel.MANDATORY


def test_policy_yaml_runs_on_the_projects_interpreter() -> None:
    import yaml

    doc = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert doc["runtime"] == "python"  # a plain name: no runtime options, no virtualenv of its own
    assert doc["version"]


# --- reading props ------------------------------------------------------------------
def test_plain_turns_sdk_unknowns_into_UNKNOWN_without_raising() -> None:
    props = unknown_checking_proxy({"a": UNK, "b": {"c": [1, UNK]}, "d": "x"})
    p = validators.plain(props)
    assert p["a"] is validators.UNKNOWN and p["b"]["c"][1] is validators.UNKNOWN and p["d"] == "x"
    assert validators.has_unknown(p["b"]) and not validators.has_unknown(p["d"])


def test_minikube_argv_is_what_minikube_ctl_really_runs() -> None:
    argv = validators.minikube_start_argv(ctl_start()["create"])
    assert argv == minikube_ctl.start_argv(minikube_ctl.StartSpec("gpu-lab", 4, 8192, "v1.34.0", "all"))
    direct = ["minikube", "start", "-p", "x", "--driver=docker"]
    assert validators.minikube_start_argv(direct) == direct
    assert validators.minikube_start_argv(["echo", "hi"]) is None


@pytest.mark.parametrize(
    ("text", "mib"), [("8192mb", 8192), ("8g", 8192), ("8GiB", 8192), ("8192", 8192), ("4096m", 4096)]
)
def test_memory_units(text: str, mib: float) -> None:
    assert validators.memory_mib(text) == mib


def test_max_cuda_is_derived_from_the_driver_when_only_the_driver_is_known() -> None:
    assert validators.derive_max_cuda("580.159.04") == "13.0"
    assert validators.derive_max_cuda("550.54.14") == "12.4"
    assert validators.derive_max_cuda("470.1") is None


# --- stack context ------------------------------------------------------------------
def test_configure_stack_hook_records_dry_run_config_and_secret_keys(sdk_restored: None) -> None:
    assert stack_context.install_configure_stack_hook()
    assert stack_context.install_configure_stack_hook()  # idempotent
    from pulumi_policy import policy as sdk

    req = analyzer_pb2.AnalyzerStackConfigureRequest(
        stack="sim",
        dry_run=True,
        config={"gpu-lab:token": "hunter2-secret", "gpu-lab:cluster": "sim"},
        config_secret_keys=["gpu-lab:token"],
    )
    servicer = object.__new__(sdk._PolicyAnalyzerServicer)
    sdk._PolicyAnalyzerServicer.ConfigureStack(servicer, req, None)
    recorded = stack_context._recorded
    assert recorded is not None and recorded.dry_run is True
    assert recorded.secret_values() == {"gpu-lab:token": ["hunter2-secret"]}
    assert recorded.source == stack_context.SOURCE_ENGINE


def test_context_from_environment_and_structured_secrets() -> None:
    env = {
        "PULUMI_CONFIG": json.dumps({"gpu-lab:creds": json.dumps({"user": "u", "password": "pa55word!"})}),
        "PULUMI_CONFIG_SECRET_KEYS": json.dumps(["gpu-lab:creds"]),
        "PULUMI_DRY_RUN": "false",
    }
    ctx = stack_context.from_environment(env)
    assert ctx is not None and ctx.dry_run is False
    assert "pa55word!" in ctx.secret_values()["gpu-lab:creds"]
    assert stack_context.from_environment({}) is None


# --- gpu-operator-chart-pinned ------------------------------------------------------
def test_chart_pinned_passes_on_an_exact_version() -> None:
    assert check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, release()).passed


@pytest.mark.parametrize("version", [None, "", ">=26.0.0", "26.x", "^26.7.0"])
def test_chart_pinned_violates_on_a_range_or_no_version(version: str | None) -> None:
    o = check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, release(version=version))
    assert "[gpu-operator-chart-pinned] observed:" in o.text and "first fix:" in o.text


def test_chart_pinned_checks_the_configured_version_and_local_charts(tmp_path: Path) -> None:
    o = check_resource(
        "gpu-operator-chart-pinned", validators.T_RELEASE, release(), {"chartVersion": "v25.10.1"}
    )
    assert "v25.10.1" in o.text
    chart = tmp_path / "gpu-operator"
    chart.mkdir()
    (chart / "Chart.yaml").write_text("name: gpu-operator\nversion: v26.7.0\n")
    local = release(chart=str(chart), version=None, repositoryOpts=None)
    assert check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, local).passed
    o = check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, local, {"chartVersion": "v25.10.1"})
    assert "Chart.yaml version v26.7.0" in o.text


def test_release_policies_ignore_other_releases_and_resources() -> None:
    other = release(name="prometheus", chart="kube-prometheus-stack", version=None)
    assert check_resource("gpu-operator-chart-pinned", validators.T_RELEASE, other).passed
    assert check_resource("gpu-operator-namespace", validators.T_POD, smoke_pod()).passed


# --- gpu-operator-driver-disabled ---------------------------------------------------
def test_driver_disabled_passes_when_false() -> None:
    assert check_resource("gpu-operator-driver-disabled", validators.T_RELEASE, release()).passed


@pytest.mark.parametrize("values", [{}, {"driver": {"enabled": True}}, {"driver": {}}])
def test_driver_disabled_violates_when_unset_or_true(values: dict[str, Any]) -> None:
    o = check_resource("gpu-operator-driver-disabled", validators.T_RELEASE, release(values=values))
    assert "driver.enabled" in o.text and "driver.enabled=false" in o.text


# --- gpu-operator-namespace ---------------------------------------------------------
def test_namespace_passes_in_gpu_operator() -> None:
    assert check_resource("gpu-operator-namespace", validators.T_RELEASE, release()).passed


def test_namespace_violates_elsewhere_naming_both() -> None:
    o = check_resource("gpu-operator-namespace", validators.T_RELEASE, release(namespace="default"))
    assert "observed: namespace 'default'" in o.text and "expected: namespace 'gpu-operator'" in o.text
    o = check_resource("gpu-operator-namespace", validators.T_RELEASE, release(namespace=None))
    assert "provider's default namespace" in o.text


def test_namespace_unknown_at_preview_is_left_to_the_sdk_as_cannot_run_during_preview() -> None:
    with pytest.raises(UnknownValueError):
        check_resource("gpu-operator-namespace", validators.T_RELEASE, release(namespace=UNK))


# --- gpu-operator-chart-source ------------------------------------------------------
def test_chart_source_passes_for_nvidia_repo_and_local_path(tmp_path: Path) -> None:
    assert check_resource("gpu-operator-chart-source", validators.T_RELEASE, release()).passed
    local = release(chart=str(tmp_path / "gpu-operator"), version=None, repositoryOpts=None)
    (tmp_path / "gpu-operator").mkdir()
    assert check_resource("gpu-operator-chart-source", validators.T_RELEASE, local).passed


def test_chart_source_violates_for_other_repos_and_bare_aliases() -> None:
    o = check_resource(
        "gpu-operator-chart-source",
        validators.T_RELEASE,
        release(repositoryOpts={"repo": "https://evil.example"}),
    )
    assert "https://evil.example" in o.text and NVIDIA in o.text
    o = check_resource(
        "gpu-operator-chart-source",
        validators.T_RELEASE,
        release(chart="nvidia/gpu-operator", repositoryOpts=None),
    )
    assert "local repository aliases" in o.text


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


def test_toolkit_on_minikube_docker_runtime_rejects_containerd_settings() -> None:
    with stack_context.overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "minikube"})):
        assert check_resource("toolkit-fits-runtime", validators.T_RELEASE, release()).passed
        values = {"toolkit": {"enabled": True, "env": K3S_ENV}}
        o = check_resource("toolkit-fits-runtime", validators.T_RELEASE, release(values=values))
        assert "gpu-lab:cluster=minikube" in o.text and "Docker" in o.text


def test_toolkit_runtime_unknown_is_not_evaluated_and_listed_by_the_report_policy() -> None:
    with stack_context.overridden(StackContext()):
        o = check_resource("toolkit-fits-runtime", validators.T_RELEASE, release())
    assert not o.violations and o.not_applicable and "runtime is unknown" in o.not_applicable
    lines = unverified_lines()
    assert len(lines) == 1 and lines[0].startswith("[toolkit-fits-runtime] not evaluated:")


# --- smoke Pod ----------------------------------------------------------------------
def test_smoke_gpu_limit() -> None:
    assert check_resource("smoke-pod-gpu-limit", validators.T_POD, smoke_pod()).passed
    pod = smoke_pod()
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    o = check_resource("smoke-pod-gpu-limit", validators.T_POD, pod)
    assert "limits[nvidia.com/gpu]=unset" in o.text


def test_smoke_restart_never() -> None:
    assert check_resource("smoke-pod-restart-never", validators.T_POD, smoke_pod()).passed
    o = check_resource("smoke-pod-restart-never", validators.T_POD, smoke_pod(restartPolicy="Always"))
    assert "restartPolicy 'Always'" in o.text
    pod = smoke_pod()
    del pod["spec"]["restartPolicy"]
    assert (
        "Kubernetes default: Always" in check_resource("smoke-pod-restart-never", validators.T_POD, pod).text
    )


@pytest.mark.parametrize("image", [SMOKE_OK, "nvidia/cuda@sha256:" + "a" * 64, "reg:5000/cuda:12.4.1-base"])
def test_smoke_image_pinned_passes(image: str) -> None:
    assert check_resource("smoke-pod-image-pinned", validators.T_POD, smoke_pod(image)).passed


@pytest.mark.parametrize("image", ["nvidia/cuda", "nvidia/cuda:latest", "reg:5000/cuda"])
def test_smoke_image_pinned_violates(image: str) -> None:
    o = check_resource("smoke-pod-image-pinned", validators.T_POD, smoke_pod(image))
    assert repr(image) in o.text


def test_smoke_policies_only_look_at_the_smoke_pod() -> None:
    other = smoke_pod("busybox")
    other["metadata"]["name"] = "other"
    assert check_resource("smoke-pod-image-pinned", validators.T_POD, other).passed


# --- minikube start -----------------------------------------------------------------
def test_minikube_gpu_flags_pass_for_the_labs_command() -> None:
    assert check_resource("minikube-start-gpu", validators.T_DYNAMIC, ctl_start()).passed


def test_minikube_gpu_flags_violate_without_docker_or_gpus() -> None:
    direct = {"purpose": "minikube-start", "create": ["minikube", "start", "--driver=kvm2", "--cpus=4"]}
    o = check_resource("minikube-start-gpu", validators.T_DYNAMIC, direct)
    assert "--gpus=<absent>" in o.text and "--driver=kvm2" in o.text and "nvidia-ctk" in o.text


def test_minikube_resources() -> None:
    assert check_resource("minikube-start-resources", validators.T_DYNAMIC, ctl_start()).passed
    o = check_resource("minikube-start-resources", validators.T_DYNAMIC, ctl_start(cpus=2))
    assert "--cpus=2" in o.text and ">= 4" in o.text
    o = check_resource("minikube-start-resources", validators.T_DYNAMIC, ctl_start(memory=4096))
    assert "--memory=4096mb" in o.text
    direct = {"purpose": "minikube-start", "create": ["minikube", "start", "--cpus=4", "--memory=8g"]}
    assert check_resource("minikube-start-resources", validators.T_DYNAMIC, direct).passed
    o = check_resource("minikube-start-resources", validators.T_DYNAMIC, ctl_start(), {"minCpus": 8})
    assert "expected: --cpus >= 8" in o.text and "pulumi config set cpus 8" in o.text


def test_minikube_command_that_cannot_be_read_is_not_evaluated() -> None:
    odd = {"purpose": "minikube-start", "create": ["bash", "-c", "start-it"]}
    o = check_resource("minikube-start-gpu", validators.T_DYNAMIC, odd)
    assert not o.violations and o.not_applicable and "cannot read minikube start flags" in o.not_applicable


def test_minikube_policies_ignore_other_commands() -> None:
    assert check_resource("minikube-start-gpu", validators.T_DYNAMIC, addon("disabled")).passed


# --- no-plaintext-secrets -----------------------------------------------------------
SECRET_CTX = StackContext(
    dry_run=False,
    config={"gpu-lab:ngcKey": "nvapi-0123456789", "gpu-lab:cluster": "minikube"},
    secret_keys=frozenset({"gpu-lab:ngcKey"}),
)


def test_secrets_in_environment_only_pass() -> None:
    cmd = ctl_start() | {"environment": {"NGC_KEY": "nvapi-0123456789"}}
    with stack_context.overridden(SECRET_CTX):
        assert check_resource("no-plaintext-secrets", validators.T_DYNAMIC, cmd).passed
        assert check_resource("no-plaintext-secrets", validators.T_RELEASE, release()).passed


def test_secret_in_argv_or_helm_value_violates_naming_the_key_not_the_value() -> None:
    cmd = ctl_start()
    cmd["create"] = [*cmd["create"], "--key=nvapi-0123456789"]
    values = release()["values"] | {"operator": {"env": [{"name": "K", "value": "nvapi-0123456789"}]}}
    pod = smoke_pod()
    pod["spec"]["containers"][0]["env"] = [{"name": "K", "value": "nvapi-0123456789"}]
    with stack_context.overridden(SECRET_CTX):
        outcomes = [
            check_resource("no-plaintext-secrets", validators.T_DYNAMIC, cmd),
            check_resource("no-plaintext-secrets", validators.T_RELEASE, release(values=values)),
            check_resource("no-plaintext-secrets", validators.T_POD, pod),
        ]
    for o in outcomes:
        assert "secret config gpu-lab:ngcKey in " in o.text
        assert "nvapi-0123456789" not in o.text
    assert "create[14]" in outcomes[0].text and "values.operator.env[0].value" in outcomes[1].text


def test_secrets_without_stack_config_are_not_evaluated() -> None:
    with stack_context.overridden(StackContext()):
        o = check_resource("no-plaintext-secrets", validators.T_DYNAMIC, ctl_start())
    assert not o.violations and o.not_applicable and "no stack config" in o.not_applicable


# --- single-device-plugin-owner -----------------------------------------------------
def test_one_owner_passes_operator_with_addon_disabled_and_the_sim_lab() -> None:
    minikube = [
        res(validators.T_DYNAMIC, ctl_start(), "minikube-cluster"),
        res(validators.T_DYNAMIC, addon("disabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, release(), "gpu-operator-release"),
    ]
    assert check_stack("single-device-plugin-owner", minikube).passed
    sim = [res(validators.T_RELEASE, release(), "gpu-operator-release"), stack({})]
    assert check_stack("single-device-plugin-owner", sim).passed


def test_two_owners_violate() -> None:
    both = [
        res(validators.T_DYNAMIC, ctl_start(), "minikube-cluster"),
        res(validators.T_DYNAMIC, addon("enabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, release(), "gpu-operator-release"),
        stack({}),
    ]
    o = check_stack("single-device-plugin-owner", both)
    assert "owners: minikube-addon, operator" in o.text and o.violations[0][1] == STACK_URN


def test_gpus_flag_without_an_addon_command_means_minikubes_plugin_is_on() -> None:
    implicit = [
        res(validators.T_DYNAMIC, ctl_start(), "minikube-cluster"),
        res(validators.T_RELEASE, release()),
    ]
    assert "minikube start --gpus=all" in check_stack("single-device-plugin-owner", implicit).text


def test_no_owner_violates() -> None:
    values = release()["values"] | {"devicePlugin": {"enabled": False}}
    none = [
        res(validators.T_DYNAMIC, addon("disabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, release(values=values)),
    ]
    assert "owners: none" in check_stack("single-device-plugin-owner", none).text


def test_owner_at_preview_reads_the_operator_component_when_the_release_state_is_empty() -> None:
    preview = [
        res(validators.T_DYNAMIC, addon("disabled"), "minikube-device-plugin-addon"),
        res(validators.T_RELEASE, {}, "gpu-operator-release"),
        res(validators.T_GPU_OPERATOR, {"components": {"devicePlugin": True}, "allocatableGpus": UNK}),
    ]
    assert check_stack("single-device-plugin-owner", preview).passed
    preview[1:] = [res(validators.T_RELEASE, {}, "gpu-operator-release")]
    o = check_stack("single-device-plugin-owner", preview)
    assert not o.violations and o.not_applicable and "known after deployment" in o.not_applicable


# --- smoke-image-cuda-fits-host -----------------------------------------------------
def smoke_component(image: str) -> PolicyResource:
    return res(validators.T_SMOKE, {"image": image, "phase": UNK}, "smoke")


def test_cuda_fits_passes_when_the_image_is_not_newer() -> None:
    assert check_stack("smoke-image-cuda-fits-host", [host_probe(), smoke_component(SMOKE_OK)]).passed


def test_cuda_131_on_a_130_host_violates_naming_image_cuda_driver_max_and_newest_tag() -> None:
    o = check_stack(
        "smoke-image-cuda-fits-host",
        [host_probe(), smoke_component(SMOKE_131), res(validators.T_POD, {}, "smoke-pod"), stack({})],
    )
    assert len(o.violations) == 1
    text = o.text
    assert "needs CUDA 13.1" in text and "driver 580.159.04" in text and "CUDA 13.0 at most" in text
    assert "nvidia/cuda:13.0.2-base-ubuntu24.04" in text and "first fix:" in text
    assert o.violations[0][1] == "urn:test::smoke"


def test_cuda_reads_the_pods_spec_when_known() -> None:
    o = check_stack("smoke-image-cuda-fits-host", [host_probe(), res(validators.T_POD, smoke_pod(SMOKE_131))])
    assert "needs CUDA 13.1" in o.text


def test_cuda_with_the_probe_off_is_not_evaluated_unless_pack_config_gives_the_facts() -> None:
    resources = [host_probe(source="off", driver=None, max_cuda=None), smoke_component(SMOKE_131)]
    o = check_stack("smoke-image-cuda-fits-host", resources)
    assert not o.violations and o.not_applicable and "host probe is off" in o.not_applicable
    o = check_stack(
        "smoke-image-cuda-fits-host", resources, {"hostMaxCuda": "13.0", "hostDriverVersion": "580.1"}
    )
    assert "needs CUDA 13.1" in o.text and "from pack config" in o.text
    o = check_stack("smoke-image-cuda-fits-host", resources, {"hostDriverVersion": "550.54.14"})
    assert "CUDA 12.4 at most" in o.text and "derived from driver" in o.text


def test_cuda_of_a_non_cuda_image_is_not_evaluated() -> None:
    o = check_stack("smoke-image-cuda-fits-host", [host_probe(), smoke_component("pytorch/pytorch:2.5.0")])
    assert not o.violations and o.not_applicable and "no CUDA X.Y" in o.not_applicable


# --- the five checklist items -------------------------------------------------------
ITEMS = (
    "device-plugin-stable",
    "allocatable-matches-gpus",
    "driver-version-matches",
    "events-scheduled-and-pulled",
    "baseline-card-complete",
)
VIOLATING = {
    "device-plugin-stable": {
        out.DEVICE_PLUGIN_PODS: [{"name": "p", "phase": "Running", "ready": True, "restarts": 3}]
    },
    "allocatable-matches-gpus": {out.ALLOCATABLE_GPUS: 2},
    "driver-version-matches": {out.SMOKE_DRIVER_VERSION: "570.26"},
    "events-scheduled-and-pulled": {out.SMOKE_EVENTS: ["Scheduled", "Started"]},
    "baseline-card-complete": {out.HOST_GPU_MODELS: []},
}


@pytest.mark.parametrize("item", ITEMS)
def test_checklist_item_passes_on_a_healthy_lab(item: str) -> None:
    assert check_stack(item, [stack(good_outputs())]).passed


@pytest.mark.parametrize("item", ITEMS)
def test_checklist_item_violates_with_observed_expected_and_fix(item: str) -> None:
    o = check_stack(item, [stack(good_outputs(**VIOLATING[item]))])
    assert len(o.violations) == 1, o.text
    message, urn = o.violations[0]
    assert (
        message.startswith(f"[{item}] observed: ")
        and "; expected: " in message
        and "; first fix: " in message
    )
    assert urn == STACK_URN


def test_allocatable_missing_key_and_zero_read_differently() -> None:
    missing = check_stack("allocatable-matches-gpus", [stack(good_outputs(**{out.ALLOCATABLE_GPUS: None}))])
    zero = check_stack("allocatable-matches-gpus", [stack(good_outputs(**{out.ALLOCATABLE_GPUS: 0}))])
    assert "device plugin not registered" in missing.text
    assert "devices unhealthy, e.g. XID errors" in zero.text


def test_allocatable_uses_time_slicing_replicas_from_pack_or_stack_config() -> None:
    four = [stack(good_outputs(**{out.ALLOCATABLE_GPUS: 4}))]
    assert check_stack("allocatable-matches-gpus", four, {"timeSlicingReplicas": 4}).passed
    ctx = StackContext(dry_run=False, config={"gpu-lab:timeSlicingReplicas": "4"})
    with stack_context.overridden(ctx):
        assert check_stack("allocatable-matches-gpus", four).passed
    assert check_stack("allocatable-matches-gpus", four, {"expectedGpus": 4}).passed


@pytest.mark.parametrize("item", ITEMS)
def test_at_preview_every_item_is_not_evaluated_never_passed_nor_violated(item: str) -> None:
    computed = {
        out.DEVICE_PLUGIN_PODS: UNK,
        out.ALLOCATABLE_GPUS: UNK,
        out.CAPACITY_GPUS: UNK,
        out.SMOKE_DRIVER_VERSION: UNK,
        out.SMOKE_EVENTS: UNK,
        out.SMOKE_PHASE: UNK,
    }
    o = check_stack(item, [stack(good_outputs(**computed))])
    assert not o.violations and o.not_applicable is not None
    assert "not evaluated: known after deployment" in o.not_applicable


@pytest.mark.parametrize("item", ITEMS)
def test_a_preview_of_a_deployed_stack_still_reads_not_evaluated(item: str) -> None:
    with stack_context.overridden(StackContext(dry_run=True, config={})):
        o = check_stack(item, [stack(good_outputs())])
    assert not o.violations and o.not_applicable and "known after deployment (preview)" in o.not_applicable


def test_image_pulls_in_the_simulated_lab_are_not_observable_not_passed() -> None:
    sim = good_outputs(**{out.SIMULATED: True, out.SMOKE_EVENTS: ["Scheduled"]})
    o = check_stack("events-scheduled-and-pulled", [stack(sim)])
    assert not o.violations and o.not_applicable and "not observable in the simulated lab" in o.not_applicable


# --- checklist-unverified -----------------------------------------------------------
def test_report_policy_lists_unverified_items_in_pack_order_and_nothing_when_all_pass() -> None:
    for item in ITEMS:
        check_stack(item, [stack(good_outputs())])
    assert unverified_lines() == []
    preview = good_outputs(**{out.DEVICE_PLUGIN_PODS: UNK, out.SMOKE_EVENTS: UNK, out.SIMULATED: True})
    for item in ITEMS:
        check_stack(item, [stack(preview)])
    lines = unverified_lines()
    assert [line.split("]")[0] + "]" for line in lines] == [
        "[device-plugin-stable]",
        "[events-scheduled-and-pulled]",
    ]
    assert all("not evaluated: known after deployment" in line for line in lines)


def test_report_policy_shows_not_observable_items_after_a_sim_up() -> None:
    sim = good_outputs(**{out.SIMULATED: True, out.SMOKE_EVENTS: ["Scheduled"]})
    for item in ITEMS:
        check_stack(item, [stack(sim)])
    lines = unverified_lines()
    assert len(lines) == 1
    assert lines[0].startswith("[events-scheduled-and-pulled] not observable in the simulated lab:")
