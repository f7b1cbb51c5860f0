"""The baseline card as one self-contained HTML page: :func:`render_html`.

Rendered from the same document as the Markdown (a card from :func:`gpulab.verdict.card.build_card`)
with Jinja2 (autoescaped) and the template ``gpulab/verdict/card/templates/baseline-card.html.j2``
(package data). Nothing is fetched when the page is viewed: the style is inline and the
TFLOPS-versus-datasheet chart is inline SVG, drawn only from measured values
(:func:`tflops_chart`: per dtype the burst and the sustained rate over the datasheet peak); with
nothing measured the page says "not measured" instead.

The page marks what a person must not misread: the checklist rows coloured by status
(``data-item``/``data-status`` on each row), every simulated value tagged, and every fact not
measured in the newest run flagged with its time (gpulab.verdict.card.timing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import jinja2

from gpulab.verdict.card import hardware, timing
from gpulab.verdict.card.markdown import REMEASURE, SECTIONS, absent
from gpulab.verdict.card.model import HOW_TO_MEASURE
from gpulab.verdict.card.summary import summary_line

TEMPLATE: Final = "baseline-card.html.j2"

#: Chart geometry (SVG user units): overall width, label column, bar height and row pitch.
CHART_WIDTH: Final = 980
CHART_LABEL: Final = 64
CHART_BAR: Final = 24
CHART_ROW: Final = 58
CHART_TEXT: Final = 420  # room on the right for "burst 790.9 / sustained 667.9 TFLOP/s, 80% / 67% of 989.5"
#: Bar colours: the burst rate, the sustained rate, a single rate (a method-v1 document), the peak.
COLOURS: Final = {"burst": "#86aee8", "sustained": "#1f4fa3", "measured": "#2f6fd1", "peak": "#dfe5ee"}


def plain(value: Any) -> str:
    """A JSON value as a person reads it (lists comma-separated, objects ``k=v``)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_inner(v) for v in value) or "(none)"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_inner(v)}" for k, v in value.items()) or "(none)"
    return str(value)


def _inner(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_inner(v)}" for k, v in value.items()) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def _fact_rows(section: Mapping[str, Any], labels: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    rows = []
    for key, label in labels:
        fact = section[key]
        if isinstance(fact, Mapping) and "source" in fact:
            fresh = fact.get("freshness", timing.CONFIGURED)
            rows.append(
                {
                    "label": label,
                    "value": (plain(fact.get("value")) + (f" ({fact['note']})" if fact.get("note") else ""))
                    if fact.get("known", True)
                    else "(not in the outputs)",
                    "known": fact.get("known", True),
                    "simulated": bool(fact.get("simulated")),
                    "freshness": fresh,
                    "measured": timing.label(fact.get("measuredAt"), fresh),
                    "source": fact["source"],
                }
            )
        else:
            rows.append(
                {
                    "label": label,
                    "value": plain(fact),
                    "known": True,
                    "simulated": False,
                    "freshness": timing.CONFIGURED,
                    "measured": "configured",
                    "source": None,
                }
            )
    return rows


def _scale(largest: float) -> tuple[float, float]:
    """(axis end, tick step): a round step (1, 2, 2.5 or 5 x 10^n) giving 4 to 8 ticks."""
    if largest <= 0:
        return 1.0, 0.25
    magnitude = 10 ** math.floor(math.log10(largest / 4))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if largest / (m * magnitude) <= 8)
    return math.ceil(largest / step) * step, step


def _bars(r: Mapping[str, Any]) -> list[tuple[str, float]]:
    """(kind, rate) of one dtype: burst and sustained where measured, else its one rate."""
    two = [
        (kind, float(r[kind]["tflops"]))
        for kind in ("burst", "sustained")
        if isinstance(r.get(kind), Mapping) and isinstance(r[kind].get("tflops"), (int, float))
    ]
    if two:
        return two
    return [("measured", float(r["tflops"]))] if isinstance(r.get("tflops"), (int, float)) else []


def _row_text(bars: list[tuple[str, float]], peak: Any) -> str:
    rates = " / ".join(f"{kind} {rate:g}" if kind != "measured" else f"{rate:g}" for kind, rate in bars)
    if not peak:
        return f"{rates} TFLOP/s (no datasheet peak)"
    shares = " / ".join(f"{rate / float(peak):.0%}" for _, rate in bars)
    return f"{rates} TFLOP/s, {shares} of {float(peak):g}"


