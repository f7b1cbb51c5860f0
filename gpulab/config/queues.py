"""The queue layer's config (``queues: true``): :class:`QueueSettings`, one field of
:class:`gpulab.config.lab.LabConfig`.

With the switch on, the lab installs Kueue (sigs.k8s.io/kueue, its chart ``charts/kueue`` at a
pinned release; offline from the Go module of the same tag, toolchain/kueue-chart.sh), then
makes a ResourceFlavor for the GPU nodes, a ClusterQueue whose quota of the GPU resource is
what the gate measured (an output of the gate, never a typed-in number) and a LocalQueue in
the lab's namespace, and proves the queue (gpulab.kube.queues). What Kueue does at v0.19.0 that
the lab relies on, each with its source, is in tests/contract/test_kueue.py.

Pure: no Pulumi, no I/O but the chart path's existence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import yaml

from gpulab.config import schema
from gpulab.config.device_plugin import LocalChart, chart_path, chart_pin

#: This module's keys (Pulumi.yaml declares each once); part of gpulab.config.lab.SCHEMA.
SCHEMA: Final[dict[str, tuple[str, object]]] = schema.section(
    "queues", "kueueChartVersion", "kueueChartRepo", "kueueChartPath"
)
#: The chart, the release and its namespace (charts/kueue/README.md: ``helm install kueue
#: oci://registry.k8s.io/kueue/charts/kueue --namespace=kueue-system``).
CHART: Final = "kueue"
RELEASE: Final = "kueue"
NAMESPACE: Final = "kueue-system"
#: The chart's objects the lab's checks and the sim name (templates/, release name ``kueue``):
#: the webhook Service and its serving-cert Secret, the visibility API's Service, the
#: controller's ConfigMap and its key.
WEBHOOK_SERVICE: Final = "kueue-webhook-service"
WEBHOOK_SECRET: Final = "kueue-webhook-server-cert"
VISIBILITY_SERVICE: Final = "kueue-visibility-server"
CONFIGMAP: Final = "kueue-manager-config"
CONFIG_KEY: Final = "controller_manager_config.yaml"
#: Kueue's API group and the version the lab writes (the CRDs' storage version at v0.19.0).
GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta2"
#: The label that puts a Job or Pod in a LocalQueue (``constants.QueueLabel``).
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
#: The lab's queue objects: one flavor for the GPU nodes, one ClusterQueue, one LocalQueue.
FLAVOR: Final = "gpu-lab-gpu"
CLUSTER_QUEUE: Final = "gpu-lab"
LOCAL_QUEUE: Final = "gpu-lab"
#: The ClusterQueue's annotation of the allocatable the gate measured (the quota's source; the
#: policy cluster-queue-quota-within-allocatable holds the quota to it).
MEASURED_ANNOTATION: Final = "gpulab.dev/measured-allocatable"
#: The environment variable that points an empty ``kueueChartPath`` at a local chart.
CHART_PATH_ENV: Final = "GPULAB_KUEUE_CHART_PATH"


@dataclass(frozen=True)
class QueueSettings(LocalChart):
    """The queue layer as the lab installs it.

    Attributes:
        enabled: ``queues``.
        version: ``kueueChartVersion`` (Chart.yaml's ``version``, no leading v).
        repo: ``kueueChartRepo`` (an ``oci://`` or ``https://`` chart repository).
        path: an unpacked chart directory (``kueueChartPath`` or ``$GPULAB_KUEUE_CHART_PATH``),
            absolute; None: from ``repo`` at ``version``.
    """

    enabled: bool = False
    version: str = "0.19.0"
    repo: str = "oci://registry.k8s.io/kueue/charts"
    path: str | None = None


def parse(
    get: Callable[[str], object], problems: list[str], env: Mapping[str, str], ns: str = "gpu-lab"
) -> QueueSettings:
    """The :class:`QueueSettings` from the parsed values (``get(key)``: the value or its
    default); one line per bad key is appended to ``problems``. The chart path is read only
    with ``queues`` on.

    Problems: a version not ``MAJOR.MINOR.PATCH``; a repository not https:// or oci://; with
    ``queues``, a chart path without a Chart.yaml.
    """
    enabled = bool(get("queues"))
    version, repo = chart_pin(get, problems, ns, "kueue", "the chart's Chart.yaml", "0.19.0")
    path = (
        chart_path("kueueChartPath", str(get("kueueChartPath")), CHART_PATH_ENV, env, CHART, problems, ns)
        if enabled
        else None
    )
    return QueueSettings(enabled=enabled, version=version, repo=repo, path=path)


#: Integrations the lab enables: the proof's Jobs and Pods (the chart enables a dozen frameworks,
#: most of whose CRDs a lab never has).
FRAMEWORKS: Final = ("batch/job", "pod")
#: The controller's configuration (``config.kueue.x-k8s.io/v1beta2`` Configuration): the chart's
#: default (values.yaml ``managerConfig.controllerManagerConfigYaml`` at v0.19.0) with the lab's
#: integrations and ``waitForPodsReady`` on with ``blockAdmission``: Kueue's all-or-nothing with
#: ready Pods (keps/349-all-or-nothing): a Workload admitted whose Pods are not all ready within
#: the timeout is evicted and requeued, and none is admitted meanwhile, so no two Jobs hold part
#: of the GPUs each. tests/contract/test_kueue.py checks every key against the chart and the API.
MANAGER_CONFIG: Final[dict[str, object]] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "waitForPodsReady": {"timeout": "5m", "blockAdmission": True},
    "integrations": {"frameworks": list(FRAMEWORKS)},
}


def chart_values(controller_in_chart: bool) -> dict[str, object]:
    """The Kueue chart's values the lab sets: its controller configuration
    (:data:`MANAGER_CONFIG`, as the YAML text the chart puts into ConfigMap :data:`CONFIGMAP`)
    and, where the variant runs the controller itself (the sim: a process, not a Pod),
    ``controllerManager.replicas: 0``."""
    values: dict[str, object] = {
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(MANAGER_CONFIG, sort_keys=False)}
    }
    if not controller_in_chart:
        values["controllerManager"] = {"replicas": 0}
    return values


def cluster_queue_spec(flavor: str, resource: str, quota: int) -> dict[str, object]:
    """The ClusterQueue's spec: every namespace (``namespaceSelector: {}``), one resource group
    covering ``resource`` with ``quota`` of it in ``flavor``; ``BestEffortFIFO`` (the default,
    named): a Job that can never fit does not block the ones behind it."""
    return {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": [resource],
                "flavors": [{"name": flavor, "resources": [{"name": resource, "nominalQuota": quota}]}],
            }
        ],
    }
