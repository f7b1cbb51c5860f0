"""The index of the lab's real runs on GPU machines: ``tests/data/real-runs.json``.

Every run on a real GPU machine that is recorded under ``tests/data`` has one entry there
(earlier ones too), and docs/tested-against.md (README's index links it) carries the table this module
renders from it, between ``<!-- real-runs:begin -->`` and ``<!-- real-runs:end -->``
(tests/unit/test_real_runs.py fails when the two differ). Test support only: the product never
imports it.

An entry (the issue's fields, plus ``path`` and ``notes``)::

    {
      "date": "2026-12-03T13:11Z",            # when the run started, UTC, to the minute
      "machine": "lent nvidia-h200: ...",     # the machine, in words
      "mode": "lab-found",                    # one of MODES
      "path": "tests/data/device-h200-node/lab-found",   # its record (a README there or above)
      "components": [{"name": ..., "version": ..., "origin": ...}],   # origin: ORIGINS
      "results": {"upExitCode": 0, "allocatable": 1, "smoke": "pass", "compute": "pass",
                  "verify": "pass", "negative": "pass", "destroyExitCode": 0,
                  "leftovers": ["cni0 (the harness's bridge)"]},
      "notes": "..."
    }

``results``: each value ``null`` where the run did not observe it (never ``"pass"``);
:data:`RESULTS` says what each means. A version nobody recorded is written
``"unknown (...)"``, saying why.

    .venv/bin/python -m tests.support.real_runs check            # validate the index
    .venv/bin/python -m tests.support.real_runs readme [--write]  # the docs' table (diff, or write)
    .venv/bin/python -m tests.support.real_runs record FILES_AT DEST [--all]   # a run into tests/data
    .venv/bin/python -m tests.support.real_runs add --from DEST [--revision REV] [--machine TEXT]
        [--notes TEXT] [--write]                                   # its entry, derived from the record

``add`` derives what the recorded files say (date, mode, components, results; the machine
from the host's GPUs and facts.json) and prints the entry, or with ``--write`` appends it to
the index and rewrites the table in docs/tested-against.md; edit its ``machine`` and ``notes`` afterwards.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "tests" / "data" / "real-runs.json"
#: The page that carries the generated table (README.md indexes it).
TABLE_PAGE = ROOT / "docs" / "tested-against.md"
BEGIN = "<!-- real-runs:begin -->"
END = "<!-- real-runs:end -->"

#: Where a component's code comes from.
ORIGINS: dict[str, str] = {
    "nvidia-upstream": "NVIDIA's own released code (driver, NVML, nvidia-smi, the container toolkit, "
    "nvidia-ml-py), as NVIDIA ships it or built here from NVIDIA's unmodified source at a tag",
    "other-upstream": "another upstream project's released code (Kubernetes, etcd, containerd, runc, "
    "the CNI plugins, Pulumi, PyTorch, CuPy, Python packages), as shipped or built here from its "
    "unmodified source at a tag (build options: hack/node/README.md, docs/toolchain.md)",
    "project": "this repository's own code (the lab itself, the harness's device plugin, images "
    "and programs, the offline toolchain's stand-ins), at the commit given",
}

#: What each result means; ``null`` always means the run did not observe it.
RESULTS: dict[str, str] = {
    "upExitCode": "exit code of the lab's own `scripts/lab up` (pulumi up); null: no pulumi up ran",
    "allocatable": "allocatable nvidia.com/gpu the lab read on the node when healthy (integer)",
    "smoke": "the smoke check: Pod Succeeded, its driver and GPU UUIDs the host's ('pass'/'fail')",
    "compute": "the compute check: vectorAdd 'Test PASSED' on each GPU given ('pass'/'fail')",
    "verify": "the checklist verdict on the card the run itself wrote (gpulab.verdict.checklist: "
    "'pass', 'fail', 'not-evaluated', 'compute not tested'); null: the run wrote no card "
    "(a card replayed afterwards from the record is not the run's: see notes)",
    "negative": "the injected fault (the device plugin reports the GPU unhealthy): 'pass' when "
    "the lab failed as it must, naming the cause; 'fail' when it did not",
    "destroyExitCode": "exit code of `scripts/lab destroy` (pulumi destroy); null: none ran",
    "leftovers": "what the run found left on the machine after teardown, each named with whose "
    "it is ([]: nothing); null: not looked for",
}
RESULT_KEYS: tuple[str, ...] = tuple(RESULTS)
VERDICTS = ("pass", "fail")
CHECKLIST_VERDICTS = ("pass", "fail", "not-evaluated", "compute not tested")
ENTRY_KEYS = ("date", "machine", "mode", "path", "components", "results", "notes")

#: A run's kind: what ran on the machine.
MODES: dict[str, str] = {
    "host-probe": "no cluster: the host probe, topology and TFLOPS measurements on the host",
    "host-explore": "no cluster: nvidia-smi, NVML and matmul exploration scripts on the host",
    "harness-feasibility": "hack/node's real node (run.sh feasibility): bring-up, the lab's "
    "census, gate and smoke checks as the program renders them; no Pulumi engine",
    "harness-whole": "hack/node's real node (run.sh whole): the lab's rendered census, gate, "
    "smoke and compute checks and the unhealthy-GPU negative; no Pulumi engine",
    "harness-fleet": "hack/node's real node (run.sh fleet): the lab's rendered commands for "
    "gpuStack: found (access, fleet check, smoke, compute) and the negative; no Pulumi engine",
    "lab-found": "hack/node's real node (run.sh lab): the lab's own scripts/lab up, verify "
    "(the negative) and destroy, existing variant with gpuStack: found",
    "lab-up": "hack/node's real node (run.sh lab): the lab's own scripts/lab up, verify "
    "(the negative) and destroy, the GPU stack installed by the program (no gpuStack: found)",
    "lab-device-plugin": "hack/node's real node (run.sh lab-nvidia): the lab's own scripts/lab "
    "up with gpuStack: device-plugin (NVIDIA's nvidia-device-plugin chart, GFD and NFD built from "
    "their modules and installed by the lab's Helm release), a second stack finding it, verify, "
    "the taint negative, destroy and the census of what is left",
    "lab-dra": "hack/node's real node (run.sh lab-dra): the lab's own scripts/lab up with "
    "gpuStack: dra (NVIDIA's DRA driver chart and GPU kubelet plugin built from their module and "
    "installed by the lab's Helm release), the smoke and compute Pods through ResourceClaims, "
    "verify, destroy and the census of what is left",
}
#: summary.json's ``mode`` (hack/node/device/node.py) -> the index's mode (``lab``:
#: :func:`mode_of` tells lab-found from lab-up by the stack's gpuStack config).
SUMMARY_MODES = {
    "feasibility": "harness-feasibility",
    "whole": "harness-whole",
    "fleet": "harness-fleet",
    "lab": "lab-up",
    "lab-nvidia": "lab-device-plugin",
    "lab-dra": "lab-dra",
}
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$")
CNI0 = "cni0 (the harness's bridge)"


class RealRunsError(ValueError):
    """The index is malformed; the message names the entry and the field."""


# --- loading and validation -------------------------------------------------------------


def _where(i: int, entry: Any) -> str:
    if isinstance(entry, Mapping):
        return f"runs[{i}] ({entry.get('date', '?')} {entry.get('path', '?')})"
    return f"runs[{i}]"


def _check_entry(i: int, entry: Any) -> list[str]:
    at = _where(i, entry)
    if not isinstance(entry, Mapping):
        return [f"{at}: expected an object, got {type(entry).__name__}"]
    problems: list[str] = []

    def bad(field: str, why: str) -> None:
        problems.append(f"{at}: field {field!r}: {why}")

    missing = [k for k in ENTRY_KEYS if k not in entry]
    extra = sorted(set(entry) - set(ENTRY_KEYS))
    for k in missing:
        bad(k, "missing")
    for k in extra:
        bad(k, f"unknown field (allowed: {', '.join(ENTRY_KEYS)})")
    for k in ("date", "machine", "mode", "path", "notes"):
        if k in entry and (not isinstance(entry[k], str) or not entry[k].strip()):
            bad(k, f"expected a non-empty string, got {entry[k]!r}")
    if isinstance(entry.get("date"), str) and not DATE.match(entry["date"]):
        bad("date", f"expected YYYY-MM-DDTHH:MMZ (UTC), got {entry['date']!r}")
    if isinstance(entry.get("mode"), str) and entry["mode"] not in MODES:
        bad("mode", f"{entry['mode']!r} is not one of {', '.join(MODES)}")
    if isinstance(entry.get("path"), str) and not entry["path"].startswith("tests/data/"):
        bad("path", f"expected a folder under tests/data/, got {entry['path']!r}")
    comps = entry.get("components")
    if "components" in entry:
        if not isinstance(comps, list) or not comps:
            bad("components", f"expected a non-empty list, got {comps!r}")
        else:
            for j, c in enumerate(comps):
                field = f"components[{j}]"
                if not isinstance(c, Mapping) or set(c) != {"name", "version", "origin"}:
                    bad(field, f"expected an object with exactly name, version, origin; got {c!r}")
                    continue
                for k in ("name", "version"):
                    if not isinstance(c[k], str) or not c[k].strip():
                        bad(f"{field}.{k}", f"expected a non-empty string, got {c[k]!r}")
                if c["origin"] not in ORIGINS:
                    bad(f"{field}.origin", f"{c['origin']!r} is not one of {', '.join(ORIGINS)}")
    results = entry.get("results")
    if "results" in entry:
        if not isinstance(results, Mapping):
            bad("results", f"expected an object, got {results!r}")
        else:
            problems += [f"{at}: field {m}" for m in _check_results(results)]
    return problems


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_results(r: Mapping[str, Any]) -> list[str]:
    problems = [
        f"'results.{k}': missing (write null where the run did not observe it)"
        for k in RESULT_KEYS
        if k not in r
    ]
    problems += [
        f"'results.{k}': unknown result (allowed: {', '.join(RESULT_KEYS)})"
        for k in sorted(set(r) - set(RESULT_KEYS))
    ]

    def check(key: str, ok: bool, want: str) -> None:
        if key in r and r[key] is not None and not ok:
            problems.append(f"'results.{key}': expected {want} or null, got {r[key]!r}")

    for key in ("upExitCode", "destroyExitCode"):
        check(key, _is_int(r.get(key)), "an exit code (integer)")
    check("allocatable", _is_int(r.get("allocatable")) and r.get("allocatable", 0) >= 0, "an integer >= 0")
    for key in ("smoke", "compute", "negative"):
        check(key, r.get(key) in VERDICTS, " or ".join(repr(v) for v in VERDICTS))
    check("verify", r.get("verify") in CHECKLIST_VERDICTS, "a checklist verdict " + repr(CHECKLIST_VERDICTS))
    leftovers = r.get("leftovers")
    check(
        "leftovers",
        isinstance(leftovers, list) and all(isinstance(x, str) and x.strip() for x in leftovers),
        "a list of strings",
    )
    return problems


def validate(doc: Any) -> list[dict[str, Any]]:
    """The runs of the index document ``doc``, checked: every problem of every entry named in
    one :class:`RealRunsError` (entry index, date, path, field)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("runs"), list):
        raise RealRunsError("real-runs.json: expected an object with a 'runs' list")
    runs: list[dict[str, Any]] = doc["runs"]
    problems = [p for i, e in enumerate(runs) for p in _check_entry(i, e)]
    keys = [(e.get("date"), e.get("path"), e.get("mode")) for e in runs if isinstance(e, Mapping)]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            problems.append(f"{_where(i, runs[i])}: the same date, path and mode as an earlier entry")
    for key, want in (("origins", ORIGINS), ("modes", MODES), ("results", RESULTS)):
        if isinstance(doc.get(key), Mapping) and set(doc[key]) != set(want):
            problems.append(
                f"{key}: the index documents {sorted(doc[key])}, tests.support.real_runs knows {sorted(want)}"
            )
    dates = [e.get("date") for e in runs if isinstance(e, Mapping) and isinstance(e.get("date"), str)]
    if dates != sorted(dates):
        problems.append("runs: not in date order (oldest first)")
    if problems:
        raise RealRunsError("real-runs.json:\n  " + "\n  ".join(problems))
    return runs


