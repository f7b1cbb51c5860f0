"""The stop rules of a run-once Pod's wait (gpulab.diagnose.stop), each on a state quoted from a
real report: the message in the test is the report's, the Pod around it the smallest one
that carries it (the shape kubectl get -o json prints)."""

from __future__ import annotations

from typing import Any

import pytest

from gpulab.diagnose import stop

SMOKE = "nvidia/cuda:12.4.1-base-ubuntu22.04"


def _pod(
    *,
    phase: str = "Pending",
    waiting: tuple[str, str] | None = None,
    image: str = SMOKE,
    node: str | None = "minikube",
    tolerations: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    statuses = []
    if waiting:
        statuses = [
            {
                "name": "gpu-smoke",
                "image": image,
                "state": {"waiting": {"reason": waiting[0], "message": waiting[1]}},
            }
        ]
    spec: dict[str, Any] = {"containers": [{"name": "gpu-smoke", "image": image}]}
    if node:
        spec["nodeName"] = node
    if tolerations:
        spec["tolerations"] = tolerations
    return {
        "metadata": {"name": "gpu-smoke", "namespace": "default", "uid": "u1"},
        "spec": spec,
        "status": {"phase": phase, "containerStatuses": statuses, **(status or {})},
    }


def _event(reason: str, message: str, t: str = "2026-12-01T00:00:00Z") -> dict[str, Any]:
    return {"reason": reason, "message": message, "lastTimestamp": t, "type": "Warning"}


def _node(*conditions: tuple[str, str, str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "minikube"},
        "status": {
            "conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions]
        },
    }


def _only(ev: stop.PodEvidence) -> stop.Hit:
    hits = stop.pod_hits(ev)
    assert len(hits) == 1, hits
    return hits[0]


def test_a_pull_the_registry_answered_not_found_is_final_and_names_the_image_key() -> None:
    """NVIDIA/gpu-operator#273: containerd's NotFound for a tag nvcr.io does not have."""
    message = (
        'rpc error: code = NotFound desc = failed to pull and unpack image "nvcr.io/nvidia/driver:460.73.01-ubuntu21.04": '  # noqa: E501 (quoted from the report)
        'failed to resolve reference "nvcr.io/nvidia/driver:460.73.01-ubuntu21.04": '
        "nvcr.io/nvidia/driver:460.73.01-ubuntu21.04: not found"
    )
    image = "nvcr.io/nvidia/driver:460.73.01-ubuntu21.04"
    hit = _only(stop.PodEvidence(_pod(waiting=("ErrImagePull", message), image=image)))
    assert hit.rule == "pull-refused" and hit.recovery.kind == "final"
    assert image in hit.cause and "refused the image" in hit.cause
    assert hit.fix.startswith(
        f"go back to the lab's pinned image ({SMOKE}): "
        "scripts/pulumi config rm gpu-lab:smokeImage && make lab; "
    )
    assert "set an image the registry serves: scripts/pulumi config set gpu-lab:smokeImage" in hit.fix
    assert "docker manifest inspect " + image in hit.fix


def test_a_403_in_the_failed_event_is_read_while_the_container_only_says_back_off() -> None:
    """NVIDIA/gpu-operator#1020: during ImagePullBackOff the waiting message carries no cause;
    the kubelet's Failed event does ("unexpected status from HEAD request ...: 403 Forbidden")."""
    image = "nvcr.io/nvidia/gpu-operator:v24.6.2"
    failed = (
        f'Failed to pull image "{image}": failed to pull and unpack image "{image}": failed to resolve reference '  # noqa: E501 (quoted from the report)
        f'"{image}": unexpected status from HEAD request to https://nvcr.io/v2/nvidia/gpu-operator/manifests/v24.6.2: '  # noqa: E501 (quoted from the report)
        "403 Forbidden"
    )
    pod = _pod(waiting=("ImagePullBackOff", f'Back-off pulling image "{image}"'), image=image)
    hit = _only(stop.PodEvidence(pod, [_event("Failed", failed), _event("Failed", "Error: ErrImagePull")]))
    assert hit.rule == "pull-refused" and hit.recovery.kind == "final"
    assert "403 Forbidden" in hit.evidence
    assert "docker login nvcr.io" in hit.fix


def test_a_failed_event_for_another_image_is_not_this_containers_cause() -> None:
    """NVIDIA/gpu-operator#388 (a digest nvcr.io no longer serves): the event names another
    image than the container's, so only the container's own message counts."""
    other = (
        'Failed to pull image "nvcr.io/nvidia/cuda@sha256:ed723a1339cddd75eb9f2be2f3476edf497a1b189c10c9bf9eb8da4a16a51a59": '  # noqa: E501 (quoted from the report)
        "rpc error: code = NotFound desc = failed to pull and unpack image: not found"
    )
    pod = _pod(waiting=("ImagePullBackOff", f'Back-off pulling image "{SMOKE}"'))
    assert stop.pod_hits(stop.PodEvidence(pod, [_event("Failed", other)])) == []


def test_a_rate_limit_is_final_and_the_fix_is_credentials_or_a_mirror() -> None:
    """docker/docs#21908: Docker Hub's 429 with its six-hour window."""
    message = (
        "failed to copy: httpReadSeeker: failed open: unexpected status code "
        "https://registry-1.docker.io/v2/bitnamicharts/drupal/manifests/sha256:9538e0c4: 429 Too Many Requests - "  # noqa: E501 (quoted from the report)
        "Server message: toomanyrequests: You have reached your pull rate limit."
    )
    hit = _only(stop.PodEvidence(_pod(waiting=("ErrImagePull", message), image="bitnami/drupal:10")))
    assert hit.rule == "pull-rate-limited" and hit.recovery.kind == "final"
    assert "docker login docker.io" in hit.fix and "gpu-lab:smokeImage <mirror>/drupal:10" in hit.fix


def test_an_untrusted_certificate_is_final() -> None:
    """NVIDIA/gpu-operator#1519: a private Harbor registry's certificate."""
    message = "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    hit = _only(
        stop.PodEvidence(_pod(waiting=("ErrImagePull", message), image="harbor.example.com/gpu/cuda:12.4"))
    )
    assert hit.rule == "pull-tls" and hit.recovery.kind == "final"
    assert "harbor.example.com" in hit.fix


