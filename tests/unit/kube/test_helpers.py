"""Pure parts of the gate/smoke commands and of the minikube lifecycle helper."""

from __future__ import annotations

import json

import pytest

from gpulab.kube.client import GateError, Waiter
from gpulab.kube.gate_rules import Resources
from variants.minikube import ctl as minikube_ctl


def node(alloc: str | None, cap: str | None) -> dict[str, object]:
    st: dict[str, dict[str, str]] = {"allocatable": {"cpu": "4"}, "capacity": {"cpu": "4"}}
    if alloc is not None:
        st["allocatable"]["nvidia.com/gpu"] = alloc
    if cap is not None:
        st["capacity"]["nvidia.com/gpu"] = cap
    return {"metadata": {"name": "n"}, "status": st}


def totals(nodes: list[dict[str, object]]) -> tuple[int | None, int | None]:
    have = Resources.of(nodes)
    return have.allocatable, have.capacity


def test_gpu_totals_distinguish_missing_from_zero() -> None:
    assert totals([node(None, None)]) == (None, None)
    assert totals([node("0", "1")]) == (0, 1)
    assert totals([node("1", "1"), node("2", "2"), node(None, None)]) == (3, 3)


def test_waiter_returns_the_first_value_and_times_out_with_the_diagnosis() -> None:
    now = [0.0]
    w = Waiter(timeout=10, interval=2, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    seen = iter([None, None, "ready"])
    assert w.until("x", lambda: next(seen), lambda: "diag") == "ready"
    with pytest.raises(GateError) as err:
        w.until("ClusterPolicy ready", lambda: None, lambda: "pod p Pending: Insufficient cpu")
    assert "timed out after 10s waiting for ClusterPolicy ready" in str(err.value)
    assert "Insufficient cpu" in str(err.value)


@pytest.mark.parametrize(
    ("doc", "running"),
    [
        ({"Name": "gpu-lab", "Host": "Running", "Kubelet": "Running", "APIServer": "Running"}, True),
        ({"Name": "gpu-lab", "Host": "Stopped", "Kubelet": "Stopped", "APIServer": "Stopped"}, False),
        ([{"Host": "Running", "Kubelet": "Running", "APIServer": "Running"}] * 2, True),
        ([{"Host": "Running", "Kubelet": "Running", "APIServer": "Stopped"}], False),
    ],
)
def test_minikube_status(doc: object, running: bool) -> None:
    assert minikube_ctl.is_running(json.dumps(doc)) is running


def test_minikube_status_of_unknown_profile_is_not_running() -> None:
    assert minikube_ctl.is_running('* Profile "nope" not found. Run "minikube profile list"') is False


def test_every_minikube_command_is_scoped_to_the_profile() -> None:
    for argv in (
        minikube_ctl.status_argv("lab"),
        minikube_ctl.delete_argv("lab"),
        minikube_ctl.addon_argv("lab", False),
    ):
        assert argv[argv.index("-p") + 1] == "lab", argv
    assert minikube_ctl.addon_argv("lab", False)[2:4] == ["disable", "nvidia-device-plugin"]
    assert minikube_ctl.kubeconfig_argv("lab")[-2:] == ["--context", "lab"]
    assert "--flatten" in minikube_ctl.kubeconfig_argv("lab")


def test_waiter_rides_out_api_server_restarts_but_not_real_errors() -> None:
    import urllib3
    from kubernetes.client.rest import ApiException

    now = [0.0]
    w = Waiter(timeout=30, interval=1, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    answers: list[object] = [
        urllib3.exceptions.NewConnectionError(None, "connection refused"),  # type: ignore[arg-type]
        ApiException(status=503),
        "ready",
    ]

    def check() -> object:
        a = answers.pop(0)
        if isinstance(a, BaseException):
            raise a
        return a

    assert w.until("x", check, lambda: "diag") == "ready"

    def forbidden() -> object:
        raise ApiException(status=403)

    with pytest.raises(ApiException):
        w.until("x", forbidden, lambda: "diag")


def test_waiter_reports_progress_on_stderr_while_it_waits(capsys: pytest.CaptureFixture[str]) -> None:
    """The command layer streams stderr into Pulumi's display: a long wait must say so."""
    from gpulab.kube.client import Waiter

    now = [0.0]
    answers = iter([None, None, None, "ready"])

    def sleep(secs: float) -> None:
        now[0] += secs

    w = Waiter(timeout=60, interval=6, clock=lambda: now[0], sleep=sleep, first_interval=6)
    assert w.until("ClusterPolicy to be ready", lambda: next(answers), lambda: "diag") == "ready"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[gpulab] waiting for ClusterPolicy to be ready (up to 60s)"
    assert "[gpulab] still waiting for ClusterPolicy to be ready (12s)" in err
    assert err[-1] == "[gpulab] ClusterPolicy to be ready: yes, after 18s"


def test_waiter_looks_again_soon_then_backs_off_to_its_interval() -> None:
    """A state reached within a second is seen within a fraction of one; long waits poll gently."""
    from gpulab.kube.client import Waiter

    now = [0.0]
    pauses: list[float] = []

    def sleep(secs: float) -> None:
        pauses.append(secs)
        now[0] += secs

    answers = iter([None] * 6 + ["done"])
    Waiter(timeout=60, interval=2, clock=lambda: now[0], sleep=sleep).until("x", lambda: next(answers), str)
    assert pauses == [0.2, 0.4, 0.8, 1.6, 2, 2]