def load(path: Path | None = None) -> list[dict[str, Any]]:
    """The validated runs of the index at ``path`` (default: :data:`INDEX`)."""
    path = path or INDEX
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RealRunsError(f"{path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    return validate(doc)


def readme_of(path: str, root: Path = ROOT) -> Path | None:
    """The README that describes the run recorded at ``path``: ``path/README.md``, else that of
    the nearest folder above it under tests/data, if it names the run's folder (`name/`)."""
    folder = root / path
    if (folder / "README.md").is_file():
        return folder / "README.md"
    name = folder.name
    up = folder.parent
    while up != root / "tests" and up != up.parent:
        readme = up / "README.md"
        if readme.is_file() and f"`{name}/`" in readme.read_text(encoding="utf-8"):
            return readme
        name = f"{up.name}/{name}"
        up = up.parent
    return None


# --- the table of docs/tested-against.md -------------------------------------------------------------------


NOT_OBSERVED = "-"


def _cell(v: Any) -> str:
    if v is None:
        return NOT_OBSERVED
    if isinstance(v, list):
        return "; ".join(v) if v else "none"
    return str(v).replace("|", "\\|")


def _components(comps: Sequence[Mapping[str, str]]) -> str:
    parts = []
    for origin, label in (
        ("nvidia-upstream", "NVIDIA"),
        ("other-upstream", "other upstream"),
        ("project", "this project"),
    ):
        mine = [f"{c['name']} {c['version']}" for c in comps if c["origin"] == origin]
        if mine:
            parts.append(f"{label}: " + ", ".join(mine))
    return "; ".join(parts)


def render_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """docs/tested-against.md's block for ``runs`` (without the markers): the results table,
    then each run's components, with a trailing newline."""
    columns = ["date (UTC)", "machine", "mode", "up", "allocatable", "smoke", "compute", "verify"]
    columns += ["negative", "destroy", "leftovers", "record"]
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join(["---"] * len(columns)) + " |"]
    for e in runs:
        r = e["results"]
        cells = [
            e["date"].replace("T", " "),
            _cell(e["machine"]),
            f"`{e['mode']}`",
            *(_cell(r[k]) for k in RESULT_KEYS),
            f"`{e['path'].removeprefix('tests/data/')}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"`{NOT_OBSERVED}`: not observed in that run (never a pass). Components of each run:", ""]
    lines += [f"- {e['date'].replace('T', ' ')} `{e['mode']}`: {_components(e['components'])}" for e in runs]
    return "\n".join(lines) + "\n"


def readme_block(runs: Sequence[Mapping[str, Any]]) -> str:
    """What docs/tested-against.md holds between the markers (markers included)."""
    return f"{BEGIN}\n{render_table(runs)}{END}"


def readme_table(text: str) -> str:
    """The page's block between the markers (markers included).

    Raises:
        RealRunsError: the markers are missing or out of order.
    """
    start, end = text.find(BEGIN), text.find(END)
    if start == -1 or end == -1 or end < start:
        raise RealRunsError(f"{TABLE_PAGE.name}: no {BEGIN} ... {END} block")
    return text[start : end + len(END)]


def update_readme(text: str, runs: Sequence[Mapping[str, Any]]) -> str:
    """``text`` (docs/tested-against.md) with its block replaced by the one rendered from ``runs``."""
    return text.replace(readme_table(text), readme_block(runs))


# --- a recorded run: record it, derive its entry ----------------------------------------

#: What a lab-mode run (run.sh lab) keeps under tests/data: what the replay reads, the cards,
#: the negative's output; every command's tail is in summary.json.
LAB_KEEP: tuple[str, ...] = (
    "summary.json",
    "harness.log",
    "facts.json",
    "cmd-host-query-gpu.out",
    "cmd-host-nvidia-smi-L.out",
    "node-with-gpu.json",
    "plugin-daemonset.json",
    "lab-outputs-existing.json",
    "lab-outputs-after-failed-verify.json",
    "lab-tflops.json",
    "lab-baseline-card.json",
    "lab-baseline-card.md",
    "card-after-failed-verify/baseline-card.json",
    "lab-verify-unhealthy.out",
)


def node_record_module() -> ModuleType:
    """hack/node/record.py (read-only use: its record() and Redactor)."""
    spec = importlib.util.spec_from_file_location("node_record", ROOT / "hack" / "node" / "record.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(files_at: Path, dest: Path, keep: Sequence[str] | None = LAB_KEEP) -> list[str]:
    """Record the device call's results under ``files_at`` (summary.json, harness.log,
    work.tar.gz) into ``dest``: hack/node/record.py's record() (GPU UUIDs replaced, the
    same UUID by the same placeholder in every file) into a scratch folder, then only the
    files of ``keep`` copied (None: every file record.py wrote). A README.md already in ``dest``
    stays; other files are replaced.
    Returns the GPU UUIDs replaced (their placeholders)."""
    mod = node_record_module()
    with tempfile.TemporaryDirectory() as tmp:
        red = mod.record(files_at, Path(tmp) / "run")
        dest.mkdir(parents=True, exist_ok=True)
        made = Path(tmp) / "run"
        names = (
            keep
            if keep is not None
            else [p.relative_to(made).as_posix() for p in made.rglob("*") if p.is_file()]
        )
        for name in names:
            src = made / name
            if src.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest / name)
    return sorted(red.seen.values())


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _version(text: str) -> str | None:
    m = re.search(r"\bv?(\d+\.\d+\.\d+)", text)
    return f"v{m.group(1)}" if m else None


def manifest_versions(run: Path) -> dict[str, str]:
    """MANIFEST's binary -> version (hack/node/build.sh --stage), where recorded."""
    path = run / "MANIFEST"
    if not path.is_file():
        return {}
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip()]
    return {row[1]: row[2] for row in rows}