def test_a_full_disk_during_the_pull_is_final_and_the_fix_prunes_first() -> None:
    """Shippable/support#1298: the layer cannot be written."""
    message = (
        "ApplyLayer exit status 1 write /home/shippable/.gvm/gos/go1.2/src/pkg/go/token/position_test.go: "
        "no space left on device"
    )
    hit = _only(stop.PodEvidence(_pod(waiting=("ErrImagePull", message)), profile="gpu-lab"))
    assert hit.rule == "pull-no-space" and hit.recovery.kind == "final"
    assert hit.fix.startswith("free the node's disk: minikube -p gpu-lab ssh -- docker system prune -af")


def test_a_registry_that_fails_with_5xx_gets_the_kubelets_retries_before_the_wait_stops() -> None:
    """NVIDIA/dcgm-exporter#31: "received unexpected HTTP status: 502 Bad Gateway" may clear."""
    pod = _pod(waiting=("ErrImagePull", "received unexpected HTTP status: 502 Bad Gateway"))
    hit = _only(stop.PodEvidence(pod))
    assert hit.rule == "pull-unreachable" and hit.recovery.kind == "grace"
    assert hit.recovery.seconds == stop.PULL_RETRY_S
    clock = stop.StopClock()
    assert clock.decide([hit], 0.0) is None
    assert clock.decide([hit], stop.PULL_RETRY_S - 1) is None
    assert clock.decide([hit], stop.PULL_RETRY_S) is hit
    # It cleared: the clock starts over when it comes back.
    assert clock.decide([], stop.PULL_RETRY_S + 1) is None
    assert clock.decide([hit], stop.PULL_RETRY_S + 2) is None


def test_an_invalid_image_name_is_final() -> None:
    """The kubelet's own verdict on the reference (pkg/kubelet/images: ErrInvalidImageName)."""
    pod = _pod(
        waiting=(
            "InvalidImageName",
            'Failed to apply default image tag "nvidia/CUDA:12": invalid reference format',
        )
    )
    hit = _only(stop.PodEvidence(pod))
    assert hit.rule == "image-name-invalid" and hit.recovery.kind == "final"


