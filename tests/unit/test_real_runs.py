"""The lab's real runs: their index (tests/data/real-runs.json), the table in
docs/tested-against.md generated from it, and the lab-found run
(tests/data/device-h200-node/lab-found) replayed through the program.

The lab-found run is the lab's own ``scripts/lab up`` on a real H200 node (hack/node,
``run.sh lab``: the existing variant with ``gpuStack: found``, the project's device plugin):
its stack outputs are read with the program's typed model, the checklist evaluated on them
gives the verdict the run recorded, and the card built from them is the card the run wrote.
Every index entry's results and versions are checked against the files its run recorded.
GPU UUIDs are placeholders (hack/node/record.py).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import pytest

from gpulab.config.mig import Expected
from gpulab.core.outputs import LabOutputs
from gpulab.host import nvsmi
from gpulab.kube.gate_rules import resources_verdict
from gpulab.verdict import checklist
from gpulab.verdict.card.markdown import render_markdown
from gpulab.verdict.card.model import build_card
from gpulab.verdict.card.summary import summary_line
from tests.support import real_runs as rr

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "data" / "device-h200-node" / "lab-found"
PLACEHOLDER = "GPU-00000000-0000-4000-8000-000000000000"
RUNS = rr.load()


def text(name: str, run: Path = RUN) -> str:
    return (run / name).read_text(encoding="utf-8")


def doc(name: str, run: Path = RUN) -> Any:
    return json.loads(text(name, run))


def entry_of(path: str) -> dict[str, Any]:
    (entry,) = [e for e in RUNS if e["path"] == path]
    return entry


# --- the lab-found run, replayed ---------------------------------------------------------


def outputs() -> LabOutputs:
    return LabOutputs.from_json(doc("lab-outputs-existing.json"))


def test_the_stack_outputs_parse_and_the_checklist_gives_the_recorded_verdict() -> None:
    items = checklist.evaluate(outputs())
    recorded = doc("lab-baseline-card.json")["checklist"]
    assert checklist.overall(items) == recorded["result"] == "pass"
    assert checklist.exit_code(items) == recorded["exitCode"] == 0
    assert [(i.id, i.status.value) for i in items] == [(i["id"], i["status"]) for i in recorded["items"]]
    statuses = {i.id: i.status.value for i in items}
    assert statuses.pop("dcgm-reports-gpus") == "not-tested"  # dcgmExporter: false
    assert set(statuses.values()) == {"pass"} and "every-gpu-node-passes" in statuses
    # ...and what the run printed at the end of scripts/lab up.
    assert "checklist: pass" in doc("summary.json")["lab"]["up"]["tail"]


#: What a card says that is the program's advice, not what the run measured: a checklist
#: item's first fix (its words may improve, e.g. how to reach the GPU node: ``nodeCommand``).
ADVICE: Final = "fix"
#: A checklist row of a card's markdown: ``| `<item id>`: <title> | ...``.
CHECKLIST_ROW: Final = re.compile(r"^\| `[a-z0-9-]+`: ")


def _recorded_in(recorded: Any, built: Any, path: str = "card") -> None:
    """Everything the run's card recorded is in the card built now, unchanged: the card may
    grow (a row added later), never drop or change what a real run measured (its advice,
    :data:`ADVICE`, must be there, in today's words)."""
    if isinstance(recorded, dict):
        assert isinstance(built, dict), path
        for key, value in recorded.items():
            assert key in built, f"{path}.{key} is gone"
            if key != ADVICE:
                _recorded_in(value, built[key], f"{path}.{key}")
    elif isinstance(recorded, list) and recorded and isinstance(recorded[0], dict):
        assert isinstance(built, list) and len(built) == len(recorded), path
        for i, (r, b) in enumerate(zip(recorded, built, strict=True)):
            _recorded_in(r, b, f"{path}[{i}]")
    else:
        assert built == recorded, path


def _rows(markdown: str) -> list[str]:
    """The table rows of a card's markdown, a checklist row without its last cell (the first
    fix: :data:`ADVICE`)."""
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "---" not in line]
    return [r.rsplit(" | ", 1)[0] if CHECKLIST_ROW.match(r) else r for r in rows]