def host_driver(run: Path) -> str | None:
    """The host's NVIDIA driver as the run recorded it (summary.json's host, else an
    nvidia-smi --query-gpu capture)."""
    summary = _json(run / "summary.json") or {}
    drivers = {g.get("driver") for g in summary.get("host") or []}
    if len(drivers) == 1:
        return drivers.pop()
    for name in ("cmd-host-query-gpu.out", "query-gpu.csv"):
        path = run / name
        if path.is_file():
            rows = [ln.split(", ") for ln in path.read_text(encoding="utf-8").splitlines()]
            found = {row[3] for row in rows if len(row) >= 6 and re.match(r"^\d+$", row[0])}
            if len(found) == 1:
                return found.pop()
    return None


def _host_gpus(run: Path) -> list[str]:
    """The host's GPU names, from the nvidia-smi --query-gpu capture (else summary.json's host)."""
    path = run / "cmd-host-query-gpu.out"
    if path.is_file():
        rows = [ln.split(", ") for ln in path.read_text(encoding="utf-8").splitlines()]
        names = [row[1] for row in rows if len(row) >= 6 and re.match(r"^\d+$", row[0])]
        if names:
            return names
    summary = _json(run / "summary.json") or {}
    return [g.get("name", "?") for g in summary.get("host") or []]


