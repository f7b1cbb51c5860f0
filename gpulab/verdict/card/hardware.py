"""The card's hardware sections: GPU topology, DCGM metrics, TFLOPS (burst and sustained).

Shared by the Markdown and the HTML card: :func:`topology_rows`, :func:`dcgm_rows` and
:func:`tflops_rows` turn a card section into table rows of plain strings (the HTML template
renders the same rows), :func:`markdown` the three sections as Markdown lines.

Card sections (built by gpulab.verdict.card.model):

* ``topology``: the ``hostTopology`` fact (``value``, ``source``, ``simulated``, ``known``,
  ``measuredAt``, ``freshness``: gpulab.verdict.card.model) plus ``shownNotUsed`` (the scheduler does
  not place by it);
* ``dcgm``: the ``dcgmMetrics`` fact plus ``status`` (:data:`DCGM_STATUSES`) and ``why``;
* ``measuredTflops``: gpulab.verdict.card.tflops.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gpulab.verdict.card import timing

#: ``dcgm.status``: what the card can say about the exporter's metrics.
MEASURED: Final = "measured"
NOT_OBSERVABLE: Final = "not-observable-in-simulation"
NOT_TESTED: Final = "not-tested"
NOT_RECORDED: Final = "not-recorded"
DCGM_STATUSES: Final = (MEASURED, NOT_OBSERVABLE, NOT_TESTED, NOT_RECORDED)

TOPOLOGY_NOTE: Final = "shown, not used for placement: the scheduler places Pods without it"
DCGM_NOTE: Final = (
    "highest value over the scrapes while the compute check ran; the exporter refreshes every "
    "collect interval (DCGM_EXPORTER_INTERVAL, 30 s by default), so a short kernel may not show"
)


def _num(value: Any, unit: str = "", digits: int = 1) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    text = f"{value:.{digits}f}" if isinstance(value, float) else str(value)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}{unit}"


def _link_text(link: Mapping[str, Any]) -> str:
    code = str(link.get("code") or link.get("kind") or "?")
    peer = f"GPU{link.get('peer')}"
    if link.get("kind") == "NV":
        n = link.get("nvlinks")
        return f"{peer} {code} ({n} NVLink{'s' if n != 1 else ''})"
    return f"{peer} {code}"


def topology_rows(section: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per GPU: ``gpu`` (``GPU0``), ``uuid``, ``links`` (``GPU1 NV18 (18 NVLinks)``, or
    ``no other GPU``), ``cpuAffinity``, ``numaNode``; ``[]`` when no topology was read."""
    value = section.get("value")
    gpus = value.get("gpus") if isinstance(value, Mapping) else None
    rows = []
    for g in gpus if isinstance(gpus, list) else []:
        if not isinstance(g, Mapping):
            continue
        links = [lk for lk in g.get("links") or [] if isinstance(lk, Mapping)]
        rows.append(
            {
                "gpu": f"GPU{g.get('index')}",
                "uuid": str(g.get("uuid") or "-"),
                "links": ", ".join(_link_text(lk) for lk in links) or "no other GPU",
                "cpuAffinity": str(g.get("cpuAffinity") or "N/A"),
                "numaNode": "-" if g.get("numaNode") is None else str(g.get("numaNode")),
            }
        )
    return rows


def topology_about(section: Mapping[str, Any]) -> str:
    """How the topology was read, or why not (one sentence)."""
    value = section.get("value")
    if not section.get("known", True):
        return "not in this stack's outputs"
    if not isinstance(value, Mapping):
        return "not read (no host probe: hostProbe off)"
    if not value.get("source"):
        return f"not read: {value.get('note') or 'no reason recorded'}"
    note = f"; {value['note']}" if value.get("note") else ""
    return f"read with {value['source']}{note}"