def test_the_card_built_from_the_outputs_is_the_card_the_run_wrote() -> None:
    recorded = doc("lab-baseline-card.json")
    card = build_card(
        outputs(),
        tflops=doc("lab-tflops.json"),
        tool_versions=recorded["toolVersions"],
        now=datetime.fromisoformat(recorded["generatedAt"]),
    )
    _recorded_in(recorded, card)
    rows = _rows(render_markdown(card))
    assert [r for r in _rows(text("lab-baseline-card.md")) if r not in rows] == []
    line = summary_line(card)
    assert line.startswith(
        "gpu-lab: 1 node, 1 GPUs: 1 allocatable; every node passed; GPUs 1 allocatable / 1 physical"
    )
    assert "driver 580.159.04 in Pod / 580.159.04 on host; compute passed on 1 GPU, bf16 674.8" in line
    assert line in doc("summary.json")["lab"]["up"]["tail"]
    assert card["simulated"] is False and card["simulatedFields"] == []


def test_a_failed_verify_leaves_the_outputs_and_a_later_card_still_passes() -> None:
    """docs/lacks.md ("What the lab still lacks"): the failed update keeps the stack's outputs."""
    assert text("lab-outputs-after-failed-verify.json") == text("lab-outputs-existing.json")
    recorded = doc("card-after-failed-verify/baseline-card.json")
    card = build_card(
        LabOutputs.from_json(doc("lab-outputs-after-failed-verify.json")),
        tool_versions=recorded["toolVersions"],
        now=datetime.fromisoformat(recorded["generatedAt"]),
    )
    _recorded_in(recorded, card)
    assert card["checklist"]["result"] == "pass"
    assert summary_line(card) in doc("summary.json")["lab"]["card-after-failed-verify"]["tail"]


def test_the_smoke_saw_the_hosts_gpu_and_driver_and_the_node_its_allocatable() -> None:
    out = text("cmd-host-query-gpu.out").split("# rc=0\n", 1)[1].split("\n# stderr:", 1)[0]
    (host,) = nvsmi.parse_query_csv(out)
    raw = doc("lab-outputs-existing.json")
    assert host.uuid == PLACEHOLDER and host.name == "NVIDIA H200"
    assert raw["smokeGpuUuids"] == [host.uuid] == raw["computeGpuUuids"]["vectoradd-0"]["gpus"]
    assert raw["smokeDriverVersion"] == raw["hostDriverVersion"] == host.driver_version == "580.159.04"
    assert (raw["smokePhase"], raw["computeResult"], raw["simulated"]) == ("Succeeded", "passed", False)
    (row,) = raw["nodes"]
    assert (row["node"], row["allocatable"], row["capacity"], row["status"]) == ("gpulab-h200", 1, 1, "pass")
    # The node as the kubelet advertised it passes the gate's rules for one GPU.
    assert resources_verdict([doc("node-with-gpu.json")], Expected("none", 1)) is None