DISK_PRESSURE = ("DiskPressure", "True", "KubeletHasDiskPressure", "kubelet has disk pressure")
#: rootless-containers/usernetes#155: the scheduler's condition message, verbatim.
TAINTED = "0/1 nodes are available: 1 node(s) had taint {node.kubernetes.io/disk-pressure: }, that the pod didn't tolerate."  # noqa: E501 (quoted from the report)


def test_disk_pressure_on_the_node_stops_the_wait_at_once_with_the_prune() -> None:
    """kubernetes/kubernetes#93711 (the node's condition) and rootless-containers/usernetes#155
    (the scheduler's message): the Pod stays Pending while the kubelet keeps DiskPressure."""
    ev = stop.PodEvidence(_pod(node=None), [_event("FailedScheduling", TAINTED)], _node(DISK_PRESSURE), "lab")
    hit = _only(ev)
    assert hit.rule == "node-pressure" and hit.recovery.kind == "final"
    assert (
        "node minikube reports DiskPressure (KubeletHasDiskPressure: kubelet has disk pressure)" in hit.cause
    )
    assert hit.fix.startswith("free the node's disk: minikube -p lab ssh -- docker system prune -af")
    assert (
        "scripts/kubectl wait --for=condition=DiskPressure=False node/minikube --timeout=6m && make lab"
        in hit.fix
    )
    assert hit.evidence == TAINTED


def test_a_pod_that_tolerates_the_pressure_taint_is_not_blamed_on_it() -> None:
    """kubernetes/kubernetes#61079: a Pod with the disk-pressure toleration is scheduled anyway."""
    toleration = [{"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"}]
    ev = stop.PodEvidence(_pod(tolerations=toleration), [], _node(DISK_PRESSURE))
    assert stop.pod_hits(ev) == []


def test_a_pressure_taint_the_node_does_not_report_is_not_called_disk_pressure() -> None:
    """Check before blaming (kubernetes/kubernetes#83668: the taint outlived the pressure): the
    scheduler names the taint, the node says DiskPressure False: the cause names the mismatch
    and what to look at, and may clear (grace)."""
    node = _node(("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"))
    hit = _only(stop.PodEvidence(_pod(node=None), [_event("FailedScheduling", TAINTED)], node))
    assert hit.rule == "node-pressure" and hit.recovery.kind == "grace"
    assert "no node read here reports DiskPressure=True" in hit.cause
    assert "prune" not in hit.fix and "describe nodes" in hit.fix


def test_an_evicted_pod_is_final_and_the_fix_frees_the_disk_then_recreates_it() -> None:
    """kubernetes/kubernetes#91600: "The node was low on resource: ephemeral-storage."."""
    message = "The node was low on resource: ephemeral-storage. Container ebaogi-bff-app was using 34260Ki, which exceeds its request of 0. "  # noqa: E501 (quoted from the report)
    pod = _pod(phase="Failed", status={"reason": "Evicted", "message": message})
    hit = _only(stop.PodEvidence(pod))
    assert hit.rule == "pod-evicted" and hit.recovery.kind == "final"
    assert "docker system prune -af" in hit.fix
    assert hit.fix.endswith("scripts/kubectl -n default delete pod gpu-smoke && make lab")


def test_an_eviction_for_the_nodes_condition_names_disk_pressure() -> None:
    """operate-first/apps#1352: "Pod The node had condition: [DiskPressure].\""""
    pod = _pod(
        phase="Failed",
        status={"reason": "Evicted", "message": "Pod The node had condition: [DiskPressure]. "},
    )
    assert "docker system prune" in _only(stop.PodEvidence(pod)).fix


def test_a_missing_configmap_mount_gets_a_grace_and_names_the_object() -> None:
    """grafana/helm-charts#2216: MountVolume.SetUp failed ... configmap "loki-stack-promtail" not found."""
    m = 'MountVolume.SetUp failed for volume "config" : configmap "loki-stack-promtail" not found'
    pod = _pod()
    pod["metadata"]["namespace"] = "gpu-operator"
    hit = _only(stop.PodEvidence(pod, [_event("FailedMount", m)]))
    assert hit.rule == "mount-object-missing" and hit.recovery.kind == "grace"
    assert "configmap gpu-operator/loki-stack-promtail" in hit.cause
    assert "scripts/kubectl -n gpu-operator create configmap loki-stack-promtail" in hit.fix