def dcgm_rows(section: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per GPU the exporter reported: ``uuid``, ``gpu``, ``model``, ``util``, ``fb``,
    ``power``, ``temp``, ``driver``, ``samples``; ``[]`` when nothing was scraped."""
    value = section.get("value")
    gpus = value.get("gpus") if isinstance(value, Mapping) else None
    rows = []
    for uuid, g in sorted(gpus.items()) if isinstance(gpus, Mapping) else []:
        g = g if isinstance(g, Mapping) else {}
        rows.append(
            {
                "uuid": str(uuid),
                "gpu": str(g.get("gpu") if g.get("gpu") is not None else "-"),
                "model": str(g.get("modelName") or "-"),
                "util": "not comparable (MIG)"
                if "utilPercent" in (g.get("notComparable") or {})
                else _num(g.get("utilPercent"), " %"),
                "fb": _num(g.get("fbUsedMiB"), " MiB", 0),
                "power": _num(g.get("powerW"), " W"),
                "temp": _num(g.get("tempC"), " C", 0),
                "driver": str(g.get("driverVersion") or "-"),
                "samples": str(g.get("samples") or 0),
            }
        )
    return rows


def dcgm_about(section: Mapping[str, Any]) -> str:
    """What the DCGM section says in one sentence (its ``why``, or where and how it scraped)."""
    if section.get("status") != MEASURED:
        return str(section.get("why") or "not recorded")
    value = section.get("value") or {}
    about = (
        f"{value.get('endpoint')}, {value.get('scrapes')} scrape(s) over {value.get('seconds')} s, "
        f"measured {timing.label(section.get('measuredAt'), section.get('freshness', timing.UNKNOWN))}"
    )
    if value.get("error"):
        about += f"; error: {value['error']}"
    return about


def _phase_text(phase: Mapping[str, Any] | None) -> str:
    if not phase:
        return "-"
    return (
        f"{_num(phase.get('tflops'))} ({_num(phase.get('smClockMHz'), ' MHz', 0)}, "
        f"{_num(phase.get('powerW'), ' W', 0)})"
    )


def _pct(value: Any) -> str:
    return f"{value:.1%}" if isinstance(value, (int, float)) else "-"


def tflops_rows(tf: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per dtype: ``dtype``, ``burst`` and ``sustained`` (``"790.9 (1980 MHz, 120 W)"``),
    ``rate`` (the one rate of a v1 document), ``peak``, ``fractions`` (``"79.9% / 67.5%"``)."""
    rows = []
    for dtype, r in (tf.get("results") or {}).items():
        burst, sustained = r.get("burst"), r.get("sustained")
        two = bool(burst or sustained)
        fractions = (
            f"{_pct((burst or {}).get('fraction'))} / {_pct((sustained or {}).get('fraction'))}"
            if two
            else _pct(r.get("fraction"))
        )
        rows.append(
            {
                "dtype": str(dtype),
                "burst": _phase_text(burst),
                "sustained": _phase_text(sustained),
                "rate": _num(r.get("tflops")),
                "peak": _num(r.get("peak")),
                "fractions": fractions,
            }
        )
    return rows


def reference_text(tf: Mapping[str, Any]) -> str | None:
    """The reference loop in one sentence, or None without one."""
    ref = tf.get("reference")
    if not isinstance(ref, Mapping) or ref.get("tflops") is None:
        return None
    ratio = ref.get("burstOverReference")
    within = ref.get("withinTolerance")
    tol = ref.get("tolerance")
    verdict = ""
    if ratio is not None:
        verdict = f"; burst / reference {ratio:.3f}"
        if within is not None and tol is not None:
            verdict += f" ({'within' if within else 'outside'} {tol:.0%})"
    return (
        f"Reference (plain {ref.get('dtype') or 'bf16'} `c = a @ b`, {ref.get('products') or 10} products): "
        f"{_num(ref.get('tflops'))} TFLOP/s at {_num(ref.get('smClockMHz'), ' MHz', 0)}{verdict}."
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def markdown_topology(section: Mapping[str, Any]) -> list[str]:
    """The ``## GPU topology`` lines."""
    sim = " *(simulated)*" if section.get("simulated") else ""
    out = ["## GPU topology", "", f"{topology_about(section)}{sim}; {TOPOLOGY_NOTE}.", ""]
    rows = topology_rows(section)
    if rows:
        out += [
            "| GPU | UUID | Links to other GPUs | CPU affinity | NUMA node |",
            "| --- | --- | --- | --- | --- |",
        ]
        out += [
            "| "
            + " | ".join(
                (r["gpu"], _cell(r["uuid"]), _cell(r["links"]) + sim, r["cpuAffinity"], r["numaNode"])
            )
            + " |"
            for r in rows
        ]
        out.append("")
    return out


def markdown_dcgm(section: Mapping[str, Any]) -> list[str]:
    """The ``## DCGM metrics`` lines."""
    out = ["## DCGM metrics", "", f"{dcgm_about(section)}.", ""]
    rows = dcgm_rows(section)
    if rows:
        out += [
            "| GPU UUID | GPU | Model | Utilisation | FB used | Power | Temperature | Driver (label) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        out += [
            f"| {_cell(r['uuid'])} | {r['gpu']} | {_cell(r['model'])} | {r['util']} | {r['fb']} | "
            f"{r['power']} | {r['temp']} | {r['driver']} |"
            for r in rows
        ]
        out += ["", f"Values: {DCGM_NOTE}.", ""]
    return out


def markdown_tflops_table(tf: Mapping[str, Any], sim: str) -> list[str]:
    """The TFLOPS table: burst and sustained with clock and power where the document has
    them, else the one rate; then what each rate is, the reference and the notes."""
    rows = tflops_rows(tf)
    if tf.get("headline"):
        out = [
            "| dtype | Burst TFLOP/s (SM clock, power) | Sustained TFLOP/s (SM clock, power) | "
            "Datasheet peak | Burst / sustained of peak |",
            "| --- | --- | --- | --- | --- |",
            *(
                f"| {r['dtype']} | {r['burst']}{sim} | {r['sustained']}{sim} | {r['peak']} "
                f"| {r['fractions']} |"
                for r in rows
            ),
            "",
            *(f"- {text}." for text in (tf.get("means") or {}).values()),
        ]
    else:
        out = [
            "| dtype | TFLOP/s | Datasheet peak | Fraction of peak |",
            "| --- | --- | --- | --- |",
            *(f"| {r['dtype']} | {r['rate']}{sim} | {r['peak']} | {r['fractions']} |" for r in rows),
            "",
            "- one rate per dtype (a gpulab.tflops document of method v1: no burst/sustained split).",
        ]
    ref = reference_text(tf)
    if ref:
        out += ["", ref]
    return out


def node_runtime_rows(section: Mapping[str, Any]) -> list[dict[str, str]]:
    """The ``nodeRuntime`` fact (gpulab.host.node_runtime) as rows ``{"what", "found"}``: the
    runtime configuration files, the CDI specs, the toolkit, the PCI census, the fabric, and
    what could not be read; ``[]`` when it was not read."""
    value = section.get("value")
    if not isinstance(value, Mapping):
        return []
    rows = []
    for r in value.get("runtimes") or []:
        default = r.get("defaultRuntime") or "the engine's own"
        said = r.get("error") or (
            f"nvidia runtimes {', '.join(r.get('nvidiaRuntimes') or []) or 'none'}; default "
            f"{default}; CDI {_on_off(r.get('cdi'))}; "
            f"sha256 {str(r.get('sha256'))[:12]}"
        )
        rows.append({"what": f"{r.get('engine')} config {r.get('path')}", "found": said})
    if not value.get("runtimes"):
        rows.append({"what": "runtime config", "found": "no docker, containerd or CRI-O configuration file"})
    for s in value.get("cdi") or []:
        said = s.get("error") or (
            f"kind {s.get('kind')}, {s.get('devices')} device(s), "
            f"for driver {s.get('driverVersion') or 'unknown'}"
        )
        rows.append({"what": f"CDI spec {s.get('path')}", "found": said})
    if not value.get("cdi"):
        rows.append({"what": "CDI specs", "found": "none in /etc/cdi or /var/run/cdi"})
    advisories = value.get("toolkitAdvisories") or []
    toolkit = value.get("toolkit")
    rows.append(
        {
            "what": "NVIDIA Container Toolkit",
            "found": (
                f"{toolkit}; advisories: {', '.join(advisories) or 'none known'}" if toolkit else "not found"
            ),
        }
    )
    pci = value.get("pciGpus") or []
    seen = sum(1 for g in pci if g.get("inNvml"))
    rows.append(
        {
            "what": "PCI census",
            "found": f"{len(pci)} NVIDIA GPU(s) on the bus, {seen} of them listed by NVML; "
            f"{value.get('nvswitches') or 0} NVSwitch(es)",
        }
    )
    if value.get("fabric"):
        rows.append({"what": "NVSwitch fabric (State/Status per GPU)", "found": ", ".join(value["fabric"])})
    for why in value.get("unread") or []:
        rows.append({"what": "not read", "found": why})
    return rows


def node_runtime_findings(section: Mapping[str, Any]) -> list[dict[str, str]]:
    """The ``nodeRuntime`` fact's findings ``{"id", "observed", "fix"}`` (each a mismatch)."""
    value = section.get("value")
    return list(value.get("findings") or []) if isinstance(value, Mapping) else []


def _on_off(flag: Any) -> str:
    return "on" if flag is True else "off" if flag is False else "not set"


def markdown_node_runtime(section: Mapping[str, Any]) -> list[str]:
    """The ``## Node runtime (below NVML)`` lines: the facts, then each finding with its fix."""
    sim = " *(simulated)*" if section.get("simulated") else ""
    rows = node_runtime_rows(section)
    if not rows:
        return [
            "## Node runtime (below NVML)",
            "",
            "Not read: no host probe in this run, or the cluster's nodes are not this host "
            "(existing cluster).",
            "",
        ]
    value = section["value"]
    out = ["## Node runtime (below NVML)", "", f"Read under `{value.get('root')}`{sim}.", ""]
    out += ["| What | Found |", "| --- | --- |"]
    out += [f"| {_cell(r['what'])} | {_cell(r['found'])}{sim} |" for r in rows]
    found = node_runtime_findings(section)
    out += ["", f"Findings: {len(found) or 'none: everything below NVML agrees with NVML'}", ""]
    out += [f"- `{f['id']}`: {f['observed']}. First fix: {f['fix']}" for f in found]
    return [*out, ""] if found else out