def test_the_lab_found_the_projects_plugin_by_the_charts_label() -> None:
    ds = doc("plugin-daemonset.json")
    assert ds["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "nvidia-device-plugin"
    stack = doc("lab-outputs-existing.json")["gpuStack"]
    assert stack["mode"] == "found"
    assert stack["devicePlugin"] == [f"{ds['metadata']['namespace']}/{ds['metadata']['name']}"]
    assert doc("summary.json")["lab"]["config"]["gpu-lab:gpuStack"] == "found"


def test_the_negative_verify_failed_naming_the_node_and_the_fix() -> None:
    summary = doc("summary.json")["lab"]
    assert summary["verify-unhealthy"]["rc"] == 1 and summary["verify-unhealthy"]["seconds"] < 60
    out = text("lab-verify-unhealthy.out")
    assert out.startswith("$ scripts/lab verify\n# rc=1\n")
    first = "first failure: gate: node gpulab-h200 advertises 0 nvidia.com/gpu allocatable of the 1 expected"
    assert f"{first} (capacity)" in out
    assert "the device plugin marked 1 GPU(s) unhealthy (an XID error)" in out
    assert r"\"--grace\", \"20\"" in out  # gpuGraceSeconds 20, as configured
    assert summary["destroy"]["rc"] == 0 and "17 deleted" in summary["destroy"]["tail"]


def test_the_record_holds_no_real_gpu_uuid() -> None:
    found = {
        u for f in RUN.rglob("*") if f.is_file() for u in re.findall(r"GPU-[0-9a-fA-F-]{36}", f.read_text())
    }
    assert found == {PLACEHOLDER}


# --- the index -------------------------------------------------------------------------


def test_the_docs_table_is_the_one_generated_from_the_index() -> None:
    block = rr.readme_table(rr.TABLE_PAGE.read_text(encoding="utf-8"))
    assert block == rr.readme_block(RUNS), (
        "docs/tested-against.md's real-runs table differs from tests/data/real-runs.json: "
        "run .venv/bin/python -m tests.support.real_runs readme --write"
    )
    section = rr.TABLE_PAGE.read_text(encoding="utf-8").split("# Tested against\n", 1)[1].split("\n## ", 1)[0]
    assert block in section


@pytest.mark.parametrize("entry", RUNS, ids=lambda e: f"{e['date']}-{e['mode']}")
def test_every_path_exists_and_has_a_readme(entry: dict[str, Any]) -> None:
    folder = ROOT / entry["path"]
    assert folder.is_dir() and any(folder.iterdir()), f"{entry['path']}: no recorded files"
    assert rr.readme_of(entry["path"]) is not None, f"{entry['path']}: no README.md there or above naming it"


def test_every_recorded_real_node_run_is_in_the_index() -> None:
    recorded = {
        p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "data").rglob("summary.json")
    }
    assert recorded <= {e["path"] for e in RUNS}


@pytest.mark.parametrize("entry", RUNS, ids=lambda e: f"{e['date']}-{e['mode']}")
def test_results_agree_with_the_recorded_files(entry: dict[str, Any]) -> None:
    run = ROOT / entry["path"]
    results = entry["results"]
    if not (run / "summary.json").is_file():
        # No cluster ran (the host's probe and measurements): nothing of the lab was observed.
        assert entry["mode"].startswith("host-") and set(results.values()) == {None}
        return
    summary = doc("summary.json", run)
    assert rr.mode_of(summary) == entry["mode"]
    assert entry["date"] == summary["startedAt"][:16] + "Z"
    assert results == rr.derive_results(run)
    lab = summary.get("lab") or {}
    assert results["upExitCode"] == (lab.get("up") or {}).get("rc")
    assert results["destroyExitCode"] == (lab.get("destroy") or {}).get("rc")
    if results["verify"] is not None:
        card = (
            "lab-baseline-card.json"
            if (run / "lab-baseline-card.json").is_file()
            else "lab-existing-baseline-card.json"
        )
        assert results["verify"] == doc(card, run)["checklist"]["result"]
    left = summary["leftovers"]
    assert not (left["processes"] or left["mounts"] or left.get("podProcesses") or left["kubepodsCgroup"])
    # The harness's bridge, and after a lab-nvidia run the cluster's census (NFD's CRDs Helm leaves).
    assert results["leftovers"][-1:] == ([rr.CNI0] if left["cni0"] else [])
    cluster = left.get("cluster") or {}
    assert len(results["leftovers"]) == bool(left["cni0"]) + sum(
        len(cluster.get(k) or [])
        for k in (
            "crds",
            "namespace",
            "daemonSets",
            "deployments",
            "configMaps",
            "serviceAccounts",
            "nodeLabels",
            "runtimeClasses",
            "cdiSpecs",
            "resourceSlices",  # lab-dra's census
            "pluginFiles",
        )
    ) + bool(cluster.get("containerdNvidiaRuntime"))


