"""The baseline card as Markdown: :func:`render_markdown` of a card from
:func:`~gpulab.verdict.card.build_card`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from gpulab.verdict.card import hardware, timing
from gpulab.verdict.card.model import HOW_TO_MEASURE

#: What a person runs to measure the gate, the smoke test and the compute check again.
REMEASURE: Final = "make verify"

#: The card's fact sections as shown (Markdown and HTML): (card key, title, [(fact, label)]).
SECTIONS: Final[tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]] = (
    (
        "host",
        "Host",
        (
            ("gpuModels", "GPU model"),
            ("gpuCount", "GPU count"),
            ("memoryMiBPerGpu", "Memory per GPU (MiB)"),
            ("driverVersion", "Driver version"),
            ("maxCuda", "Max CUDA (driver)"),
            ("probeSource", "Probe source"),
        ),
    ),
    (
        "cluster",
        "Cluster",
        (
            ("variant", "Variant"),
            ("kubernetesVersion", "Kubernetes"),
            ("gpuResource", "GPU resource"),
            ("allocatableGpus", "Allocatable GPUs (of that resource)"),
            ("capacityGpus", "Capacity GPUs"),
            ("timeSlicingReplicas", "Time-slicing replicas"),
            ("clusterPolicyState", "ClusterPolicy state"),
            ("devicePluginPods", "Device-plugin pods"),
            ("adoptedObjects", "Someone else's, used as it is (adoptExisting)"),
        ),
    ),
    (
        "operator",
        "GPU stack",
        (
            ("gpuStack", "How the GPUs are served (gpuStack)"),
            ("chartVersion", "Chart version"),
            ("chartSource", "Chart source"),
            ("components", "Components"),
            ("devicePluginOwner", "Device-plugin owner"),
        ),
    ),
    (
        "smoke",
        "Smoke test",
        (
            ("phase", "Phase"),
            ("driverVersion", "Driver (from the Pod's nvidia-smi)"),
            ("cudaVersion", "CUDA (from the Pod's nvidia-smi)"),
            ("events", "Events"),
            ("image", "Image"),
            ("resource", "Resource requested"),
            (
                "allocationPath",
                "Allocation path proven (dra: a ResourceClaim; device-plugin: the counted resource)",
            ),
            ("dra", "DRA: the nodes' ResourceSlices and the Pod's claim"),
            ("node", "Node"),
        ),
    ),
    (
        "compute",
        "Compute check",
        (
            ("result", "Result (vector add on the GPU)"),
            ("gpus", "GPUs covered (vectorAdd containers that passed, one GPU each)"),
            ("phase", "Phase"),
            ("image", "Image"),
        ),
    ),
    (
        "queues",
        "Queues and quota (Kueue, gang_scheduling)",
        (
            ("quota", "Quota (from the measured allocatable)"),
            ("admitted", "Admitted first"),
            ("waited", "Waited, then admitted (Kueue's reason)"),
            ("gang", "More than the quota: never admitted in part"),
            ("unqueued", "A Pod without the queue label"),
            ("controller", "Kueue"),
        ),
    ),
)


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
    if fact.get("note"):
        text += f" ({_cell(fact['note'])})"
    return f"{text} *(simulated)*" if fact.get("simulated") else text


def _measured_cell(fact: Mapping[str, Any]) -> str:
    fresh = fact.get("freshness", timing.CONFIGURED)
    text = timing.label(fact.get("measuredAt"), fresh)
    return f"**{text}**" if fresh in (timing.EARLIER_RUN, timing.UNKNOWN) else text


def absent(section: Mapping[str, Any]) -> bool:
    """Every fact of the section is missing from the outputs (a stack from before they existed)."""
    facts = [f for f in section.values() if isinstance(f, Mapping) and "source" in f]
    return bool(facts) and not any(f.get("known", True) for f in facts)


def _facts_table(section: Mapping[str, Any], labels: Sequence[tuple[str, str]]) -> list[str]:
    if absent(section):
        return ["(not in this stack's outputs)"]
    lines = ["| Fact | Value | Measured | Output |", "| --- | --- | --- | --- |"]
    for key, label in labels:
        fact = section[key]
        if isinstance(fact, Mapping) and "source" in fact:
            lines.append(f"| {label} | {_fact_cell(fact)} | {_measured_cell(fact)} | `{fact['source']}` |")
        else:
            lines.append(f"| {label} | {_cell(fact)} | configured | - |")
    return lines


def _mig(section: Mapping[str, Any] | None) -> list[str]:
    """The ``## MIG`` lines (gpulab.verdict.card.mig): the strategy, each MIG resource, each GPU's mode."""
    if not section:
        return []
    lines = ["## MIG", "", "| Fact | Value | Measured | Output |", "| --- | --- | --- | --- |"]
    for row in section["rows"]:
        source = ", ".join(f"`{s}`" for s in str(row["source"]).split(", "))
        label = f"`{row['label']}`" if row.get("resource") else _cell(row["label"])
        lines.append(f"| {label} | {_fact_cell(row)} | {_measured_cell(row)} | {source} |")
    return [*lines, ""]


