"""ops.repair: what an interrupted run left, repaired only when asked, printed to run as printed."""

from __future__ import annotations

from ops import repair


def rec(rev: int, status: str) -> dict:
    return {"secret": f"sh.helm.release.v1.gpu-operator.v{rev}", "revision": rev, "status": status}


def test_an_interrupted_install_loses_its_whole_record() -> None:
    # helm install refuses a name with any record ("cannot re-use a name that is still in use").
    secrets, why = repair.helm_plan([rec(1, "pending-install")], create_pending=True)  # type: ignore[misc]
    assert secrets == ["sh.helm.release.v1.gpu-operator.v1"] and "v1 pending-install" in why
    # The orphaned provider finished the install after the engine died: deployed, still not ours.
    secrets, _ = repair.helm_plan([rec(1, "deployed")], create_pending=True)  # type: ignore[misc]
    assert secrets == ["sh.helm.release.v1.gpu-operator.v1"]


def test_an_interrupted_upgrade_loses_only_its_pending_revision() -> None:
    # helm upgrade refuses a release whose last revision is pending-*; the deployed one stays.
    secrets, why = repair.helm_plan([rec(1, "deployed"), rec(2, "pending-upgrade")], create_pending=False)  # type: ignore[misc]
    assert secrets == ["sh.helm.release.v1.gpu-operator.v2"] and "stuck pending-upgrade" in why


def test_a_healthy_release_needs_nothing() -> None:
    assert repair.helm_plan([rec(1, "superseded"), rec(2, "deployed")], create_pending=False) is None
    assert repair.helm_plan([], create_pending=True) is None


def test_the_printed_repair_names_the_stack_and_the_flag() -> None:
    assert repair.repair_command("sim") == "GPULAB_STACK=sim make repair YES=1"


def test_config_value_falls_back_to_the_default() -> None:
    assert repair.config_value({"gpu-lab:profile": {"value": "e2e"}}, "profile") == "e2e"
    assert repair.config_value({}, "cluster") == "minikube"
