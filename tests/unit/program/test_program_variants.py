"""The kind, k3s and existing variants of the program under Pulumi mocks: what each creates,
with which commands and values, and which config errors stop it before any resource."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.rpc import _special_secret_sig as SECRET_VALUE
from pulumi.runtime.rpc import _special_sig_key as SECRET_SIG

import variants.base
import variants.k3s.ctl
import variants.kind.ctl
import variants.minikube.host
from gpulab.config.lab import ConfigError
from gpulab.core import outputs as out
from gpulab.core.outputs import LabOutputs
from gpulab.host.preflight import Finding, PreflightError
from gpulab.verdict import checklist
from policy import stack_context, validators
from policy.stack_context import StackContext
from tests.support.stack_context import overridden as stack_context_overridden
from tests.unit import program_harness
from tests.unit.program_harness import COMMAND, run_program
from variants.existing import ctl as existing_ctl
from variants.kind.settings import DEFAULT_NODE_IMAGE

#: The real minikube host checks (the no_host_tools fixture replaces them per test).
REAL_MINIKUBE_HOST_FINDINGS = variants.minikube.host.minikube_host_findings

PREEXISTING = ["clusterpolicies.nvidia.com"]


def _fake_stdout(purpose: str, gpus: int = 1) -> str:
    """The harness's fakes, plus what the new variants' helper commands print."""
    if purpose in ("kind-cluster", "k3s-install"):
        return json.dumps(
            {
                "kubeconfig": program_harness.KUBECONFIG,
                "kubernetesVersion": "v1.34.0",
                "nodes": ["lab-worker"],
                "installed": True,
            }
        )
    if purpose == "existing-census":
        return json.dumps(
            {
                "kubernetesVersion": "v1.36.3",
                "nodes": 2,
                "gpuNodes": [{"name": "n1", "allocatable": 1, "capacity": 1}],
                "preexistingCrds": PREEXISTING,
            }
        )
    if purpose == "existing-crd-cleanup":
        return json.dumps({"remove": [], "keep": PREEXISTING})
    return ORIGINAL_FAKE_STDOUT(purpose, gpus)


ORIGINAL_FAKE_STDOUT = program_harness.fake_stdout


@pytest.fixture(autouse=True)
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """No host here has kind, k3s or a GPU: host checks are tested on recorded output elsewhere."""
    monkeypatch.setattr(program_harness, "fake_stdout", _fake_stdout)
    monkeypatch.setattr(variants.base, "missing_tools", lambda spec, *_: [])
    monkeypatch.setattr(variants.minikube.host, "minikube_host_findings", lambda cfg: [])
    monkeypatch.setattr(variants.kind.ctl, "host_findings", lambda: [])
    monkeypatch.setattr(variants.k3s.ctl, "host_findings", lambda version: [])
    monkeypatch.delenv("GPULAB_CHART_PATH", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)


@pytest.fixture
def chart(tmp_path: Path) -> str:
    d = tmp_path / "chart"
    (d / "crds").mkdir(parents=True)
    (d / "Chart.yaml").write_text("name: gpu-operator\nversion: v26.7.0\n")
    for name in ("clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"):
        (d / "crds" / f"{name}.yaml").write_text(
            yaml.safe_dump({"kind": "CustomResourceDefinition", "metadata": {"name": name}})
        )
    return str(d)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    """Two clusters, two contexts; the GPU one reads its CA from a file beside the config."""
    (tmp_path / "ca.crt").write_bytes(b"CA-BYTES")
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "laptop",
        "clusters": [
            {
                "name": "gpu",
                "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority": "ca.crt"},
            },
            {"name": "laptop", "cluster": {"server": "https://127.0.0.1:6443"}},
        ],
        "users": [
            {"name": "gpu-admin", "user": {"token": "gpu-token"}},
            {"name": "me", "user": {"token": "laptop-token"}},
        ],
        "contexts": [
            {"name": "gpu-cluster", "context": {"cluster": "gpu", "user": "gpu-admin"}},
            {"name": "laptop", "context": {"cluster": "laptop", "user": "me"}},
        ],
    }
    path = tmp_path / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def argv(run: Any, name: str, key: str = "create") -> list[str]:
    return run.by_name(name).argv(key)


def existing(kubeconfig: Path, chart: str, **extra: Any) -> dict[str, Any]:
    return {
        "cluster": "existing",
        "kubeconfigPath": str(kubeconfig),
        "kubeContext": "gpu-cluster",
        "expectedGpus": 2,
        "chartPath": chart,
        **extra,
    }


KIND = {"cluster": "kind", "toolkit": "false", "hostProbe": "capture"}
K3S = {"cluster": "k3s", "hostProbe": "capture"}


# --------------------------------------------------------------------------- kind


def test_kind_lab_creates_its_cluster_scoped_by_name_and_replaced_delete_first() -> None:
    run = run_program({**KIND, "profile": "lab"})
    assert run.error is None, run.error
    for name in ("kind", "kind-cluster", "k8s", "gpu-operator-release", "gpu-operator-gate", "smoke-pod"):
        assert name in run.names(), name
    cl = run.by_name("kind-cluster")
    assert cl.typ == COMMAND and cl.parent == run.urn_of("kind")
    assert argv(run, "kind-cluster")[:4] == ["python", "-m", "variants.kind.ctl", "up"]
    create = argv(run, "kind-cluster")
    assert create[create.index("--name") + 1] == "lab"
    assert create[create.index("--image") + 1] == DEFAULT_NODE_IMAGE
    assert create[create.index("--workdir") + 1] == ".state/kind/lab"
    assert argv(run, "kind-cluster", "delete") == [
        "python",
        "-m",
        "variants.kind.ctl",
        "down",
        "--name",
        "lab",
        "--workdir",
        ".state/kind/lab",
    ]
    assert cl.delete_before_replace is True
    assert "stdout" in cl.secret_outputs
    assert run.outputs[out.CLUSTER_KIND] == "kind"
    assert run.outputs[out.KUBERNETES_VERSION] == "v1.36.3"  # from the gate's fake


def test_kind_operator_values_keep_the_toolkit_off_and_the_smoke_pod_asks_for_nvidia() -> None:
    run = run_program(KIND)
    values = run.by_name("gpu-operator-release").inputs["values"]
    assert values["toolkit"] == {"enabled": False}
    assert values["driver"] == {"enabled": False}
    assert run.outputs[out.OPERATOR_COMPONENTS]["toolkit"] is False
    spec = run.by_name("smoke-pod").inputs["spec"]
    assert spec["runtimeClassName"] == "nvidia"
    # No simulated stand-ins on a real cluster.
    assert "gpu-operator-sim-device-plugin" not in run.names()
    assert "--simulate-clusterpolicy" not in run.by_name("gpu-operator-gate").inputs["create"]
    assert run.outputs[out.SIMULATED] is False


def test_kind_release_passes_the_toolkit_policy() -> None:
    rel = run_program(KIND).by_name("gpu-operator-release").inputs
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "kind"})):
        (finding,) = validators.check_toolkit_runtime(validators.T_RELEASE, rel, {}, stack_context.current())
    assert finding.status == validators.PASS, finding


def test_kind_preflight_failure_stops_before_the_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = Finding("docker-default-runtime", False, "Docker's default runtime is 'runc'", "nvidia-ctk ...")
    monkeypatch.setattr(variants.kind.ctl, "host_findings", lambda: [bad])
    run = run_program(KIND)
    assert isinstance(run.error, PreflightError)
    assert "default runtime" in str(run.error)
    assert [r.name for r in run.registrations] in ([], ["host"])


# --------------------------------------------------------------------------- k3s


def test_k3s_lab_installs_and_uninstalls_through_commands() -> None:
    run = run_program({**K3S, "k3sVersion": "v1.33.5+k3s1"})
    assert run.error is None, run.error
    cl = run.by_name("k3s-cluster")
    assert argv(run, "k3s-cluster") == [
        "python",
        "-m",
        "variants.k3s.ctl",
        "up",
        "--version",
        "v1.33.5+k3s1",
        "--timeout",
        "600",
    ]
    assert argv(run, "k3s-cluster", "delete") == ["python", "-m", "variants.k3s.ctl", "down"]
    assert cl.delete_before_replace is True and "stdout" in cl.secret_outputs
    assert run.outputs[out.CLUSTER_KIND] == "k3s"


def test_k3s_toolkit_points_at_k3s_containerd_and_the_smoke_pod_uses_the_nvidia_class() -> None:
    run = run_program(K3S)
    values = run.by_name("gpu-operator-release").inputs["values"]
    assert values["toolkit"]["enabled"] is True
    env = {e["name"]: e["value"] for e in values["toolkit"]["env"]}
    assert env == {
        "CONTAINERD_CONFIG": "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        "CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock",
        "CONTAINERD_RUNTIME_CLASS": "nvidia",
    }
    assert "nriPluginEnabled" not in values["cdi"]
    assert run.by_name("smoke-pod").inputs["spec"]["runtimeClassName"] == "nvidia"
    rel = run.by_name("gpu-operator-release").inputs
    with stack_context_overridden(StackContext(dry_run=False, config={"gpu-lab:cluster": "k3s"})):
        (finding,) = validators.check_toolkit_runtime(validators.T_RELEASE, rel, {}, stack_context.current())
    assert finding.status == validators.PASS, finding


def test_k3s_with_the_nri_plugin_needs_no_runtime_class() -> None:
    run = run_program({**K3S, "k3sNriPlugin": "true"})
    assert run.error is None, run.error
    values = run.by_name("gpu-operator-release").inputs["values"]
    assert values["cdi"] == {"enabled": True, "nriPluginEnabled": True}
    assert "runtimeClassName" not in run.by_name("smoke-pod").inputs["spec"]


def test_smoke_pod_of_the_other_variants_has_no_runtime_class() -> None:
    run = run_program({"cluster": "minikube", "hostProbe": "capture"})
    assert "runtimeClassName" not in run.by_name("smoke-pod").inputs["spec"]


# --------------------------------------------------------------------------- existing


def test_existing_cluster_has_no_lifecycle_only_operator_smoke_and_checks(
    kubeconfig: Path, chart: str
) -> None:
    run = run_program(existing(kubeconfig, chart))
    assert run.error is None, run.error
    commands = {r.name: r.step for r in run.registrations if r.typ == COMMAND}
    assert commands == {
        "existing-census": "existing-census",
        # Which cluster: recorded, and compared when the kubeconfig changes (gpulab.kube.identity);
        # then, in the same process, the chart's CRDs compared with what the cluster has,
        # before the release (no --apply: the lab does not own this cluster).
        "cluster-identity": "cluster-identity",
        "gpu-operator-gate": "operator-gate",
        "smoke-check": "smoke-check",
        "compute-check": "compute-check",
        # The DCGM exporter's metrics, read through the API server (the cluster's GPUs are real).
        "dcgm-scrape": "dcgm-scrape",
    }
    identity = argv(run, "cluster-identity")
    assert identity[identity.index("--then") + 1] == "gpulab.kube.crd_check" and "--apply" not in identity
    census = run.by_name("existing-census")
    assert not census.inputs.get("delete"), "reading a cluster must not delete anything"
    assert argv(run, "existing-census") == [
        "python",
        "-m",
        "variants.existing.ctl",
        "census",
        "--kubeconfig-path",
        str(kubeconfig),
        "--context",
        "gpu-cluster",
        "--crd=clusterpolicies.nvidia.com",
        "--crd=nvidiadrivers.nvidia.com",
    ]
    # The chart goes in after the census looked (it must not see the chart's own CRDs).
    assert run.urn_of("existing-census") in run.by_name("gpu-operator-release").dependencies
    assert run.outputs[out.CLUSTER_KIND] == "existing"


def test_existing_kubeconfig_is_the_chosen_context_flattened_and_secret(kubeconfig: Path, chart: str) -> None:
    before = kubeconfig.read_text()
    run = run_program(existing(kubeconfig, chart))
    assert kubeconfig.read_text() == before, "the user's kubeconfig must never be written"
    k8s = run.by_name("k8s").inputs["kubeconfig"]
    assert k8s.get(SECRET_SIG) == SECRET_VALUE
    doc = yaml.safe_load(k8s["value"])
    assert doc["current-context"] == "gpu-cluster"
    assert [c["name"] for c in doc["contexts"]] == ["gpu-cluster"]
    (cluster,) = doc["clusters"]
    assert cluster["cluster"]["certificate-authority-data"] == "Q0EtQllURVM="  # base64 of CA-BYTES
    assert "certificate-authority" not in cluster["cluster"]
    assert [u["name"] for u in doc["users"]] == ["gpu-admin"]
    # The token travels in the secret environment only, never in a command line.
    for r in run.registrations:
        if r.typ == COMMAND:
            for key in ("create", "delete"):
                assert "gpu-token" not in (r.inputs.get(key) or ""), r.name


def test_existing_compares_allocatable_with_expected_gpus(kubeconfig: Path, chart: str) -> None:
    run = run_program(existing(kubeconfig, chart, expectedGpus=1, timeSlicingReplicas=1))
    gate = argv(run, "gpu-operator-gate")
    assert gate[gate.index("--expected-gpus") + 1] == "1"
    o = run.outputs
    assert o[out.HOST_GPU_COUNT] == 1
    assert o[out.HOST_PROBE_SOURCE] == "config:expectedGpus"
    assert o[out.HOST_DRIVER_VERSION] is None  # hostProbe defaults to off: the cluster is not this host
    items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(o))}
    assert items["allocatable-matches-gpus"].status == checklist.PASS  # the gate's fake saw 1

    run = run_program(existing(kubeconfig, chart, expectedGpus=2))
    items = {i.id: i for i in checklist.evaluate(LabOutputs.from_json(run.outputs))}
    assert items["allocatable-matches-gpus"].status == checklist.FAIL
    assert "allocatable == 2" in items["allocatable-matches-gpus"].expected


def test_existing_lists_every_chart_crd_as_left_over(kubeconfig: Path, chart: str) -> None:
    run = run_program(existing(kubeconfig, chart))
    assert run.outputs["leftovers"] == [
        "customresourcedefinition/clusterpolicies.nvidia.com",
        "customresourcedefinition/nvidiadrivers.nvidia.com",
    ]
    assert "existing-crd-cleanup" not in run.names()


def test_existing_remove_crds_deletes_after_the_release_and_keeps_what_was_there(
    kubeconfig: Path, chart: str
) -> None:
    run = run_program(existing(kubeconfig, chart, removeCrds="true"))
    assert run.error is None, run.error
    cleanup = run.by_name("existing-crd-cleanup")
    delete = argv(run, "existing-crd-cleanup", "delete")
    assert delete[:4] == ["python", "-m", "variants.existing.ctl", "remove-crds"]
    assert "--crd=nvidiadrivers.nvidia.com" in delete
    assert "--keep=clusterpolicies.nvidia.com" in delete  # the census found it before the lab
    assert argv(run, "existing-crd-cleanup")[3] == "crd-plan"  # create touches nothing
    # The release depends on the clean-up, so destroy uninstalls the release first.
    assert cleanup.urn in run.by_name("gpu-operator-release").dependencies
    assert run.outputs["leftovers"] == ["customresourcedefinition/clusterpolicies.nvidia.com"]


def test_existing_with_simulated_operands_adds_the_annotated_stand_ins(kubeconfig: Path, chart: str) -> None:
    run = run_program(existing(kubeconfig, chart, simulatedOperands="true"))
    assert run.error is None, run.error
    ds = run.by_name("gpu-operator-sim-device-plugin").inputs
    assert ds["metadata"]["annotations"]["gpulab.dev/simulated"] == "true"
    assert "--simulate-clusterpolicy" in run.by_name("gpu-operator-gate").inputs["create"]
    pod = run.by_name("smoke-pod").inputs
    assert pod["metadata"]["annotations"]["gpulab.dev/simulated-execution"] == "true"
    assert run.outputs[out.SIMULATED] is True
    assert out.ALLOCATABLE_GPUS in run.outputs[out.SIMULATED_FIELDS]
    assert out.HOST_GPU_COUNT not in run.outputs[out.SIMULATED_FIELDS]


def test_existing_without_simulated_operands_is_not_simulated(kubeconfig: Path, chart: str) -> None:
    run = run_program(existing(kubeconfig, chart))
    assert run.outputs[out.SIMULATED] is False and run.outputs[out.SIMULATED_FIELDS] == []
    assert "gpu-operator-sim-device-plugin" not in run.names()


def test_existing_preview_knows_the_leftovers_but_not_the_gate(kubeconfig: Path, chart: str) -> None:
    run = run_program(existing(kubeconfig, chart), preview=True)
    assert run.error is None, run.error
    assert len(run.outputs["leftovers"]) == 2
    assert out.ALLOCATABLE_GPUS in run.exported and out.ALLOCATABLE_GPUS not in run.outputs


def test_existing_context_defaults_to_the_files_current_context(kubeconfig: Path, chart: str) -> None:
    cfg = existing(kubeconfig, chart)
    del cfg["kubeContext"]
    run = run_program(cfg)
    census = argv(run, "existing-census")
    assert census[census.index("--context") + 1] == "laptop"


def test_existing_kubeconfig_defaults_to_the_first_file_of_kubeconfig_env(
    kubeconfig: Path, chart: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", f"{kubeconfig}:/elsewhere/config")
    cfg = existing(kubeconfig, chart)
    del cfg["kubeconfigPath"]
    census = argv(run_program(cfg), "existing-census")
    assert census[census.index("--kubeconfig-path") + 1] == str(kubeconfig)


def test_existing_crds_default_to_the_pinned_charts_list(kubeconfig: Path) -> None:
    cfg = existing(kubeconfig, "")
    del cfg["chartPath"]
    run = run_program({**cfg, "nfd": "false"})
    assert run.outputs["leftovers"] == [existing_ctl.resource_of(c) for c in existing_ctl.OPERATOR_CRDS]


# --------------------------------------------------------------------------- config errors


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (
            {**KIND, "kindNodeImage": "kindest/node:v1.34.0"},
            "kindNodeImage='kindest/node:v1.34.0' is not pinned",
        ),
        (
            {**KIND, "kindNodeImage": "kindest/node:v1.34.0; rm -rf /"},
            "kindNodeImage='kindest/node:v1.34.0; rm",
        ),
        ({**KIND, "toolkit": "true"}, "toolkit=true with cluster=kind"),
        ({**K3S, "k3sVersion": "v1.34.1"}, "k3sVersion='v1.34.1' must be a k3s release"),
        ({**K3S, "k3sVersion": "v1.34.1+k3s1 --x"}, "k3sVersion='v1.34.1+k3s1 --x'"),
        ({**K3S, "k3sNriPlugin": "true", "chartVersion": "v25.10.1"}, "needs chartVersion >= v26.3.0"),
        ({**K3S, "k3sNriPlugin": "true", "cdi": "false"}, "k3sNriPlugin=true needs cdi=true"),
        ({**K3S, "k3sNriPlugin": "true", "toolkit": "false"}, "k3sNriPlugin=true needs toolkit=true"),
        ({**KIND, "k3sNriPlugin": "true"}, "k3sNriPlugin=true applies to cluster=k3s only"),
        (
            {"cluster": "minikube", "simulatedOperands": "true"},
            "simulatedOperands=true applies to cluster=existing",
        ),
        ({"cluster": "sim", "removeCrds": "true"}, "removeCrds=true applies to cluster=existing"),
        ({"cluster": "minikube", "expectedGpus": -1}, "expectedGpus=-1 must be >= 0"),
        ({"cluster": "minikube", "removeCrds": "maybe"}, "removeCrds='maybe' is not a valid bool"),
    ],
)
def test_each_variant_config_error_stops_before_any_resource(config: dict[str, Any], needle: str) -> None:
    run = run_program(config)
    assert isinstance(run.error, ConfigError), run.error
    assert needle in str(run.error), str(run.error)
    assert run.registrations == []


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"expectedGpus": 0}, "expectedGpus=0: cluster=existing needs the number of physical GPUs"),
        ({"kubeContext": "nope"}, "kubeContext='nope'"),
        ({"kubeContext": "a b"}, "kubeContext='a b' is not a context name"),
        ({"kubeconfigPath": "/no/such/kubeconfig"}, "kubeconfigPath='/no/such/kubeconfig'"),
        ({"kubeconfigPath": "/tmp/x; rm -rf ~"}, "is not a plain path"),
    ],
)
def test_each_existing_config_error_stops_before_any_resource(
    kubeconfig: Path, chart: str, change: dict[str, Any], needle: str
) -> None:
    run = run_program({**existing(kubeconfig, chart), **change})
    assert isinstance(run.error, ConfigError), run.error
    assert needle in str(run.error), str(run.error)
    assert run.registrations == []


def test_unknown_context_error_lists_the_allowed_contexts(kubeconfig: Path, chart: str) -> None:
    run = run_program({**existing(kubeconfig, chart), "kubeContext": "nope"})
    assert "allowed: gpu-cluster, laptop" in str(run.error)


# --------------------------------------------------------------------------- minikube floor


def test_a_minikube_below_the_floor_stops_the_program_before_anything_is_created(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """minikube v1.36.0 bundles cri-dockerd v0.4.0 but supports Kubernetes up to v1.33.1
    (kubernetes/minikube v1.36.0 deploy/kicbase/Dockerfile, constants.go): below the floor."""
    real = REAL_MINIKUBE_HOST_FINDINGS
    info = json.dumps({"Runtimes": {"nvidia": {}, "runc": {}}, "DefaultRuntime": "nvidia"})

    def host(argv: list[str]) -> tuple[int | None, str, str]:
        if argv[:2] == ["docker", "info"]:
            return 0, info, ""
        if argv[:2] == ["docker", "context"]:
            return 0, "default\n", ""
        if argv[:2] == ["minikube", "version"]:
            return 0, "v1.36.0\n", ""
        return None, "", f"{argv[0]}: not found on PATH"

    monkeypatch.setattr(variants.minikube.host, "minikube_host_findings", lambda cfg: real(cfg, run=host))
    run = run_program(program_harness.MINIKUBE)
    assert isinstance(run.error, PreflightError)
    text = str(run.error)
    assert "minikube-version: minikube v1.36.0 is older than v1.37.0 (it bundles cri-dockerd v0.4.0)" in text
    assert "fix: upgrade minikube to v1.37.0 or newer" in text
    assert [r.name for r in run.registrations] in ([], ["host"])