def _when_measured(card: Mapping[str, Any]) -> list[str]:
    """The newest run and each measurement's time; a warning naming those from earlier runs."""
    when = card.get("measurements") or {}
    run = timing.label(when.get("runAt"), timing.CURRENT).replace(" (this run)", "")
    out = [f"Newest run (`pulumi up`): {run}.", ""]
    out += ["| Measurement | Measured | Output |", "| --- | --- | --- |"]
    groups = when.get("groups") or {}
    for m in groups.values():
        out.append(f"| {_cell(m['what'])} | {_measured_cell(m)} | `{m['source']}` |")
    old = [groups[g]["what"].split(" (")[0] for g in timing.stale(when)]
    if old:
        out += [
            "",
            f"> **Not measured in the newest run (or when is not recorded):** {', '.join(old)}. "
            "Their values are shown with the time they were measured, not as current; "
            f"`{REMEASURE}` measures them again.",
        ]
    return out


#: The node table's columns: (row key, heading).
NODE_COLUMNS: Final = (
    ("node", "Node"),
    ("product", "Product"),
    ("expected", "Expected"),
    ("allocatable", "Allocatable"),
    ("smoke", "Smoke"),
    ("compute", "Compute"),
    ("dcgm", "DCGM"),
    ("status", "Status"),
    ("firstFailure", "First failure"),
    ("fix", "Fix"),
)


def _nodes(section: Mapping[str, Any] | None) -> list[str]:
    """The GPU nodes section: the summary line, then one row per node (gpulab.verdict.items.nodes)."""
    if not section or not section.get("rows"):
        return []
    sim = " *(simulated)*" if section.get("simulated") else ""
    lines = ["## GPU nodes", ""]
    if section.get("summary"):
        lines += [f"{_cell(section['summary'])}{sim}", ""]
    if section.get("derived"):
        lines += ["One node: derived from the single-Pod checks (no per-node check ran).", ""]
    lines += [
        "| " + " | ".join(h for _, h in NODE_COLUMNS) + " |",
        "| " + " | ".join("---" for _ in NODE_COLUMNS) + " |",
    ]
    for row in section["rows"]:
        cells = []
        for key, _ in NODE_COLUMNS:
            value = row.get(key)
            if key == "expected" and row.get("expectedSource"):
                value = f"{value} ({row['expectedSource']})"
            cell = _cell(value if value is not None else "-")
            cells.append(cell.upper() if key == "status" and value == "fail" else cell)
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _banners(card: Mapping[str, Any]) -> list[str]:
    """The title, the SIMULATED and CLUSTER IS DOWN banners when they apply, the verdict line."""
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
    down = card.get("down")
    if down:
        out += [
            f"> **THE CLUSTER IS DOWN.** It did not answer when this card was made ({down['why']}). "
            f"Every fact below is from the last run ({down.get('factsFrom') or 'time not recorded'}); "
            "nothing was measured now, and the checklist's verdict is that run's.",
            "",
        ]
    verdict = card["checklist"]
    on_sim = (
        ", on simulated values: it proves the scheduling path, not the GPU." if card.get("simulated") else "."
    )
    return [
        *out,
        f"Schema `{card['schema']}`, generated {card['generatedAt']}. "
        f"Checklist: **{verdict['result']}** (exit code {verdict['exitCode']}){on_sim}",
        "",
    ]


