"""Contract: Kueue (``queues: true``) at the tag the lab installs and the sim runs.

Read here from the module the offline lab installs the chart from and the sim builds the
controller from: sigs.k8s.io/kueue at ``KUEUE_VERSION`` (v0.19.0, toolchain/versions.env),
fetched from the Go module proxy by toolchain/kueue-chart.sh (``$GPULAB_KUEUE_CHART_PATH``,
``charts/kueue``; the module root is two levels up). Each test names the file it reads. A bump of
the version fails :func:`test_the_chart_is_the_pinned_version`: re-read these sources at the new
tag. What the sim relies on from Kubernetes v1.36.3 (aggregator routing, EndpointSlice
validation, the clusterrole-aggregation controller) is read from k8s.io/kubernetes v1.36.3 in the
Go module cache when present.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpulab.config import queues as qc
from gpulab.kube import queues as proof
from tests.contract.conftest import go_module_chart, versions
from variants.sim.ctl import queues as sim_queues

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chart() -> Path:
    """The unpacked chart (``$GPULAB_KUEUE_CHART_PATH``, else the Go module cache's)."""
    return go_module_chart("GPULAB_KUEUE_CHART_PATH", "kueue-chart.sh", "Kueue chart")


def _src(chart: Path, rel: str) -> str:
    """A file of the module (its root is the chart's grandparent) at the chart's tag."""
    return (chart.parents[1] / rel).read_text()


def _kube(rel: str) -> str:
    path = Path.home() / "go" / "pkg" / "mod" / "k8s.io" / "kubernetes@v1.36.3" / rel
    if not path.is_file():
        pytest.skip("no k8s.io/kubernetes v1.36.3 in the Go module cache (make toolchain builds it)")
    return path.read_text()


def _gate(features: str, name: str) -> list[str]:
    """The ``Default: ..., PreRelease: ...`` of each version of feature gate ``name``, in order
    (pkg/features/kube_features.go's versioned specs)."""
    block = features.split(f"\t{name}: {{", 1)[1].split("\n\t},", 1)[0]
    return re.findall(r"(Default: \w+, PreRelease: featuregate\.\w+)", block)


def test_the_chart_is_the_pinned_version(chart: Path) -> None:
    doc = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert doc["name"] == qc.CHART
    assert doc["version"] == versions()["KUEUE_VERSION"] == qc.QueueSettings().version
    # charts/kueue/README.md: helm install kueue oci://registry.k8s.io/kueue/charts/kueue -n kueue-system
    readme = (chart / "README.md").read_text()
    assert f"{qc.QueueSettings().repo}/{qc.CHART}" in readme and f"--namespace={qc.NAMESPACE}" in readme


def test_the_crds_are_templates_so_uninstall_removes_them(chart: Path) -> None:
    """templates/crd/ (not crds/, which Helm keeps): helm uninstall deletes Kueue's CRDs."""
    crds = sorted(p.name for p in (chart / "templates" / "crd").glob("*.yaml"))
    assert "kueue.x-k8s.io_clusterqueues.yaml" in crds and "kueue.x-k8s.io_workloads.yaml" in crds
    assert not (chart / "crds").exists()


def test_the_values_the_lab_sets_exist_in_the_chart(chart: Path) -> None:
    values = yaml.safe_load((chart / "values.yaml").read_text())
    assert "replicas" in values["controllerManager"]
    assert "controllerManagerConfigYaml" in values["managerConfig"]
    # manager.yaml renders replicas from controllerManager.replicas (0 in the sim).
    assert (
        "replicas: {{ .Values.controllerManager.replicas }}"
        in (chart / "templates" / "manager" / "manager.yaml").read_text()
    )
    # The lab's configuration is the chart's default but for integrations and waitForPodsReady.
    default = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    for key in ("apiVersion", "kind", "health", "metrics", "webhook"):
        assert qc.MANAGER_CONFIG[key] == default[key], key
    assert qc.MANAGER_CONFIG["leaderElection"] == default["leaderElection"]
    assert set(qc.FRAMEWORKS) <= set(default["integrations"]["frameworks"])


def test_the_configuration_api_has_every_key_the_lab_and_the_sim_write(chart: Path) -> None:
    """apis/config/v1beta2/configuration_types.go: waitForPodsReady (timeout, blockAdmission), the
    webhook's host/port/certDir, internalCertManagement's service and secret names."""
    types = _src(chart, "apis/config/v1beta2/configuration_types.go")
    for tag in (
        'json:"timeout"',
        'json:"blockAdmission,omitempty"',
        'json:"host,omitempty"',
        'json:"certDir,omitempty"',
        'json:"webhookServiceName,omitempty"',
        'json:"manageJobsWithoutQueueName"',
        'json:"waitForPodsReady,omitempty"',
    ):
        assert tag in types, tag
    defaults = _src(chart, "apis/config/v1beta2/defaults.go")
    assert f'DefaultNamespace                              = "{qc.NAMESPACE}"' in defaults
    assert f'DefaultWebhookServiceName                     = "{qc.WEBHOOK_SERVICE}"' in defaults
    assert f'DefaultWebhookSecretName                      = "{qc.WEBHOOK_SECRET}"' in defaults


def test_the_webhooks_and_conversion_go_to_the_webhook_service(chart: Path) -> None:
    """templates/webhook/: validating and mutating webhooks (the Pod's among them, failurePolicy
    Fail) at kueue-webhook-service; the CRDs' conversion webhook at the same Service."""
    hooks = (chart / "templates" / "webhook" / "manifests.yaml").read_text()
    assert "kind: MutatingWebhookConfiguration" in hooks and "kind: ValidatingWebhookConfiguration" in hooks
    assert "/mutate--v1-pod" in hooks and "failurePolicy: Fail" in hooks
    service = (chart / "templates" / "webhook" / "service.yaml").read_text()
    assert "-webhook-service'" in service
    assert (
        "port: 443" in (chart / "values.yaml").read_text()
        and "targetPort: 9443" in (chart / "values.yaml").read_text()
    )
    # The webhook Service's port has no name: the sim's EndpointSlice port is named "" to match.
    svc_ports = yaml.safe_load((chart / "values.yaml").read_text())["webhookService"]["ports"]
    assert all("name" not in p for p in svc_ports)
    assert sim_queues.endpoint_slice("192.0.2.2", {"kueueWebhookPort": 1})["ports"][0]["name"] == ""
    crd = (chart / "templates" / "crd" / "kueue.x-k8s.io_clusterqueues.yaml").read_text()
    assert "strategy: Webhook" in crd and "path: /convert" in crd


def test_the_cert_rotator_names_the_service_and_waits_for_the_mounted_secret(chart: Path) -> None:
    """pkg/util/cert/cert.go: the serving cert for <webhookServiceName>.<namespace>.svc, CA
    injected into both webhook configurations and the CRDs; manager.yaml mounts the Secret at the
    cert dir, which the sim does in the kubelet's stead (variants/sim/ctl/queues.py)."""
    cert = _src(chart, "pkg/util/cert/cert.go")
    assert (
        'dnsName := fmt.Sprintf("%s.%s.svc", *cfg.InternalCertManagement.WebhookServiceName, *cfg.Namespace)'
        in cert
    )
    assert "CertDir:        cfg.Webhook.CertDir" in cert and "cert.CRDConversion" in cert
    manager = (chart / "templates" / "manager" / "manager.yaml").read_text()
    assert "-webhook-server-cert" in manager and "/tmp/k8s-webhook-server/serving-certs" in manager


def test_the_visibility_server_writes_its_cert_to_the_root(chart: Path) -> None:
    """pkg/visibility/server.go: certDir "/visibility" (a Pod's volume; the host's root for a
    process), why the sim runs with VisibilityOnDemand off and removes the chart's APIServices;
    the gate is beta and on by default at this tag (pkg/features/kube_features.go)."""
    assert 'certDir = "/visibility"' in _src(chart, "pkg/visibility/server.go")
    features = _src(chart, "pkg/features/kube_features.go")
    assert _gate(features, "VisibilityOnDemand")[-1] == "Default: true, PreRelease: featuregate.Beta"
    assert sim_queues.FEATURE_GATES == "VisibilityOnDemand=false"
    names = {p.name for p in (chart / "templates" / "visibility").glob("apiservice_*.yaml")}
    assert names == {"apiservice_v1beta1.yaml", "apiservice_v1beta2.yaml"}
    assert set(sim_queues.VISIBILITY_APISERVICES) == {
        "v1beta1.visibility.kueue.x-k8s.io",
        "v1beta2.visibility.kueue.x-k8s.io",
    }


def test_the_queue_label_and_the_pod_admission_gate(chart: Path) -> None:
    """pkg/controller/constants/constants.go QueueLabel; pkg/controller/jobs/pod/constants
    SchedulingGateName: the gate Kueue puts on a Pod it manages until admission."""
    assert f'QueueLabel = "{qc.QUEUE_LABEL}"' in _src(chart, "pkg/controller/constants/constants.go")
    assert f'SchedulingGateName = "{proof.ADMISSION_GATE}"' in _src(
        chart, "pkg/controller/jobs/pod/constants/constants.go"
    )


def test_the_workload_conditions_and_kueues_words_for_a_pending_job(chart: Path) -> None:
    """apis/kueue/v1beta2/workload_types.go: QuotaReserved, Admitted, Finished and the reason
    Pending (deprecated only with UnadmittedWorkloadsObservability, off by default at this tag);
    pkg/scheduler/flavorassigner/flavorassigner.go: the messages the proof records."""
    types = _src(chart, "apis/kueue/v1beta2/workload_types.go")
    for line in (
        'WorkloadQuotaReserved = "QuotaReserved"',
        'WorkloadAdmitted = "Admitted"',
        'WorkloadFinished = "Finished"',
        'WorkloadPending = "Pending"',
    ):
        assert line in types, line
    features = _src(chart, "pkg/features/kube_features.go")
    assert (
        _gate(features, "UnadmittedWorkloadsObservability")[-1]
        == "Default: false, PreRelease: featuregate.Beta"
    )
    assigner = _src(chart, "pkg/scheduler/flavorassigner/flavorassigner.go")
    assert 'builder.WriteString("couldn\'t assign flavors to pod set ")' in assigner
    assert '"insufficient unused quota for %s in flavor %s, %s more needed"' in assigner
    assert "> maximum capacity (%s)" in assigner


def test_a_job_is_admitted_whole_unless_it_asks_for_less(chart: Path) -> None:
    """All or nothing: a Workload is partially admitted only when a pod set's minCount is below its
    count (pkg/workload/workload.go CanBePartiallyAdmitted), and a Job's minCount comes only from
    the annotation kueue.x-k8s.io/job-min-parallelism (pkg/controller/jobs/job/job_controller.go
    minPodsCount), which the proof's Jobs do not carry."""
    assert "if ps[psi].Count > ptr.Deref(ps[psi].MinCount, ps[psi].Count) {" in _src(
        chart, "pkg/workload/workload.go"
    )
    job = _src(chart, "pkg/controller/jobs/job/job_controller.go")
    assert 'JobMinParallelismAnnotation              = "kueue.x-k8s.io/job-min-parallelism"' in job
    doc = proof.job_manifest(proof.GANG, "default", "q", "nvidia.com/gpu", 1, 3, "img")
    assert "kueue.x-k8s.io/job-min-parallelism" not in (doc["metadata"].get("annotations") or {})


def test_the_api_the_lab_writes_is_the_storage_version(chart: Path) -> None:
    """v1beta2 is the CRDs' storage version (no conversion for what the lab writes); the
    ClusterQueue fields it sets exist there, BestEffortFIFO the default strategy."""
    assert "+kubebuilder:storageversion" in _src(chart, "apis/kueue/v1beta2/clusterqueue_types.go")
    crd = (chart / "templates" / "crd" / "kueue.x-k8s.io_clusterqueues.yaml").read_text()
    # The template is YAML after Helm's header: the version entries in order, each ending in storage.
    versions = re.findall(r"\n {6}name: (v1\w+)\n[\s\S]*?\n {6}storage: (true|false)", crd)
    assert [v for v, stored in versions if stored == "true"] == [qc.VERSION], versions
    cq = _src(chart, "apis/kueue/v1beta2/clusterqueue_types.go")
    assert "+kubebuilder:default=BestEffortFIFO" in cq and 'json:"nominalQuota,omitempty"' in cq


def test_the_sim_relies_on_kubernetes_v1_36_3() -> None:
    """cmd/kube-apiserver/app/server.go: endpoints only with --enable-aggregator-routing;
    pkg/apis/core/validation: no loopback endpoint; pkg/controller/clusterroleaggregation: a
    server-side Apply that re-creates a deleted aggregated ClusterRole (the sweep)."""
    server = _kube("cmd/kube-apiserver/app/server.go")
    assert "if enabledAggregatorRouting {" in server and "NewEndpointServiceResolver(" in server
    validation = _kube("pkg/apis/core/validation/validation.go")
    assert "may not be in the loopback range (127.0.0.0/8, ::1/128)" in validation
    agg = _kube("pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go")
    assert "c.clusterRoleClient.ClusterRoles().Apply(ctx, clusterRoleApply, opts)" in agg
    assert proof.AGGREGATOR in agg


def test_the_aggregated_roles_are_the_charts(chart: Path) -> None:
    with_rule = sorted(
        p.name for p in (chart / "templates" / "rbac").glob("*.yaml") if "aggregationRule:" in p.read_text()
    )
    assert with_rule == ["batch_admin_role.yaml", "batch_user_role.yaml"]
    assert proof.AGGREGATED_ROLES == ("kueue-batch-admin-role", "kueue-batch-user-role")