def derive_machine(run: Path) -> str | None:
    """The machine in words from what the run recorded: its GPUs, OS and kernel."""
    facts = _json(run / "facts.json")
    gpus = _host_gpus(run)
    if not facts or not gpus:
        return None
    names = sorted(set(gpus))
    os_name = re.search(r'PRETTY_NAME="([^"]+)"', facts.get("osRelease", ""))
    kernel = (facts.get("uname") or [None, None, "?"])[2]
    return (
        f"{len(gpus)}x {', '.join(names)}; {os_name.group(1) if os_name else 'OS not recorded'}; "
        f"kernel {kernel}"
    )


#: A staged binary (MANIFEST's, hack/node/build.sh) -> its component and origin.
BINARIES: dict[str, tuple[str, str]] = {
    "gpulab-kube": (
        "Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet)",
        "other-upstream",
    ),
    "etcd": ("etcd", "other-upstream"),
    "gpulab-containerd": ("containerd (+ containerd-shim-runc-v2)", "other-upstream"),
    "containerd-shim-runc-v2": ("containerd (+ containerd-shim-runc-v2)", "other-upstream"),
    "runc": ("runc", "other-upstream"),
    "nvidia-ctk": ("NVIDIA Container Toolkit (nvidia-ctk: CDI spec, hooks)", "nvidia-upstream"),
    "nvidia-container-runtime": ("NVIDIA Container Toolkit (nvidia-container-runtime)", "nvidia-upstream"),
    "nvidia-device-plugin": ("NVIDIA k8s-device-plugin (nvidia-device-plugin)", "nvidia-upstream"),
    "gpu-feature-discovery": ("NVIDIA k8s-device-plugin (gpu-feature-discovery)", "nvidia-upstream"),
    "config-manager": ("NVIDIA k8s-device-plugin (config-manager)", "nvidia-upstream"),
    "mps-control-daemon": ("NVIDIA k8s-device-plugin (mps-control-daemon)", "nvidia-upstream"),
    "nfd-master": ("node-feature-discovery (nfd-master, nfd-worker, nfd-gc)", "other-upstream"),
    "nfd-worker": ("node-feature-discovery (nfd-master, nfd-worker, nfd-gc)", "other-upstream"),
    "nfd-gc": ("node-feature-discovery (nfd-master, nfd-worker, nfd-gc)", "other-upstream"),
    "bridge": ("CNI plugins (bridge, host-local, loopback)", "other-upstream"),
    "host-local": ("CNI plugins (bridge, host-local, loopback)", "other-upstream"),
    "loopback": ("CNI plugins (bridge, host-local, loopback)", "other-upstream"),
    "gpulab-device-plugin": ("gpulab-device-plugin (hack/node/deviceplugin)", "project"),
    "gpulab-pause": (
        "the harness's images and programs (gpulab-vectoradd, gpulab-pause, image.py)",
        "project",
    ),
    "gpulab-vectoradd": (
        "the harness's images and programs (gpulab-vectoradd, gpulab-pause, image.py)",
        "project",
    ),
}
#: facts.json's ``versions`` key -> the binary it is the version of (where no MANIFEST was kept).
FACTS_BINARIES = {
    "kubelet": "gpulab-kube",
    "etcd": "etcd",
    "containerd": "gpulab-containerd",
    "runc": "runc",
    "nvidia-ctk": "nvidia-ctk",
    "bridge": "bridge",
}
#: The project's binaries that facts.json does not version (where no MANIFEST was kept, the
#: runs so far staged them all).
HARNESS_BINARIES = ("gpulab-device-plugin", "gpulab-vectoradd")


