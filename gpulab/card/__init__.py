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

Modules: :mod:`~gpulab.card.model` (the JSON document), :mod:`~gpulab.card.markdown` and
:mod:`~gpulab.card.cli`.
"""

from __future__ import annotations

from gpulab.card.cli import main
from gpulab.card.markdown import render_markdown
from gpulab.card.model import CAPABILITY_BOUNDARY, SCHEMA, build_card, sanitize

__all__ = [
    "CAPABILITY_BOUNDARY",
    "SCHEMA",
    "build_card",
    "main",
    "render_markdown",
    "sanitize",
]