def test_a_sandbox_without_the_nvidia_handler_gets_a_grace_and_the_toolkits_pods() -> None:
    """NVIDIA/gpu-operator#730: FailedCreatePodSandBox, no runtime for "nvidia" is configured."""
    m = 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured'  # noqa: E501 (quoted from the report)
    hit = _only(stop.PodEvidence(_pod(), [_event("FailedCreatePodSandBox", m)]))
    assert hit.rule == "sandbox-failed" and hit.recovery.kind == "grace"
    assert hit.recovery.seconds == stop.SANDBOX_RETRY_S
    assert "nvidia runtime handler" in hit.fix


def test_a_cordoned_node_is_final_and_the_fix_uncordons_it() -> None:
    """rancher/rancher#24975: a cordoned node carries taint node.kubernetes.io/unschedulable
    (NoSchedule); kube-scheduler's NodeUnschedulable plugin says "node(s) were unschedulable"."""
    said = "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available."
    node = _node()
    node["spec"] = {
        "unschedulable": True,
        "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
    }
    hit = _only(stop.PodEvidence(_pod(node=None), [_event("FailedScheduling", said)], node))
    assert hit.rule == "node-cordoned" and hit.recovery.kind == "final"
    assert hit.fix == "scripts/kubectl uncordon minikube && make lab"
    # The node read here is not cordoned (uncordoned meanwhile): not blamed.
    assert stop.pod_hits(stop.PodEvidence(_pod(node=None), [_event("FailedScheduling", said)], _node())) == []


def test_normal_progress_is_no_hit() -> None:
    """A Pod being pulled (kubelet's Pulling event, ContainerCreating) is not stopped."""
    pod = _pod(waiting=("ContainerCreating", ""))
    events = [{"reason": "Pulling", "message": f'Pulling image "{SMOKE}"', "type": "Normal"}]
    assert stop.pod_hits(stop.PodEvidence(pod, events, _node())) == []


def test_the_stop_message_carries_cause_evidence_fix_and_why() -> None:
    hit = stop.Hit("pull-refused", "pod default/x", "cause.", "ev", "fix it", stop.final("why"))
    text = stop.stop_message("the wait for X", hit, 3.2)
    assert text.splitlines() == [
        "the wait for X stopped after 3s: cause. (pod default/x)",
        "  evidence: ev",
        "  fix: fix it",
        "  waiting longer would not help: why [pull-refused]",
    ]


@pytest.mark.parametrize("rule", stop.POD_RULES, ids=lambda r: r.id)
def test_every_rule_cites_a_report_that_a_test_here_quotes(rule: stop.PodRule) -> None:
    """Every row of the table names its sources, and this file's docstrings quote each one."""
    import inspect
    import sys

    text = inspect.getsource(sys.modules[__name__])
    assert rule.sources
    for source in rule.sources:
        assert source in text, f"{rule.id}: {source} is quoted by no test here"


@pytest.mark.parametrize("error", stop.PULL_ERRORS, ids=lambda e: e.id)
def test_every_fix_names_the_first_action(error: stop.PullError) -> None:
    """A first fix is an action that recovers, never only "read the logs"."""
    hit = _only(stop.PodEvidence(_pod(waiting=("ErrImagePull", error.sources[0] + " " + _sample(error)))))
    first = hit.fix.split()[0]
    assert first in {"set", "log", "add", "free", "make", "go"}, hit.fix


def _sample(error: stop.PullError) -> str:
    return {
        "pull-rate-limited": "429 Too Many Requests",
        "pull-no-space": "no space left on device",
        "pull-tls": "x509: certificate signed by unknown authority",
        "pull-refused": "401 Unauthorized",
        "pull-unreachable": "dial tcp 10.0.0.1:443: i/o timeout",
    }[error.id]


def test_registry_of_follows_the_runtimes_rule() -> None:
    assert stop.registry_of("nvcr.io/nvidia/cuda:12") == "nvcr.io"
    assert stop.registry_of("nvidia/cuda:12") == "docker.io"
    assert stop.registry_of("localhost/x") == "localhost"
    assert stop.registry_of("registry.invalid:5000/a/b") == "registry.invalid:5000"