def _binary(name: str) -> tuple[str, str]:
    """A staged binary's component and origin; one the table does not know is named as
    guessed, for the person adding the entry to check."""
    if name in BINARIES:
        return BINARIES[name]
    origin = (
        "project"
        if name.startswith("gpulab")
        else "nvidia-upstream"
        if "nvidia" in name
        else "other-upstream"
    )
    return f"{name} (origin guessed from its name: check it)", origin


def derive_components(run: Path, revision: str | None = None) -> list[dict[str, str]]:
    """The components a real-node run recorded: the staged binaries (MANIFEST's names and
    versions, the project's at the staged commit; where no MANIFEST was kept, facts.json's
    ``--version`` outputs), the host's driver, and for a lab-mode run the Pulumi pieces
    (summary.json) and the Python packages its card recorded (toolVersions). ``revision``: the
    project's commit where no MANIFEST says it. MANIFEST lists what was staged: drop from the
    entry what the run did not use."""
    facts = _json(run / "facts.json") or {}
    versions: Mapping[str, str] = facts.get("versions") or {}
    manifest = manifest_versions(run)
    rev = next((v for b, v in manifest.items() if _binary(b)[1] == "project"), None)
    rev = rev or revision or "unknown (not recorded)"
    staged = dict(manifest) or {b: _version(versions[k]) for k, b in FACTS_BINARIES.items() if k in versions}
    if not manifest:
        for b in HARNESS_BINARIES:
            staged.setdefault(b, rev)
    comps: list[dict[str, str]] = []

    def add(name: str, version: str | None, origin: str) -> None:
        comps.append({"name": name, "version": version or "unknown (not recorded)", "origin": origin})

    summary = _json(run / "summary.json") or {}
    if summary.get("mode") in ("lab-nvidia", "lab-dra"):
        # NVIDIA's device plugin ran there; the project's was staged but never deployed.
        staged.pop("gpulab-device-plugin", None)
    lab = summary.get("lab") or {}
    what = (
        "the lab's own scripts/lab and Pulumi program"
        if lab
        else "the lab's commands as the program renders them"
    )
    add(f"gpu-lab ({what})", rev, "project")
    add("NVIDIA driver (NVML, nvidia-smi, libcuda)", host_driver(run), "nvidia-upstream")
    grouped: dict[tuple[str, str], list[str]] = {}
    for binary in sorted(
        staged, key=lambda b: (list(BINARIES).index(b) if b in BINARIES else len(BINARIES), b)
    ):
        version = staged[binary] or "unknown (not recorded)"
        versions_of = grouped.setdefault(_binary(binary), [])
        if version not in versions_of:
            versions_of.append(version)
    for (name, origin), vs in grouped.items():
        add(name, ", ".join(vs), origin)
    if lab:
        add(
            "Pulumi CLI (the offline build)",
            (lab.get("pulumi-version") or {}).get("tail", "").strip() or None,
            "other-upstream",
        )
        kube_argv = (lab.get("plugin-kubernetes") or {}).get("argv") or []
        add(
            "pulumi-resource-kubernetes (provider)",
            next((a for a in kube_argv if re.match(r"^v\d+\.\d+\.\d+$", a)), None),
            "other-upstream",
        )
        tail = (lab.get("plugin-command") or {}).get("tail", "")
        m = re.search(r"resource-command-(v\d+\.\d+\.\d+)", tail)
        add(
            "pulumi-resource-command (the project's offline stand-in, hack/offline/command)",
            m and m.group(1),
            "project",
        )
        add("pulumi-language-python (the project's offline stand-in, hack/offline/langhost)", None, "project")
        card = _json(run / "lab-baseline-card.json") or {}
        tools: Mapping[str, str] = card.get("toolVersions") or {}
        for dist, name in (
            ("pulumi", "Pulumi Python SDK (pulumi)"),
            ("pulumi-kubernetes", "pulumi-kubernetes (Python SDK)"),
            ("pulumi-policy", "pulumi-policy"),
            ("kubernetes", "kubernetes (Python client)"),
            ("python", "Python"),
        ):
            if dist in tools:
                add(name, tools[dist], "other-upstream")
        tflops = _json(run / "lab-tflops.json") or {}
        if tflops.get("backend"):
            add(
                "PyTorch (the card's TFLOPS, gpulab.tflops)",
                str(tflops["backend"]).removeprefix("torch "),
                "other-upstream",
            )
    else:
        add("kubernetes (Python client)", None, "other-upstream")
        if facts.get("python"):
            add("Python", str(facts["python"]).split()[0], "other-upstream")
    add("nvidia-ml-py (the host probe's NVML binding)", None, "nvidia-upstream")
    return comps


