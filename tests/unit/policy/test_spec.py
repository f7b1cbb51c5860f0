"""Policy specs: config defaults (:mod:`policy.validators.spec`)."""

from __future__ import annotations

from policy import validators


def test_config_defaults_are_the_expected_values_and_given_config_wins() -> None:
    s = validators.spec("minikube-start-resources")
    assert s.settings(None) == {"minCpus": 4, "minMemoryMiB": 8192}
    assert s.settings({"minCpus": 8, "enforcementLevel": "advisory"}) == {"minCpus": 8, "minMemoryMiB": 8192}
