"""The baseline card as one self-contained HTML page: :func:`render_html`.

Rendered from the same document as the Markdown (a card from :func:`gpulab.card.build_card`)
with Jinja2 (autoescaped) and the template ``gpulab/card/templates/baseline-card.html.j2``
(package data). Nothing is fetched when the page is viewed: the style is inline and the
TFLOPS-versus-datasheet chart is inline SVG, drawn only from measured values
(:func:`tflops_chart`); with nothing measured the page says "not measured" instead.

The page marks what a person must not misread: the checklist rows coloured by status
(``data-item``/``data-status`` on each row), every simulated value tagged, and every fact not
measured in the newest run flagged with its time (gpulab.card.timing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import jinja2

from gpulab.card import timing
from gpulab.card.markdown import REMEASURE, SECTIONS, absent
from gpulab.card.model import HOW_TO_MEASURE
from gpulab.card.summary import summary_line

TEMPLATE: Final = "baseline-card.html.j2"

#: Chart geometry (SVG user units): overall width, label column, bar height and row pitch.
CHART_WIDTH: Final = 720
CHART_LABEL: Final = 64
CHART_BAR: Final = 22
CHART_ROW: Final = 58
CHART_TEXT: Final = 210  # room on the right for "578.7 TFLOP/s, 58% of 989.5"


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
                    "value": plain(fact.get("value")) if fact.get("known", True) else "(not in the outputs)",
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


def tflops_chart(tf: Mapping[str, Any]) -> dict[str, Any] | None:
    """Bars for the chart: one row per dtype with a measured rate, the datasheet peak behind it.

    Returns None when nothing was measured (no chart then, never made-up bars); otherwise
    ``{"width", "height", "axis": [{"x", "label"}], "rows": [{"dtype", "y", "rate", "peak",
    "rate_w", "peak_w", "fraction", "text", "text_x"}]}`` in SVG user units, the x scale
    running from 0 to the largest rate or peak.
    """
    if tf.get("status") != "measured":
        return None
    measured = [
        (str(dtype), float(r["tflops"]), r.get("peak"), r.get("fraction"))
        for dtype, r in (tf.get("results") or {}).items()
        if isinstance(r, Mapping) and isinstance(r.get("tflops"), (int, float))
    ]
    if not measured:
        return None
    top, step = _scale(max(max(rate, float(peak or 0)) for _, rate, peak, _ in measured))
    span = CHART_WIDTH - CHART_LABEL - CHART_TEXT
    rows = []
    for i, (dtype, rate, peak, fraction) in enumerate(measured):
        y = 16 + i * CHART_ROW
        peak_w = round(span * float(peak) / top, 1) if peak else None
        rate_w = max(round(span * rate / top, 1), 1.0)
        text = f"{rate:g} TFLOP/s" + (
            f", {fraction:.0%} of {float(peak):g}" if peak and fraction is not None else ""
        )
        if not peak:
            text += " (no datasheet peak)"
        rows.append(
            {
                "dtype": dtype,
                "y": y,
                "rate": rate,
                "peak": peak,
                "rate_w": rate_w,
                "peak_w": peak_w,
                "fraction": fraction,
                "text": text,
                "text_x": CHART_LABEL + max(rate_w, peak_w or 0) + 8,
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
    }


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("gpulab.card", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(card: Mapping[str, Any]) -> str:
    """Render a card from :func:`~gpulab.card.build_card` as a self-contained HTML page."""
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
        "how_to_measure": tf.get("howTo", HOW_TO_MEASURE),
    }
    return _environment().get_template(TEMPLATE).render(**context)