def _leftovers(summary: Mapping[str, Any]) -> list[str] | None:
    left = summary.get("leftovers")
    if not isinstance(left, Mapping):
        return None
    found = [f"process: {p}" for p in left.get("processes") or []]
    found += [f"mount: {m}" for m in left.get("mounts") or []]
    found += [f"pod process: {p}" for p in left.get("podProcesses") or []]
    if left.get("kubepodsCgroup"):
        found.append("the kubepods cgroup")
    cluster = left.get("cluster")
    if isinstance(cluster, Mapping):  # run.sh lab-nvidia's census of the cluster after destroy
        found += [
            f"customresourcedefinition/{c} (Helm leaves a chart's crds/)" for c in cluster.get("crds") or []
        ]
        for key in ("namespace", "daemonSets", "deployments", "configMaps", "serviceAccounts"):
            found += [f"{key}: {n}" for n in cluster.get(key) or []]
        found += [f"node label {x}" for x in cluster.get("nodeLabels") or []]
        found += [f"resourceslice/{n}" for n in cluster.get("resourceSlices") or []]
        found += [f"file {f}" for f in cluster.get("pluginFiles") or []]
        found += [f"runtimeclass/{n} (the harness's node setup)" for n in cluster.get("runtimeClasses") or []]
        if cluster.get("containerdNvidiaRuntime"):
            found.append("containerd's nvidia runtime (the harness's node setup)")
        found += [f"CDI spec {c} (the harness's node setup)" for c in cluster.get("cdiSpecs") or []]
    if left.get("cni0"):
        found.append(CNI0)
    return found