def _fact_sections(card: Mapping[str, Any]) -> list[str]:
    """Each of :data:`SECTIONS` as a table; the MIG table after the cluster's."""
    return [
        line
        for key, title, labels in SECTIONS
        for line in (
            f"## {title}",
            "",
            *_facts_table(card[key], labels),
            "",
            *(_mig(card.get("mig")) if key == "cluster" else []),
        )
    ]


def _hardware(card: Mapping[str, Any]) -> list[str]:
    """Topology, the node below NVML and DCGM (gpulab.verdict.card.hardware), where the card has them."""
    return [
        *(hardware.markdown_topology(card["topology"]) if "topology" in card else []),
        *(hardware.markdown_node_runtime(card["nodeRuntime"]) if "nodeRuntime" in card else []),
        *(hardware.markdown_dcgm(card["dcgm"]) if "dcgm" in card else []),
    ]


def _checklist(card: Mapping[str, Any]) -> list[str]:
    out = [
        "## Checklist",
        "",
        "| Item | Status | Observed | Expected | First fix |",
        "| --- | --- | --- | --- | --- |",
    ]
    for item in card["checklist"]["items"]:
        status = item["status"].upper() if item["status"] == "fail" else item["status"]
        sim = " *(simulated)*" if item.get("simulated") else ""
        out.append(
            f"| `{item['id']}`: {_cell(item['title'])} | {status}{sim} | {_cell(item['observed'])}"
            f" | {_cell(item['expected'])} | {_cell(item['fix'])} |"
        )
    return out


def _tflops(card: Mapping[str, Any]) -> list[str]:
    """What was measured (the table, notes, a warning), or how to measure it."""
    out = ["", "## Measured TFLOPS", ""]
    tf = card["measuredTflops"]
    if tf.get("status") != "measured":
        return [*out, f"Not measured. To measure: {tf.get('howTo', HOW_TO_MEASURE)}."]
    sim = " *(simulated)*" if tf.get("simulated") else ""
    if tf.get("freshness") in (timing.EARLIER_RUN, timing.UNKNOWN):
        sim += f" **({timing.label(tf.get('measuredAt'), tf['freshness'])})**"
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
        *hardware.markdown_tflops_table(tf, " *(simulated)*" if tf.get("simulated") else ""),
    ]
    notes = tf.get("notes") or {}
    if notes:
        out += ["", *(f"- {dtype}: {_cell(note)}" for dtype, note in notes.items())]
    if tf.get("warning"):
        out += ["", f"**Warning:** {tf['warning']}"]
    return out


def _tool_versions(card: Mapping[str, Any]) -> list[str]:
    versions = card.get("toolVersions") or {}
    if not versions:
        return ["", "## Tool versions", "", "(none recorded)"]
    return [
        "",
        "## Tool versions",
        "",
        "| Tool | Version |",
        "| --- | --- |",
        *(f"| {_cell(k)} | {_cell(v)} |" for k, v in versions.items()),
    ]


def _lacks(card: Mapping[str, Any]) -> list[str]:
    """The capability boundary (the chapter's table 3), then what was redacted, if anything."""
    out = [
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
    return out


#: The card's parts in the page's order, each ``card -> lines``.
_PARTS: Final[tuple[Callable[[Mapping[str, Any]], list[str]], ...]] = (
    _banners,
    lambda card: ["## When measured", "", *_when_measured(card), ""],
    lambda card: _nodes(card.get("nodes")),
    _fact_sections,
    _hardware,
    _checklist,
    _tflops,
    _tool_versions,
    _lacks,
)


def render_markdown(card: Mapping[str, Any]) -> str:
    """Render a card from :func:`build_card` as Markdown (tables; a SIMULATED banner first
    when the lab is simulated; every simulated value marked *(simulated)*)."""
    return "\n".join(line for part in _PARTS for line in part(card)) + "\n"
