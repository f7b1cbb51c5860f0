"""The baseline card (环境基线卡): what this lab is, what it proved, and what it still lacks.

Built from the stack outputs (``pulumi stack output --json``, keys in :mod:`gpulab.core.outputs`)
plus, optionally, a measurement from :mod:`gpulab.tflops`. Pure functions
(:func:`build_card`, :func:`render_markdown`, :func:`render_html`, :func:`summary_line`) and a
CLI::

    python -m gpulab.verdict.card --outputs OUTPUTS.json [--tflops TFLOPS.json] [--out-dir DIR]
                          [--time-slicing-replicas N]

writes ``DIR/baseline-card.json``, ``DIR/baseline-card.md`` and ``DIR/baseline-card.html``, and
ends with the one-line summary (:mod:`~gpulab.verdict.card.summary`). Exit codes: 0 the checklist
passed (``not-observable-in-simulation`` counts as passed); 1 an item failed or could not be
evaluated; 2 usage error or unreadable input (the message names the file and the problem).

JSON schema ``gpulab.dev/baseline-card/v1``, top-level keys: ``schema``, ``generatedAt``,
``simulated``, ``simulatedFields``, ``host``, ``cluster``, ``operator``, ``smoke``, ``compute``,
``mig`` (``migStrategy``, each MIG resource allocatable against expected, each host GPU's MIG
mode: :mod:`~gpulab.verdict.card.mig`; ``None`` for a stack from before MIG), ``topology`` (the
``hostTopology`` fact: links, CPU affinity, NUMA node per GPU) and ``dcgm``
(the ``dcgmMetrics`` fact with ``status`` and ``why``: :mod:`~gpulab.verdict.card.hardware`),
``checklist`` (``result``, ``exitCode``, ``items``), ``measuredTflops`` (burst, sustained and
reference: :mod:`~gpulab.verdict.card.tflops`), ``measurements``
(``runAt`` and, per measurement, ``measuredAt`` and ``freshness``: :mod:`~gpulab.verdict.card.timing`),
``toolVersions``, ``capabilityBoundary``, ``redacted``. Each fact in
``host``/``cluster``/``operator``/``smoke`` is ``{"value": ..., "source": <output key>,
"simulated": bool, "known": bool, "measuredAt": str|None, "freshness": str}``; ``known`` is
False when the output was missing (a value is never invented); ``freshness`` is ``current``,
``earlier-run`` (measured before the newest run: never shown as current), ``unknown`` or
``configured``; an optional ``note`` is shown beside the value (``allocatableGpus`` 0 under
MIG, ``computeResult`` not-tested).

Secrets never reach the card: the ``kubeconfig`` output is dropped, and any string that is
``"[secret]"`` (how ``pulumi stack output`` prints a secret) or looks like a kubeconfig or a
PEM block is replaced by ``"[redacted]"``, its place listed under ``redacted``.

Modules: :mod:`~gpulab.verdict.card.model` (the JSON document), :mod:`~gpulab.verdict.card.tflops`,
:mod:`~gpulab.verdict.card.hardware` (topology, DCGM and TFLOPS rows), :mod:`~gpulab.verdict.card.mig`,
:mod:`~gpulab.verdict.card.timing`,
:mod:`~gpulab.verdict.card.markdown`, :mod:`~gpulab.verdict.card.html` (Jinja2, ``templates/``),
:mod:`~gpulab.verdict.card.summary` and :mod:`~gpulab.verdict.card.cli`.
"""

from __future__ import annotations

from gpulab.verdict.card.cli import main
from gpulab.verdict.card.html import render_html
from gpulab.verdict.card.markdown import render_markdown
from gpulab.verdict.card.model import CAPABILITY_BOUNDARY, SCHEMA, build_card, sanitize
from gpulab.verdict.card.summary import summary_line

__all__ = [
    "CAPABILITY_BOUNDARY",
    "SCHEMA",
    "build_card",
    "main",
    "render_html",
    "render_markdown",
    "sanitize",
    "summary_line",
]