def test_the_lab_found_entry_says_what_its_record_says() -> None:
    entry = entry_of("tests/data/device-h200-node/lab-found")
    assert entry["results"] == {
        "upExitCode": 0,
        "allocatable": 1,
        "smoke": "pass",
        "compute": "pass",
        "verify": "pass",
        "negative": "pass",
        "destroyExitCode": 0,
        "leftovers": [rr.CNI0],
    }
    assert entry["components"] == rr.derive_components(RUN, "1bb1e92")
    assert "1bb1e92" in text("README.md") and rr.derive_machine(RUN) in entry["machine"]


@pytest.mark.parametrize("entry", RUNS, ids=lambda e: f"{e['date']}-{e['mode']}")
def test_every_known_version_is_in_the_record(entry: dict[str, Any]) -> None:
    """A version written in the index is one the run's files (or its README) recorded."""
    run = ROOT / entry["path"]
    readme = rr.readme_of(entry["path"])
    assert readme is not None
    corpus = readme.read_text(encoding="utf-8") + "".join(
        f.read_text(encoding="utf-8", errors="replace") for f in run.rglob("*") if f.is_file()
    )
    for c in entry["components"]:
        version = c["version"]
        if version.startswith("unknown"):
            continue
        assert version.removeprefix("v") in corpus, f"{c['name']} {version}: not in {entry['path']}"
    (driver,) = [c["version"] for c in entry["components"] if c["name"].startswith("NVIDIA driver")]
    assert driver == rr.host_driver(run), "the driver the run's nvidia-smi recorded"
    if (run / "facts.json").is_file():
        assert rr.derive_machine(run) in entry["machine"]
        derived = {(c["name"], c["version"]) for c in rr.derive_components(run)}
        assert derived - {(c["name"], c["version"]) for c in entry["components"]} <= {
            (c["name"], "unknown (not recorded)") for c in entry["components"] if c["origin"] == "project"
        }


# --- the validator and the CLI ----------------------------------------------------------


def good() -> dict[str, Any]:
    return json.loads(json.dumps(entry_of("tests/data/device-h200-node/lab-found")))


def index(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"origins": rr.ORIGINS, "modes": rr.MODES, "results": rr.RESULTS, "runs": list(entries)}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda e: e["results"].__setitem__("smoke", "ok"),
            "field 'results.smoke': expected 'pass' or 'fail' or null",
        ),
        (lambda e: e["results"].pop("negative"), "field 'results.negative': missing (write null"),
        (
            lambda e: e["results"].__setitem__("upExitCode", "0"),
            "field 'results.upExitCode': expected an exit code",
        ),
        (
            lambda e: e["results"].__setitem__("verify", "passed"),
            "field 'results.verify': expected a checklist verdict",
        ),
        (
            lambda e: e["results"].__setitem__("leftovers", "none"),
            "field 'results.leftovers': expected a list",
        ),
        (
            lambda e: e["components"][0].__setitem__("origin", "nvidia"),
            "field 'components[0].origin': 'nvidia' is not one of",
        ),
        (
            lambda e: e["components"][1].pop("version"),
            "field 'components[1]': expected an object with exactly",
        ),
        (lambda e: e.__setitem__("date", "2026-12-03"), "field 'date': expected YYYY-MM-DDTHH:MMZ"),
        (lambda e: e.__setitem__("mode", "lab"), "field 'mode': 'lab' is not one of"),
        (lambda e: e.__setitem__("path", "/tmp/x"), "field 'path': expected a folder under tests/data/"),
        (lambda e: e.pop("notes"), "field 'notes': missing"),
        (lambda e: e.__setitem__("status", "pass"), "field 'status': unknown field"),
    ],
)
def test_the_validator_names_the_entry_and_the_field(change: Any, message: str) -> None:
    entry = good()
    change(entry)
    with pytest.raises(rr.RealRunsError) as exc:
        rr.validate(index(entry))
    assert f"runs[0] ({entry.get('date', '?')} {entry.get('path', '?')}): " in str(exc.value)
    assert message in str(exc.value)