def _first_json(run: Path, names: Sequence[str], wanted: bool) -> Any:
    """The first of ``names`` recorded in ``run`` (None unless ``wanted``, or none there)."""
    for name in names if wanted else ():
        if (run / name).is_file():
            return _json(run / name)
    return None


def _check(step: Any, ok: bool = True) -> str | None:
    """'pass'/'fail' from a recorded command (rc 0 and ``ok``), None when it did not run."""
    if not isinstance(step, Mapping) or "rc" not in step:
        return None
    return "pass" if step["rc"] == 0 and ok else "fail"


def derive_results(run: Path) -> dict[str, Any]:
    """The results a real-node run's record says (hack/node/device/node.py's
    summary.json; for a lab-mode run its stack outputs and card too). Every value not
    observed is None."""
    summary = _json(run / "summary.json")
    r: dict[str, Any] = dict.fromkeys(RESULT_KEYS)
    if not isinstance(summary, Mapping):
        return r
    r["leftovers"] = _leftovers(summary)
    lab = summary.get("lab")
    if isinstance(lab, Mapping):
        r["upExitCode"] = (lab.get("up") or {}).get("rc")
        r["destroyExitCode"] = (lab.get("destroy") or {}).get("rc")
        verify = lab.get("verify-unhealthy") or lab.get("verify-tainted")
        if isinstance(verify, Mapping):
            # 124: the harness stopped it at the run's budget: it did not fail within its bound.
            r["negative"] = "pass" if verify.get("rc") not in (0, None, 124) else "fail"
        # run.sh lab keeps lab-outputs-existing.json; lab-nvidia names the stack first.
        up_ok = r["upExitCode"] == 0
        outputs = _first_json(run, ("lab-outputs-existing.json", "lab-existing-outputs-existing.json"), up_ok)
        card = _first_json(run, ("lab-baseline-card.json", "lab-existing-baseline-card.json"), up_ok)
        if isinstance(outputs, Mapping):
            r["allocatable"] = outputs.get("allocatableGpus")
        if isinstance(card, Mapping):
            items = {i["id"]: i["status"] for i in card["checklist"]["items"]}
            smoke = [
                items.get(k)
                for k in ("driver-version-matches", "pods-see-every-gpu", "events-scheduled-and-pulled")
            ]
            # pods-see-every-gpu is "not tested" under time-slicing: the smoke Pod's own checks decide.
            seen = [s for s in smoke if s != "not-tested"]
            r["smoke"] = (
                "pass"
                if len(seen) >= 2 and all(s == "pass" for s in seen)
                else "fail"
                if "fail" in smoke
                else None
            )
            r["compute"] = {"pass": "pass", "fail": "fail"}.get(items.get("compute-works", ""))
            r["verify"] = card["checklist"]["result"]
        return r
    gate = summary.get("gate") or {}
    fleet = (summary.get("fleet") or {}).get("check") or {}
    facts = gate.get("stdout") if isinstance(gate.get("stdout"), Mapping) else fleet.get("stdout")
    if isinstance(facts, Mapping):
        r["allocatable"] = facts.get("allocatableGpus")
    comparison = summary.get("smokeComparison") or {}
    r["smoke"] = _check(
        summary.get("smoke"), bool(comparison.get("driverMatches") and comparison.get("uuidsMatch"))
    )
    compute = summary.get("compute")
    passed = isinstance(compute, Mapping) and (compute.get("stdout") or {}).get("computeResult") == "passed"
    r["compute"] = _check(compute, passed)
    negative = summary.get("negative") or {}
    check = negative.get("gate") or negative.get("fleet")
    if isinstance(check, Mapping):
        r["negative"] = "pass" if check.get("rc") not in (0, None) else "fail"
    return r


