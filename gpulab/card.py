"""The baseline card (环境基线卡): what this lab is, what it proved, and what it still lacks.

Built from the stack outputs (``pulumi stack output --json``, keys in :mod:`gpulab.outputs`)
plus, optionally, a measurement from :mod:`gpulab.tflops`. Pure functions
(:func:`build_card`, :func:`render_markdown`) and a CLI::

    python -m gpulab.card --outputs OUTPUTS.json [--tflops TFLOPS.json] [--out-dir DIR]
                          [--time-slicing-replicas N]

writes ``DIR/baseline-card.json`` and ``DIR/baseline-card.md``. Exit codes: 0 the checklist
passed (``not-observable-in-simulation`` counts as passed); 1 an item failed or could not be
evaluated; 2 usage error or unreadable input (the message names the file and the problem).

JSON schema ``gpulab.dev/baseline-card/v1``, top-level keys: ``schema``, ``generatedAt``,
``simulated``, ``simulatedFields``, ``host``, ``cluster``, ``operator``, ``smoke``,
``checklist`` (``result``, ``exitCode``, ``items``), ``measuredTflops``, ``toolVersions``,
``capabilityBoundary``, ``redacted``. Each fact in ``host``/``cluster``/``operator``/``smoke``
is ``{"value": ..., "source": <output key>, "simulated": bool, "known": bool}``; ``known`` is
False when the output was missing (a value is never invented).

Secrets never reach the card: the ``kubeconfig`` output is dropped, and any string that is
``"[secret]"`` (how ``pulumi stack output`` prints a secret) or looks like a kubeconfig or a
PEM block is replaced by ``"[redacted]"``, its place listed under ``redacted``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from gpulab import checklist, peaks
from gpulab import outputs as o

__all__ = [
    "CAPABILITY_BOUNDARY",
    "SCHEMA",
    "build_card",
    "main",
    "render_markdown",
    "sanitize",
]

SCHEMA: Final = "gpulab.dev/baseline-card/v1"
REDACTED: Final = "[redacted]"
HOW_TO_MEASURE: Final = (
    "on the host: python -m gpulab.tflops --json > tflops.json (needs PyTorch or CuPy), then "
    "python -m gpulab.card --outputs outputs.json --tflops tflops.json"
)

#: The chapter's table 3 (表 3, what you have and still lack): capability, status, where next.
CAPABILITY_BOUNDARY: Final[tuple[tuple[str, str, str], ...]] = (
    ("GPU scheduled as nvidia.com/gpu", "have", "this chapter"),
    (
        "GPU sharing: one card for several Pods, memory-level quota",
        "missing: the whole card is the smallest unit",
        "data plane: MIG, HAMi, DRA",
    ),
    (
        "Queues, quotas, priorities, fair sharing",
        "missing: no governance yet",
        "control plane: Kueue, Volcano",
    ),
    (
        "Topology-aware placement (NVLink/NUMA)",
        "missing: the scheduler has no topology view",
        "NUMA-aware scheduling, placement policies",
    ),
    (
        "Metrics semantics: GPU utilisation, memory, health",
        "partial: DCGM exporter deployed, semantics not built",
        "observability and acceptance",
    ),
    (
        "Other accelerators (beyond NVIDIA)",
        "missing: NVIDIA path only",
        "accelerator landscape, Ascend case study",
    ),
)

_PEM_RE: Final = re.compile(r"-----BEGIN [A-Z ]+-----")
_KUBECONFIG_RE: Final = re.compile(
    r"(client-key-data|client-certificate-data|certificate-authority-data|\btoken)\s*:"
    r"|\bkind:\s*Config\b|^\s*(clusters|users|contexts)\s*:",
    re.MULTILINE,
)


def _looks_secret(text: str) -> bool:
    return text.strip() == "[secret]" or bool(_PEM_RE.search(text)) or bool(_KUBECONFIG_RE.search(text))


def sanitize(value: Any, path: str = "", redacted: list[str] | None = None) -> Any:
    """A deep copy of a JSON value with secret-looking strings replaced by ``"[redacted]"``.

    Secret-looking: ``"[secret]"``, a PEM block (``-----BEGIN ...-----``), or kubeconfig
    text (``client-key-data:``, ``token:``, ``kind: Config``, ``clusters:``/``users:``
    sections). Paths of replaced strings (``"host.gpus[0].name"``) are appended to
    ``redacted`` when given. Mapping keys are kept as strings.
    """
    if isinstance(value, str):
        if _looks_secret(value):
            if redacted is not None:
                redacted.append(path or "<value>")
            return REDACTED
        return value
    if isinstance(value, Mapping):
        return {str(k): sanitize(v, f"{path}.{k}" if path else str(k), redacted) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v, f"{path}[{i}]", redacted) for i, v in enumerate(value)]
    return value


class _Facts:
    def __init__(self, outputs: Mapping[str, Any], redacted: list[str]) -> None:
        self.outputs = outputs
        self.redacted = redacted
        self.simulated_lab = outputs.get(o.SIMULATED) is True
        fields = outputs.get(o.SIMULATED_FIELDS)
        self.sim_fields: frozenset[str] | None = (
            frozenset(str(f) for f in fields) if isinstance(fields, list) else None
        )

    def is_simulated(self, key: str) -> bool:
        if self.sim_fields is None:
            # Simulated lab without the list: label everything, never under-report.
            return self.simulated_lab
        return key in self.sim_fields

    def fact(self, key: str, value: Any = None, *, derived: bool = False) -> dict[str, Any]:
        known = not checklist.is_unknown(self.outputs, key)
        raw = value if derived else self.outputs.get(key)
        return {
            "value": sanitize(raw, key, self.redacted) if known else None,
            "source": key,
            "simulated": self.is_simulated(key),
            "known": known,
        }


def _memory_per_gpu(gpus: Any) -> list[int | None] | None:
    if not isinstance(gpus, list):
        return None
    return [g.get("memoryMiB") if isinstance(g, Mapping) else None for g in gpus]


def _first_model(outputs: Mapping[str, Any]) -> str | None:
    models = outputs.get(o.HOST_GPU_MODELS)
    if isinstance(models, list) and models and isinstance(models[0], str):
        return models[0]
    return None


def _validate_tflops(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    results = doc.get("results")
    if not isinstance(results, Mapping) or not results:
        raise ValueError("a gpulab.tflops document needs a non-empty 'results' object")
    for dtype, r in results.items():
        if not isinstance(r, Mapping) or not (
            r.get("tflops") is None or isinstance(r.get("tflops"), (int, float))
        ):
            raise ValueError(f"results.{dtype} must be an object with a numeric 'tflops' or null")
    return results


def _tflops_section(facts: _Facts, tflops: Mapping[str, Any] | None, redacted: list[str]) -> dict[str, Any]:
    outputs = facts.outputs
    host_model = _first_model(outputs)
    if tflops is not None:
        results = _validate_tflops(tflops)
        gpu = str(tflops.get("gpu") or host_model or "")
        section: dict[str, Any] = {
            "status": "measured",
            "source": "gpulab.tflops document (--tflops)",
            "simulated": tflops.get("simulated") is True,
            "gpu": gpu or None,
            "driver": tflops.get("driver"),
            "backend": tflops.get("backend"),
            "size": tflops.get("size"),
            "measuredAt": tflops.get("measuredAt"),
            "peakSource": tflops.get("peakSource") or _peak_source(gpu),
            "notes": tflops.get("notes") or {},
            "results": {},
        }
        for dtype, r in results.items():
            rate = r.get("tflops")
            peak = r.get("peak")
            if peak is None and dtype in peaks.DTYPES and gpu:
                peak = peaks.peak_for(gpu, dtype)
            fraction = r.get("fraction")
            if fraction is None and isinstance(rate, (int, float)) and peak:
                fraction = round(rate / peak, 3)
            section["results"][str(dtype)] = {"tflops": rate, "peak": peak, "fraction": fraction}
        warnings = []
        if host_model and gpu and gpu != host_model:
            warnings.append(f"measured on {gpu}, but the host's GPU is {host_model}")
        host_driver = outputs.get(o.HOST_DRIVER_VERSION)
        if tflops.get("driver") and host_driver and tflops.get("driver") != host_driver:
            warnings.append(f"measured with driver {tflops.get('driver')}, the host's is {host_driver}")
        if warnings:
            section["warning"] = "; ".join(warnings)
        return dict(sanitize(section, "measuredTflops", redacted))
    stored = outputs.get(o.MEASURED_TFLOPS)
    if isinstance(stored, Mapping) and stored:
        gpu = host_model or ""
        out: dict[str, Any] = {
            "status": "measured",
            "source": f"stack output {o.MEASURED_TFLOPS}",
            "simulated": facts.is_simulated(o.MEASURED_TFLOPS),
            "gpu": gpu or None,
            "peakSource": _peak_source(gpu),
            "results": {},
        }
        for dtype, v in stored.items():
            rate = v.get("tflops") if isinstance(v, Mapping) else v
            rate = rate if isinstance(rate, (int, float)) else None
            peak = peaks.peak_for(gpu, dtype) if gpu and dtype in peaks.DTYPES else None
            out["results"][str(dtype)] = {
                "tflops": rate,
                "peak": peak,
                "fraction": round(rate / peak, 3) if rate is not None and peak else None,
            }
        return dict(sanitize(out, "measuredTflops", redacted))
    return {"status": "not measured", "simulated": False, "howTo": HOW_TO_MEASURE}


def _peak_source(gpu: str) -> str | None:
    row = peaks.row_for(gpu) if gpu else None
    return row.source if row else None


def _replicas(outputs: Mapping[str, Any]) -> int:
    comps = outputs.get(o.OPERATOR_COMPONENTS)
    if isinstance(comps, Mapping):
        value = comps.get("timeSlicingReplicas")
        if isinstance(value, int) and value >= 1:
            return value
    return 1


def _boundary(outputs: Mapping[str, Any]) -> list[dict[str, str]]:
    comps = outputs.get(o.OPERATOR_COMPONENTS)
    dcgm_off = isinstance(comps, Mapping) and comps.get("dcgmExporter") is False
    rows = []
    for capability, status, where in CAPABILITY_BOUNDARY:
        if capability.startswith("Metrics") and dcgm_off:
            status = "missing: DCGM exporter switched off in this lab, semantics not built"
        rows.append({"capability": capability, "status": status, "where": where})
    return rows


def build_card(
    outputs: Mapping[str, Any],
    *,
    tflops: Mapping[str, Any] | None = None,
    tool_versions: Mapping[str, str] | None = None,
    now: datetime | None = None,
    time_slicing_replicas: int | None = None,
) -> dict[str, Any]:
    """Build the card (schema in the module docstring) from stack outputs.

    Args:
        outputs: ``pulumi stack output --json`` as a dict (secrets may print as
            ``"[secret]"``; they are dropped).
        tflops: a :mod:`gpulab.tflops` JSON document; without it the card uses
            ``outputs[MEASURED_TFLOPS]`` or says "not measured" and how to measure.
        tool_versions: e.g. ``{"pulumi": "3.272.0", "python": "3.11.9"}``.
        now: generation time (timezone-aware; default: the current UTC time).
        time_slicing_replicas: replicas per GPU for the allocatable check (default: the
            ``timeSlicingReplicas`` entry of ``outputs[OPERATOR_COMPONENTS]``, else 1).

    Raises:
        ValueError: ``tflops`` is not a tflops document (no ``results`` object), or ``now``
            is naive.
    """
    if now is None:
        now = datetime.now(UTC)
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    redacted: list[str] = []
    # The kubeconfig output is dropped before anything reads it.
    clean = {k: v for k, v in outputs.items() if k != o.KUBECONFIG}
    if o.KUBECONFIG in outputs:
        redacted.append(o.KUBECONFIG)
    facts = _Facts(clean, redacted)
    f = facts.fact
    gpus = clean.get(o.HOST_GPUS)

    tflops_section = _tflops_section(facts, tflops, redacted)
    eval_outputs = dict(clean)
    if tflops_section["status"] == "measured":
        eval_outputs[o.MEASURED_TFLOPS] = {k: v["tflops"] for k, v in tflops_section["results"].items()}
    replicas = time_slicing_replicas or _replicas(clean)
    items = checklist.evaluate(eval_outputs, time_slicing_replicas=replicas)

    sim_fields = clean.get(o.SIMULATED_FIELDS)
    card: dict[str, Any] = {
        "schema": SCHEMA,
        "generatedAt": now.isoformat(timespec="seconds"),
        "simulated": facts.simulated_lab,
        "simulatedFields": sorted(str(x) for x in sim_fields) if isinstance(sim_fields, list) else None,
        "host": {
            "gpuModels": f(o.HOST_GPU_MODELS),
            "gpuCount": f(o.HOST_GPU_COUNT),
            "memoryMiBPerGpu": f(o.HOST_GPUS, _memory_per_gpu(gpus), derived=True),
            "gpus": f(o.HOST_GPUS),
            "driverVersion": f(o.HOST_DRIVER_VERSION),
            "maxCuda": f(o.HOST_MAX_CUDA),
            "probeSource": f(o.HOST_PROBE_SOURCE),
        },
        "cluster": {
            "variant": f(o.CLUSTER_KIND),
            "kubernetesVersion": f(o.KUBERNETES_VERSION),
            "allocatableGpus": f(o.ALLOCATABLE_GPUS),
            "capacityGpus": f(o.CAPACITY_GPUS),
            "timeSlicingReplicas": replicas,
            "clusterPolicyState": f(o.CLUSTER_POLICY_STATE),
            "devicePluginPods": f(o.DEVICE_PLUGIN_PODS),
        },
        "operator": {
            "chartVersion": f(o.CHART_VERSION),
            "chartSource": f(o.CHART_SOURCE),
            "components": f(o.OPERATOR_COMPONENTS),
            "devicePluginOwner": f(o.DEVICE_PLUGIN_OWNER),
        },
        "smoke": {
            "phase": f(o.SMOKE_PHASE),
            "driverVersion": f(o.SMOKE_DRIVER_VERSION),
            "cudaVersion": f(o.SMOKE_CUDA_VERSION),
            "events": f(o.SMOKE_EVENTS),
            "image": f(o.SMOKE_IMAGE),
            "node": f(o.SMOKE_NODE),
        },
        "checklist": {
            "result": checklist.overall(items),
            "exitCode": checklist.exit_code(items),
            "items": [sanitize(i.to_json(), f"checklist.{i.id}", redacted) for i in items],
        },
        "measuredTflops": tflops_section,
        "toolVersions": sanitize(dict(tool_versions or {}), "toolVersions", redacted),
        "capabilityBoundary": _boundary(clean),
        "redacted": redacted,
    }
    return card


# --- Markdown -------------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, list):
        text = ", ".join(_plain(v) for v in value) or "(none)"
    elif isinstance(value, Mapping):
        text = ", ".join(f"{k}={_plain(v)}" for k, v in value.items()) or "(none)"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", "<br>")


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_plain(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _fact_cell(fact: Mapping[str, Any]) -> str:
    if not fact.get("known", True):
        return "(not in the outputs)"
    text = _cell(fact.get("value"))
    return f"{text} *(simulated)*" if fact.get("simulated") else text


def _facts_table(section: Mapping[str, Any], labels: Sequence[tuple[str, str]]) -> list[str]:
    lines = ["| Fact | Value | Output |", "| --- | --- | --- |"]
    for key, label in labels:
        fact = section[key]
        if isinstance(fact, Mapping) and "source" in fact:
            lines.append(f"| {label} | {_fact_cell(fact)} | `{fact['source']}` |")
        else:
            lines.append(f"| {label} | {_cell(fact)} | - |")
    return lines


def render_markdown(card: Mapping[str, Any]) -> str:
    """Render a card from :func:`build_card` as Markdown (tables; a SIMULATED banner first
    when the lab is simulated; every simulated value marked *(simulated)*)."""
    out: list[str] = ["# GPU lab baseline card", ""]
    if card.get("simulated"):
        fields = card.get("simulatedFields")
        listed = ", ".join(f"`{x}`" for x in fields) if fields else "all facts"
        out += [
            "> **SIMULATED.** This card comes from the simulated lab: a kwok node and captured "
            "`nvidia-smi` output, no GPU. Values marked *(simulated)* were not measured on "
            f"hardware ({listed}). The scheduler and the API server are real; the kubelet, "
            "the image pulls and the GPU are not.",
            "",
        ]
    checklist_part = card["checklist"]
    out += [
        f"Schema `{card['schema']}`, generated {card['generatedAt']}. "
        f"Checklist: **{checklist_part['result']}** (exit code {checklist_part['exitCode']})"
        + (
            ", on simulated values: it proves the scheduling path, not the GPU."
            if card.get("simulated")
            else "."
        ),
        "",
        "## Host",
        "",
        *_facts_table(
            card["host"],
            [
                ("gpuModels", "GPU model"),
                ("gpuCount", "GPU count"),
                ("memoryMiBPerGpu", "Memory per GPU (MiB)"),
                ("driverVersion", "Driver version"),
                ("maxCuda", "Max CUDA (driver)"),
                ("probeSource", "Probe source"),
            ],
        ),
        "",
        "## Cluster",
        "",
        *_facts_table(
            card["cluster"],
            [
                ("variant", "Variant"),
                ("kubernetesVersion", "Kubernetes"),
                ("allocatableGpus", "Allocatable nvidia.com/gpu"),
                ("capacityGpus", "Capacity nvidia.com/gpu"),
                ("timeSlicingReplicas", "Time-slicing replicas"),
                ("clusterPolicyState", "ClusterPolicy state"),
                ("devicePluginPods", "Device-plugin pods"),
            ],
        ),
        "",
        "## GPU Operator",
        "",
        *_facts_table(
            card["operator"],
            [
                ("chartVersion", "Chart version"),
                ("chartSource", "Chart source"),
                ("components", "Components"),
                ("devicePluginOwner", "Device-plugin owner"),
            ],
        ),
        "",
        "## Smoke test",
        "",
        *_facts_table(
            card["smoke"],
            [
                ("phase", "Phase"),
                ("driverVersion", "Driver (from the Pod's nvidia-smi)"),
                ("cudaVersion", "CUDA (from the Pod's nvidia-smi)"),
                ("events", "Events"),
                ("image", "Image"),
                ("node", "Node"),
            ],
        ),
        "",
        "## Checklist",
        "",
        "| Item | Status | Observed | Expected | First fix |",
        "| --- | --- | --- | --- | --- |",
    ]
    for item in checklist_part["items"]:
        status = item["status"].upper() if item["status"] == "fail" else item["status"]
        sim = " *(simulated)*" if item.get("simulated") else ""
        out.append(
            f"| `{item['id']}`: {_cell(item['title'])} | {status}{sim} | {_cell(item['observed'])}"
            f" | {_cell(item['expected'])} | {_cell(item['fix'])} |"
        )
    out += ["", "## Measured TFLOPS", ""]
    tf = card["measuredTflops"]
    if tf.get("status") == "measured":
        sim = " *(simulated)*" if tf.get("simulated") else ""
        about = ", ".join(
            f"{label} {tf[key]}"
            for key, label in (
                ("gpu", "GPU"),
                ("backend", "backend"),
                ("size", "size"),
                ("measuredAt", "measured at"),
            )
            if tf.get(key) is not None
        )
        out += [
            f"Dense matmul, {about}{sim}. Peaks are dense datasheet figures (no sparsity)"
            + (f": {tf['peakSource']}." if tf.get("peakSource") else "."),
            "",
            "| dtype | TFLOP/s | Datasheet peak | Fraction of peak |",
            "| --- | --- | --- | --- |",
        ]
        for dtype, r in tf["results"].items():
            frac = r.get("fraction")
            out.append(
                f"| {dtype} | {_cell(r.get('tflops'))}{sim} | {_cell(r.get('peak'))} | "
                f"{'-' if frac is None else f'{frac:.1%}'} |"
            )
        notes = tf.get("notes") or {}
        if notes:
            out += ["", *(f"- {dtype}: {_cell(note)}" for dtype, note in notes.items())]
        if tf.get("warning"):
            out += ["", f"**Warning:** {tf['warning']}"]
    else:
        out.append(f"Not measured. To measure: {tf.get('howTo', HOW_TO_MEASURE)}.")
    out += ["", "## Tool versions", ""]
    versions = card.get("toolVersions") or {}
    if versions:
        out += ["| Tool | Version |", "| --- | --- |"]
        out += [f"| {_cell(k)} | {_cell(v)} |" for k, v in versions.items()]
    else:
        out.append("(none recorded)")
    out += [
        "",
        "## What the lab still lacks",
        "",
        "| Capability | Status | Where next |",
        "| --- | --- | --- |",
        *(
            f"| {_cell(r['capability'])} | {_cell(r['status'])} | {_cell(r['where'])} |"
            for r in card["capabilityBoundary"]
        ),
    ]
    if card.get("redacted"):
        out += ["", f"Redacted (secrets, never printed): {', '.join(card['redacted'])}."]
    return "\n".join(out) + "\n"


# --- CLI ------------------------------------------------------------------------------------


def _read_json(path: str, what: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {what} file {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{what} file {path} is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    if not isinstance(data, dict):
        raise ValueError(f"{what} file {path} must hold a JSON object, not {type(data).__name__}")
    return data


def _tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for dist in ("pulumi", "pulumi-kubernetes", "pulumi-policy", "kubernetes"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return versions


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 pass, 1 checklist failure, 2 usage/input)."""
    ap = argparse.ArgumentParser(
        prog="python -m gpulab.card",
        description="Write the lab's baseline card (baseline-card.md and baseline-card.json).",
    )
    ap.add_argument("--outputs", required=True, help="pulumi stack output --json, saved")
    ap.add_argument("--tflops", help="python -m gpulab.tflops --json, saved")
    ap.add_argument("--out-dir", default=".", help="where to write the card (default: .)")
    ap.add_argument("--time-slicing-replicas", type=int, default=None)
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage message
        return int(exc.code) if isinstance(exc.code, int) else 2
    if args.time_slicing_replicas is not None and args.time_slicing_replicas < 1:
        print("gpulab.card: --time-slicing-replicas must be >= 1", file=sys.stderr)
        return 2
    try:
        outputs = _read_json(args.outputs, "--outputs")
        tflops = _read_json(args.tflops, "--tflops") if args.tflops else None
        card = build_card(
            outputs,
            tflops=tflops,
            tool_versions=_tool_versions(),
            time_slicing_replicas=args.time_slicing_replicas,
        )
    except ValueError as exc:
        print(f"gpulab.card: {exc}", file=sys.stderr)
        return 2
    out_dir = Path(args.out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "baseline-card.json").write_text(
            json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (out_dir / "baseline-card.md").write_text(render_markdown(card), encoding="utf-8")
    except OSError as exc:
        print(f"gpulab.card: cannot write to {out_dir}: {exc}", file=sys.stderr)
        return 2
    result = card["checklist"]
    print(
        f"wrote {out_dir / 'baseline-card.md'} and {out_dir / 'baseline-card.json'}; "
        f"checklist: {result['result']}" + (" (simulated lab)" if card["simulated"] else "")
    )
    for item in result["items"]:
        if item["status"] in ("fail", "not-evaluated"):
            print(f"  {item['id']}: {item['status']}: {item['observed']}", file=sys.stderr)
            if item["status"] == "fail":
                print(f"    first fix: {item['fix']}", file=sys.stderr)
    return int(result["exitCode"])


if __name__ == "__main__":
    sys.exit(main())