def test_the_validator_accepts_nulls_and_wants_date_order() -> None:
    entry = good()
    entry["results"] = dict.fromkeys(rr.RESULT_KEYS)
    assert rr.validate(index(entry)) == [entry]
    older = {**good(), "date": "2026-12-01T00:00Z"}
    with pytest.raises(rr.RealRunsError, match="not in date order"):
        rr.validate(index(good(), older))


def test_add_derives_the_entry_and_writes_index_and_readme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    index_path, readme = tmp_path / "real-runs.json", tmp_path / "README.md"
    doc_ = json.loads(rr.INDEX.read_text(encoding="utf-8"))
    doc_["runs"] = [e for e in doc_["runs"] if e["mode"] != "lab-found"]
    index_path.write_text(json.dumps(doc_))
    readme.write_text(f"# x\n\n## Tested against\n\n{rr.BEGIN}\n{rr.END}\n\n## Next\n")
    monkeypatch.setattr(rr, "INDEX", index_path)
    monkeypatch.setattr(rr, "TABLE_PAGE", readme)
    monkeypatch.setattr(rr, "ROOT", ROOT)
    rc = rr.main(
        ["add", "--from", str(RUN), "--revision", "1bb1e92", "--machine", "m", "--notes", "n", "--write"]
    )
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    runs = rr.load(index_path)
    assert (
        [r for r in runs if r["path"] == printed["path"]] == [printed]
        and printed["mode"] == "lab-found"
        and printed["path"] == "tests/data/device-h200-node/lab-found"
    )
    assert printed["results"] == entry_of(printed["path"])["results"]
    assert rr.readme_table(readme.read_text()) == rr.readme_block(runs) and readme.read_text().endswith(
        "## Next\n"
    )
    assert rr.main(["readme"]) == 0


def test_components_come_from_the_staged_manifest_and_name_an_unknown_binary(tmp_path: Path) -> None:
    """A later run that stages NVIDIA's device plugin: its MANIFEST names the components."""
    rows = [
        ("node-kube", "gpulab-kube", "v1.36.3"),
        ("node-runtime", "nvidia-device-plugin", "v0.18.0"),
        ("node-runtime", "gpu-feature-discovery", "v0.18.0"),
        ("node-runtime", "gpulab-vectoradd", "abc1234"),
        ("node-runtime", "something-new", "v1.0.0"),
    ]
    (tmp_path / "MANIFEST").write_text(
        "archive\tbinary\tversion\tbytes\tsha256\n" + "".join(f"{a}\t{b}\t{v}\t1\tx\n" for a, b, v in rows)
    )
    comps = {c["name"]: (c["version"], c["origin"]) for c in rr.derive_components(tmp_path)}
    assert comps["gpu-lab (the lab's commands as the program renders them)"] == ("abc1234", "project")
    assert comps["NVIDIA k8s-device-plugin (nvidia-device-plugin)"] == ("v0.18.0", "nvidia-upstream")
    assert comps["NVIDIA k8s-device-plugin (gpu-feature-discovery)"] == ("v0.18.0", "nvidia-upstream")
    assert comps["something-new (origin guessed from its name: check it)"] == ("v1.0.0", "other-upstream")
    assert comps["NVIDIA driver (NVML, nvidia-smi, libcuda)"] == ("unknown (not recorded)", "nvidia-upstream")
    assert "gpulab-device-plugin (hack/node/deviceplugin)" not in comps  # not staged


def test_the_index_documents_what_the_module_checks() -> None:
    doc_ = json.loads(rr.INDEX.read_text(encoding="utf-8"))
    assert (doc_["origins"], doc_["modes"], doc_["results"]) == (rr.ORIGINS, rr.MODES, rr.RESULTS)
