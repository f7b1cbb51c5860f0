"""CLI of the baseline card: ``python -m gpulab.verdict.card`` (flags and exit codes in
:mod:`gpulab.verdict.card`)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from gpulab.core.errors import os_error_fix
from gpulab.core.outputs import LabOutputs
from gpulab.verdict.card.html import render_html
from gpulab.verdict.card.markdown import render_markdown
from gpulab.verdict.card.model import build_card
from gpulab.verdict.card.summary import summary_line


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
    for dist in ("pulumi", "pulumi-kubernetes", "pulumi-policy", "kubernetes", "Jinja2"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return versions


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit code (0 pass, 1 checklist failure, 2 usage/input)."""
    ap = argparse.ArgumentParser(
        prog="python -m gpulab.verdict.card",
        description="Write the lab's baseline card (baseline-card.md, .json and .html) and print "
        "its one-line summary.",
    )
    ap.add_argument("--outputs", required=True, help="pulumi stack output --json, saved")
    ap.add_argument("--tflops", help="python -m gpulab.tflops --json, saved")
    ap.add_argument("--out-dir", default=".", help="where to write the card (default: .)")
    ap.add_argument("--time-slicing-replicas", type=int, default=None)
    ap.add_argument(
        "--cluster-down",
        default=None,
        help="why the cluster did not answer: the card says its facts are the last run's (exit 1)",
    )
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage message
        return int(exc.code) if isinstance(exc.code, int) else 2
    if args.time_slicing_replicas is not None and args.time_slicing_replicas < 1:
        print("gpulab.verdict.card: --time-slicing-replicas must be >= 1", file=sys.stderr)
        return 2
    try:
        raw = _read_json(args.outputs, "--outputs")
        tflops = _read_json(args.tflops, "--tflops") if args.tflops else None
        outputs = LabOutputs.from_json(raw, time_slicing_replicas=args.time_slicing_replicas)
        card = build_card(
            outputs,
            tflops=tflops,
            tool_versions=_tool_versions(),
            cluster_down=args.cluster_down,
        )
    except ValueError as exc:
        print(f"gpulab.verdict.card: {exc}", file=sys.stderr)
        return 2
    out_dir = Path(args.out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "baseline-card.json").write_text(
            json.dumps(card, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        (out_dir / "baseline-card.md").write_text(render_markdown(card), encoding="utf-8")
        (out_dir / "baseline-card.html").write_text(render_html(card), encoding="utf-8")
    except OSError as exc:
        print(
            f"gpulab.verdict.card: cannot write to {out_dir}: {exc}\n  fix: {os_error_fix(exc)}",
            file=sys.stderr,
        )
        return 2
    result = card["checklist"]
    written = ", ".join(str(out_dir / f"baseline-card.{ext}") for ext in ("md", "json", "html"))
    print(
        f"wrote {written}; checklist: {result['result']}"
        + (" (simulated lab)" if card["simulated"] else "")
        + (" (the last run's facts: the cluster is down)" if card.get("down") else ""),
        flush=True,
    )
    for item in result["items"]:
        if item["status"] in ("fail", "not-evaluated"):
            print(f"  {item['id']}: {item['status']}: {item['observed']}", file=sys.stderr)
            if item["status"] == "fail":
                print(f"    first fix: {item['fix']}", file=sys.stderr)
    sys.stderr.flush()
    # The last line, from the same card: what a person reads first after `make lab`/`make verify`.
    print(summary_line(card))
    return int(result["exitCode"])