def mode_of(summary: Mapping[str, Any]) -> str:
    """The index's mode of a hack/node run's summary.json.

    Raises:
        RealRunsError: a mode the index does not know.
    """
    mode = summary.get("mode")
    if mode not in SUMMARY_MODES:
        raise RealRunsError(f"summary.json mode {mode!r}: not one of {', '.join(SUMMARY_MODES)}")
    config = (summary.get("lab") or {}).get("config") or {}
    return "lab-found" if mode == "lab" and config.get("gpu-lab:gpuStack") == "found" else SUMMARY_MODES[mode]


def derive_entry(
    run: Path, *, revision: str | None = None, machine: str | None = None, notes: str | None = None
) -> dict[str, Any]:
    """An index entry for the real-node run recorded at ``run`` (a folder under tests/data).

    Raises:
        RealRunsError: ``run`` has no summary.json of hack/node's, or one of a mode the
            index does not know.
    """
    summary = _json(run / "summary.json")
    if not isinstance(summary, Mapping):
        raise RealRunsError(f"{run}: no summary.json of a hack/node run")
    started = str(summary.get("startedAt", ""))
    rel = run.resolve().relative_to(ROOT).as_posix()
    return {
        "date": started[:16] + "Z" if len(started) >= 16 else started,
        "machine": machine or derive_machine(run) or "unknown (not recorded)",
        "mode": mode_of(summary),
        "path": rel,
        "components": derive_components(run, revision),
        "results": derive_results(run),
        "notes": notes
        or f"derived from {rel} by tests.support.real_runs add; say what ran and what stood in",
    }


# --- CLI --------------------------------------------------------------------------------


def _write_index(runs: list[dict[str, Any]]) -> None:
    path = INDEX
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["runs"] = runs
    validate(doc)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point (see the module docstring); 0 ok, 1 the table differs / invalid index, 2 usage."""
    ap = argparse.ArgumentParser(
        prog="python -m tests.support.real_runs", description=__doc__.splitlines()[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check", help="validate tests/data/real-runs.json")
    sub.add_parser("table", help="print the Markdown table")
    p = sub.add_parser("readme", help="compare docs/tested-against.md's table with the index (or --write it)")
    p.add_argument("--write", action="store_true")
    p = sub.add_parser("record", help="a lab-mode device call's results into tests/data (UUIDs replaced)")
    p.add_argument("files_at", type=Path)
    p.add_argument("dest", type=Path)
    p.add_argument("--all", action="store_true", help="keep every file record.py writes, not LAB_KEEP's")
    p = sub.add_parser("add", help="derive a recorded real-node run's entry")
    p.add_argument("--from", dest="run", type=Path, required=True)
    p.add_argument("--revision", help="the project's commit the run staged, where no MANIFEST says it")
    p.add_argument("--machine")
    p.add_argument("--notes")
    p.add_argument("--write", action="store_true", help="append it to the index and rewrite the docs' table")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "record":
            placeholders = record(args.files_at, args.dest, None if args.all else LAB_KEEP)
            print(f"recorded {args.dest}: {len(placeholders)} GPU UUID(s) replaced; write its README.md")
            return 0
        if args.cmd == "add":
            entry = derive_entry(args.run, revision=args.revision, machine=args.machine, notes=args.notes)
            print(json.dumps(entry, indent=2, ensure_ascii=False))
            if args.write:
                runs = sorted([*load(), entry], key=lambda e: e["date"])
                _write_index(runs)
                page = TABLE_PAGE.read_text(encoding="utf-8")
                TABLE_PAGE.write_text(update_readme(page, runs), encoding="utf-8")
                print(f"added to {INDEX}; {TABLE_PAGE}'s table rewritten", file=sys.stderr)
            return 0
        runs = load()
        if args.cmd == "check":
            print(f"{INDEX.relative_to(ROOT)}: {len(runs)} runs, valid")
        elif args.cmd == "table":
            print(render_table(runs), end="")
        elif args.cmd == "readme":
            text = TABLE_PAGE.read_text(encoding="utf-8")
            if args.write:
                TABLE_PAGE.write_text(update_readme(text, runs), encoding="utf-8")
            elif readme_table(text) != readme_block(runs):
                print(
                    "docs/tested-against.md's real-runs table differs from tests/data/real-runs.json: run "
                    "python -m tests.support.real_runs readme --write",
                    file=sys.stderr,
                )
                return 1
    except RealRunsError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
