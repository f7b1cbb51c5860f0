"""README.md and docs/ describe what is there.

README opens with the quick start on one screen (what it is, what it needs, the two commands, the
card's picture) and then indexes docs/; the versions it says a machine needs are the floors the
lab holds; every relative link in them resolves; every stack output
key has a row in docs/outputs.md; the card's picture is a real run's card, small, and the summary
line it shows is still what the card renders from that run's record.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpulab.core import outputs as o
from gpulab.core.outputs import LabOutputs
from gpulab.verdict.card import build_card, summary_line
from variants.minikube import releases

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.glob("*.md") if p.name != "README.md")
PICTURE = DOCS / "baseline-card-h200.png"
#: The real run the picture shows (tests/data/real-runs.json) and the files it is rendered from.
RUN = "tests/data/device-h200-node/lab-device-plugin-whole"
RUN_DATE = "2026-12-03T19:44Z"
#: The quick start must fit on one screen.
QUICK_START_LINES = 60
#: The picture stays small enough for a README (bytes).
PICTURE_MAX_BYTES = 200_000

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _lines() -> list[str]:
    return _read(README).splitlines()


def _line_of(predicate_text: str) -> int:
    """1-based number of README's first line that starts with ``predicate_text``."""
    for number, line in enumerate(_lines(), start=1):
        if line.startswith(predicate_text):
            return number
    raise AssertionError(f"README.md has no line starting with {predicate_text!r}")


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", _read(path), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def _section(path: Path, title: str) -> str:
    text = _read(path)
    start = text.index(f"{title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_quick_start_fits_in_the_first_screen() -> None:
    top = "\n".join(_lines()[:QUICK_START_LINES])
    assert _line_of("## What it needs") < _line_of("## Quick start") <= QUICK_START_LINES
    assert "make lab     # build the lab: the GPU lab on a GPU host, the simulated lab elsewhere" in top
    assert "make test    # every test" in top  # .ci/run runs README's test command
    assert "(it says which and why)" in top and "| `minikube` |" in top and "| `sim` |" in top
    images = IMAGE.findall(top)
    assert [src for _, src in images] == ["docs/baseline-card-h200.png"], images
    assert _line_of("## Documentation") > _line_of("## The result: the baseline card")


def test_readme_and_the_docs_index_list_every_page() -> None:
    index = _section(README, "## Documentation")
    docs_index = _read(DOCS / "README.md")
    assert PAGES, "docs/ has no pages"
    for page in PAGES:
        assert f"](docs/{page.name})" in index, f"README's index lacks docs/{page.name}"
        assert f"]({page.name})" in docs_index, f"docs/README.md lacks {page.name}"


@pytest.mark.parametrize("phrase", ["The simulated lab", "Offline machines", "What the lab still lacks"])
def test_the_sections_code_points_readers_to_are_named_in_readme(phrase: str) -> None:
    """scripts/choose-variant, variants/sim, tests/contract/conftest.py and hack/node/replay.py
    send readers to README by these names; README names each (its index leads on to the page)."""
    assert phrase in _read(README)


def test_what_it_needs_names_the_floors_the_lab_enforces() -> None:
    """The versions README's "What it needs" names are the ones preflight and the toolchain hold:
    Python from pyproject.toml, the Pulumi CLI floor from toolchain/versions.env, minikube's from
    its release table for the default Kubernetes version (Pulumi.yaml)."""
    needs = _section(README, "## What it needs")
    python = re.search(r'requires-python = ">=([0-9.]+)"', _read(ROOT / "pyproject.toml"))
    pulumi = re.search(r"^PULUMI_CLI_FLOOR=(v[0-9.]+)$", _read(ROOT / "toolchain" / "versions.env"), re.M)
    config = _read(ROOT / "Pulumi.yaml")
    kubernetes = re.search(r"kubernetesVersion:\n(?: .*\n)*? +default: (v[0-9.]+)", config)
    assert python and pulumi and kubernetes
    minikube = releases.text(releases.floor(kubernetes.group(1)))
    assert f"Python >= {python.group(1)}" in needs
    assert f"Pulumi CLI ({pulumi.group(1)} or newer)" in needs
    assert f"minikube >= {minikube}" in needs


@pytest.mark.parametrize("page", [README, DOCS / "README.md", *PAGES], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    text = re.sub(r"```.*?```", "", _read(page), flags=re.S)
    targets = LINK.findall(text) + [src for _, src in IMAGE.findall(text)]
    broken = []
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.name}")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_stack_outputs_table_lists_every_key() -> None:
    rows = [line for line in _read(DOCS / "outputs.md").splitlines() if line.startswith("| `")]
    listed = {key for row in rows for key in re.findall(r"`([A-Za-z]+)`", row.split(" | ")[0])}
    assert set(o.ALL_KEYS) - listed == set(), "docs/outputs.md's table lacks these keys"
    assert listed - set(o.ALL_KEYS) == set(), "docs/outputs.md's table lists unknown keys"


def test_the_picture_is_a_small_png_of_the_named_real_run() -> None:
    head = PICTURE.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(head[16:20], "big")
    height = int.from_bytes(head[20:24], "big")
    assert width == 1000 and height < 1000, (width, height)  # the card's top, not the whole card
    assert PICTURE.stat().st_size < PICTURE_MAX_BYTES
    runs = json.loads(_read(ROOT / "tests" / "data" / "real-runs.json"))["runs"]
    assert [r["date"] for r in runs if r["path"] == RUN] == [RUN_DATE]
    (alt, _), *_ = IMAGE.findall(_read(README))
    caption = _section(README, "## The result: the baseline card")
    date, minute = RUN_DATE[:10], RUN_DATE[11:16]
    for text in (alt, caption):
        assert f"{date} {minute} UTC" in text and RUN.removeprefix("tests/data/") in text, text


def test_the_pictures_summary_line_is_the_runs_and_the_cards() -> None:
    """The line in the picture is what the run printed after its `scripts/lab up`, and what the
    card renders today from its recorded outputs and TFLOPS measurement."""
    run = ROOT / RUN
    card = build_card(
        LabOutputs.from_json(json.loads(_read(run / "lab-existing-outputs-existing.json"))),
        tflops=json.loads(_read(run / "lab-existing-tflops.json")),
        tool_versions={},
    )
    line = summary_line(card)
    assert line in _read(run / "lab-up.out").splitlines()
    (alt, _), *_ = IMAGE.findall(_read(README))
    assert line.endswith("; checklist pass") and "bf16 661.6" in line and "bf16 661.6 TFLOP/s" in alt
    assert "4 GPUs: 4 allocatable" in line and "4 GPUs allocatable" in alt and "checklist PASS" in alt