def tflops_chart(tf: Mapping[str, Any]) -> dict[str, Any] | None:
    """Bars for the chart: per dtype the burst and the sustained rate (or the one rate of a v1
    document) over the datasheet peak behind them.

    Returns None when nothing was measured (no chart then, never made-up bars); otherwise
    ``{"width", "height", "label_x", "bar", "axis": [{"x", "label"}], "axis_y", "rows":
    [{"dtype", "y", "rate" (headline), "peak", "peak_w", "fraction", "bars": [{"kind", "rate",
    "w", "y", "h", "fill"}], "text", "text_x"}]}`` in SVG user units, the x scale running from 0
    to the largest rate or peak.
    """
    if tf.get("status") != "measured":
        return None
    measured = [
        (str(dtype), r, _bars(r)) for dtype, r in (tf.get("results") or {}).items() if isinstance(r, Mapping)
    ]
    measured = [m for m in measured if m[2]]
    if not measured:
        return None
    top, step = _scale(
        max(max(max(b for _, b in bars), float(r.get("peak") or 0)) for _, r, bars in measured)
    )
    span = CHART_WIDTH - CHART_LABEL - CHART_TEXT
    rows: list[dict[str, Any]] = []
    kinds: set[str] = set()
    for i, (dtype, r, bars) in enumerate(measured):
        kinds.update(kind for kind, _ in bars)
        y = 16 + i * CHART_ROW
        peak = r.get("peak")
        peak_w = round(span * float(peak) / top, 1) if peak else None
        h = (CHART_BAR - 6) / len(bars) - (1 if len(bars) > 1 else 0)
        widths = [max(round(span * rate / top, 1), 1.0) for _, rate in bars]
        drawn = [
            {
                "kind": kind,
                "rate": rate,
                "w": widths[k],
                "y": round(y + 3 + k * (h + 2), 1),
                "h": round(h, 1),
                "fill": COLOURS[kind],
            }
            for k, (kind, rate) in enumerate(bars)
        ]
        rows.append(
            {
                "dtype": dtype,
                "y": y,
                "rate": r.get("tflops"),
                "peak": peak,
                "peak_w": peak_w,
                "fraction": r.get("fraction"),
                "bars": drawn,
                "text": _row_text(bars, peak),
                "text_x": CHART_LABEL + max(*widths, peak_w or 0.0) + 8,
            }
        )
    axis = [
        {"x": round(CHART_LABEL + span * k * step / top, 1), "label": f"{k * step:g}"}
        for k in range(round(top / step) + 1)
    ]
    return {
        "width": CHART_WIDTH,
        "height": 16 + len(rows) * CHART_ROW + 24,
        "label_x": CHART_LABEL,
        "bar": CHART_BAR,
        "axis": axis,
        "axis_y": 16 + len(rows) * CHART_ROW,
        "rows": rows,
        "kinds": sorted(kinds, key=list(COLOURS).index),
        "colours": COLOURS,
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("gpulab.verdict.card", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _node_runtime(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    value = section.get("value")
    return {
        "root": value.get("root") if isinstance(value, Mapping) else None,
        "simulated": bool(section.get("simulated")),
        "rows": hardware.node_runtime_rows(section),
        "findings": hardware.node_runtime_findings(section),
    }


def _topology(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    return {
        "about": hardware.topology_about(section),
        "note": hardware.TOPOLOGY_NOTE,
        "simulated": bool(section.get("simulated")),
        "rows": hardware.topology_rows(section),
    }


def _dcgm(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    return {
        "about": hardware.dcgm_about(section),
        "status": section.get("status"),
        "rows": hardware.dcgm_rows(section),
        "note": hardware.DCGM_NOTE,
    }


def _mig(section: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """The MIG section's rows as the fact rows (gpulab.verdict.card.mig), ``resource`` kept."""
    if not section:
        return None
    rows = section["rows"]
    shown = _fact_rows(
        {str(i): r for i, r in enumerate(rows)}, tuple((str(i), r["label"]) for i, r in enumerate(rows))
    )
    return [{**row, "resource": bool(r.get("resource"))} for row, r in zip(shown, rows, strict=True)]


def render_html(card: Mapping[str, Any]) -> str:
    """Render a card from :func:`~gpulab.verdict.card.build_card` as a self-contained HTML page."""
    when = card.get("measurements") or {}
    groups = when.get("groups") or {}
    stale = [groups[g]["what"].split(" (")[0] for g in timing.stale(when)]
    tf = card.get("measuredTflops") or {}
    fresh_tf = tf.get("freshness", timing.UNKNOWN)
    context = {
        "card": card,
        "summary": summary_line(card),
        "sections": [
            {"key": key, "title": title, "rows": _fact_rows(card[key], labels), "absent": absent(card[key])}
            for key, title, labels in SECTIONS
        ],
        "run_at": timing.label(when.get("runAt"), timing.CURRENT).replace(" (this run)", ""),
        "groups": [
            {**m, "name": g, "label": timing.label(m.get("measuredAt"), m["freshness"])}
            for g, m in groups.items()
        ],
        "stale": stale,
        "remeasure": REMEASURE,
        "tflops": {k: tf.get(k) for k in ("gpu", "backend", "size", "simulated", "peakSource", "warning")},
        "tflops_measured": timing.label(tf.get("measuredAt"), fresh_tf),
        "tflops_fresh": fresh_tf,
        "chart": tflops_chart(tf),
        "tflops_rows": hardware.tflops_rows(tf) if tf.get("status") == "measured" else [],
        "tflops_two": bool(tf.get("headline")),
        "tflops_means": list((tf.get("means") or {}).values()),
        "tflops_reference": hardware.reference_text(tf),
        "how_to_measure": tf.get("howTo", HOW_TO_MEASURE),
        "topology": _topology(card.get("topology")),
        "node_runtime": _node_runtime(card.get("nodeRuntime")),
        "dcgm": _dcgm(card.get("dcgm")),
        "mig": _mig(card.get("mig")),
    }
    return _environment().get_template(TEMPLATE).render(**context)
