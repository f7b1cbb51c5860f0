"""The wait on a run-once Pod (gpulab.kube.client.wait_finished): it stops on evidence, refuses
a Pod made for other inputs, and says when the Pod ran."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from gpulab.kube import client as kube_client
from gpulab.kube.client import CHECK_INPUTS_ANNOTATION, GateError, foreign_pod, pod_times


class _Api:
    def sanitize_for_serialization(self, obj: Any) -> Any:
        return obj


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    state: dict[str, Any] = {"pod": None, "events": [], "node": {"metadata": {"name": "n1"}, "status": {}}}

    class Core:
        def __init__(self, api: Any) -> None:
            pass

        def read_namespaced_pod(self, name: str, namespace: str) -> dict[str, Any]:
            return dict(state["pod"])

        def list_namespaced_event(self, namespace: str, **kw: Any) -> Any:
            state["selector"] = kw.get("field_selector")
            return SimpleNamespace(items=state["events"])

        def read_node(self, name: str) -> dict[str, Any]:
            return dict(state["node"])

        def list_node(self) -> Any:
            return SimpleNamespace(items=[state["node"]])

    from kubernetes import client

    monkeypatch.setattr(client, "CoreV1Api", Core)
    monkeypatch.setattr(kube_client, "_diagnose", lambda api, ctx: "DIAGNOSIS")
    return state


def _pod(phase: str = "Pending", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "gpu-smoke",
            "namespace": "default",
            "uid": "u1",
            "annotations": {CHECK_INPUTS_ANNOTATION: "abc"},
        },
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "gpu-smoke", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04"}],
        },
        "status": {"phase": phase, **status},
    }


def test_a_refused_pull_stops_the_wait_at_the_first_poll_not_at_the_timeout(cluster: dict[str, Any]) -> None:
    """NVIDIA/gpu-operator#273's NotFound: the wait ends at once with the cause and the fix."""
    waiting = {
        "reason": "ErrImagePull",
        "message": 'rpc error: code = NotFound desc = failed to pull and unpack image "x": '
        'failed to resolve reference "x": x: not found',
    }
    cluster["pod"] = _pod(
        containerStatuses=[{"name": "gpu-smoke", "image": "x", "state": {"waiting": waiting}}]
    )
    t0 = time.monotonic()
    with pytest.raises(GateError) as exc:
        kube_client.wait_finished(_Api(), "default", "gpu-smoke", 300, None, inputs="abc")
    assert time.monotonic() - t0 < 5
    text = str(exc.value)
    assert text.startswith(
        "the wait for Pod default/gpu-smoke to reach phase Succeeded stopped after 0s: image x"
    )
    assert "[pull-refused]" in text and text.endswith("DIAGNOSIS")
    # Its own events only: the selector names the Pod's UID.
    assert (
        cluster["selector"] == "involvedObject.name=gpu-smoke,involvedObject.kind=Pod,involvedObject.uid=u1"
    )


def test_a_pod_made_for_other_inputs_is_refused_not_read(cluster: dict[str, Any]) -> None:
    cluster["pod"] = _pod("Succeeded")
    with pytest.raises(GateError) as exc:
        kube_client.wait_finished(_Api(), "default", "gpu-smoke", 5, None, inputs="def")
    assert "was made for other check inputs (gpulab.dev/check-inputs=abc, this check's def)" in str(exc.value)
    assert "scripts/kubectl -n default delete pod gpu-smoke && make lab" in str(exc.value)
    # Its own inputs: read.
    assert (
        kube_client.wait_finished(_Api(), "default", "gpu-smoke", 5, None, inputs="abc")["status"]["phase"]
        == "Succeeded"
    )


def test_foreign_pod_without_the_annotation_or_unchecked() -> None:
    pod = _pod()
    pod["metadata"]["annotations"] = {}
    assert foreign_pod(pod, "abc") is not None and "=none" in str(foreign_pod(pod, "abc"))
    assert foreign_pod(pod, None) is None


def test_pod_times_are_the_containers_start_and_finish() -> None:
    statuses = [
        {
            "state": {
                "terminated": {"startedAt": "2026-12-01T10:00:05Z", "finishedAt": "2026-12-01T10:00:09Z"}
            }
        },
        {
            "state": {
                "terminated": {"startedAt": "2026-12-01T10:00:03Z", "finishedAt": "2026-12-01T10:00:07Z"}
            }
        },
    ]
    doc = _pod("Succeeded", containerStatuses=statuses, startTime="2026-12-01T10:00:00Z")
    assert pod_times(doc) == ("2026-12-01T10:00:03+00:00", "2026-12-01T10:00:09+00:00")
    # Not finished: the Pod's start only.
    assert pod_times(_pod(startTime="2026-12-01T10:00:00Z")) == ("2026-12-01T10:00:00+00:00", None)


class _Changes:
    """A watch answer (``_preload_content=False``): the given lines, then the end."""

    def __init__(self, *lines: bytes) -> None:
        self.lines = lines

    def stream(self, amt: Any = None, decode_content: bool = False) -> Any:
        yield from self.lines

    def close(self) -> None:
        pass

    def release_conn(self) -> None:
        pass


def _watching(monkeypatch: pytest.MonkeyPatch, answer: Any) -> list[dict[str, Any]]:
    asked: list[dict[str, Any]] = []

    class Core:
        def __init__(self, api: Any) -> None:
            pass

        def list_namespaced_pod(self, namespace: str, **kw: Any) -> Any:
            asked.append({"namespace": namespace, **kw})
            if isinstance(answer, Exception):
                raise answer
            return answer

    from kubernetes import client

    monkeypatch.setattr(client, "CoreV1Api", Core)
    return asked


def test_the_pause_ends_when_the_pod_changes_watching_from_the_last_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # kubectl wait's way: the end of a run-once Pod is seen when it happens, not at the next poll.
    changed = b'{"type": "MODIFIED", "object": {"metadata": {"name": "gpu-smoke"}}}\n'
    asked = _watching(monkeypatch, _Changes(changed))
    seen = {"pod": _pod("Running") | {"metadata": {"name": "gpu-smoke", "resourceVersion": "41"}}}
    t0 = time.monotonic()
    kube_client.pod_change_pause(_Api(), "default", "gpu-smoke", seen)(5.0)
    assert time.monotonic() - t0 < 1
    (kw,) = asked
    assert kw["watch"] is True and kw["resource_version"] == "41" and kw["timeout_seconds"] == 5
    assert kw["field_selector"] == "metadata.name=gpu-smoke" and kw["namespace"] == "default"


def test_the_pause_sleeps_without_a_resource_version_or_when_the_watch_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kubernetes.client.rest import ApiException

    asked = _watching(monkeypatch, ApiException(status=410, reason="Gone"))
    slept: list[float] = []
    monkeypatch.setattr(kube_client.time, "sleep", slept.append)
    kube_client.pod_change_pause(_Api(), "default", "gpu-smoke", {})(0.4)
    assert slept == [0.4] and asked == []  # nothing read yet: no resourceVersion to watch from
    seen = {"pod": {"metadata": {"resourceVersion": "7"}}}
    kube_client.pod_change_pause(_Api(), "default", "gpu-smoke", seen)(0.4)
    # An expired resourceVersion: the rest of the pause is slept, never a tight loop of reads.
    assert len(asked) == 1 and len(slept) == 2 and 0.3 < slept[1] <= 0.4
