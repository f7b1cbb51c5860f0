"""The pack as a whole (:mod:`policy.validators.pack`, ``policy/__main__.py``) and the
``checklist-unverified`` report."""

from __future__ import annotations

import re
import runpy
from typing import Any

import pytest
from pulumi_policy import EnforcementLevel

from gpulab.core import outputs as out
from policy import validators

from .harness import (
    ITEMS,
    ROOT,
    UNK,
    check_stack,
    good_outputs,
    stack,
    unverified_lines,
)


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
    from gpulab.verdict import checklist

    policies = validators.build_policies()
    names = [p.name for p in policies]
    for item in checklist.ITEM_IDS:
        assert item in names
    last = policies[-1]
    assert last.name == validators.UNVERIFIED_POLICY
    assert last.enforcement_level == EnforcementLevel.ADVISORY
    # Mandatory, but for the warnings that never block (a redundant toolkit still works).
    advisory = {"operator-toolkit-redundant"}
    for p in policies[:-1]:
        want = EnforcementLevel.ADVISORY if p.name in advisory else EnforcementLevel.MANDATORY
        assert p.enforcement_level == want, p.name


def test_readme_documents_every_policy_and_config_property() -> None:
    readme = (ROOT / "policy" / "README.md").read_text()
    for s in validators.SPECS:
        assert f"`{s.name}`" in readme, s.name
        for prop in s.properties:
            assert f"`{prop}`" in readme, (s.name, prop)
    assert f"`{validators.UNVERIFIED_POLICY}`" in readme


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


def test_policy_yaml_runs_in_the_projects_virtualenv() -> None:
    import yaml

    doc = yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    # The official Python host resolves a relative virtualenv against the pack's directory and
    # keeps the ambient python3 for a pack without one (pulumi/pulumi v3.259.0
    # sdk/python/cmd/pulumi-language-python RunPlugin; tests/hack/test_langhost.py).
    assert doc["runtime"] == {"name": "python", "options": {"virtualenv": "../.venv"}}
    assert (ROOT / "policy" / doc["runtime"]["options"]["virtualenv"]).resolve() == (ROOT / ".venv").resolve()
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["runtime"]["options"]["virtualenv"] == ".venv"  # the program's: the same one
    assert doc["version"]


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
