"""Headless Chromium for the tests that look at the HTML card as a person would.

Debian's ``chromium`` package (``apt-get install -y chromium``; ``.ci/run`` installs it). Every
call gets a new empty profile and no network side channels (no sync, no component updates, no
background requests, no QUIC); ``--no-sandbox`` because CI runs as root.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
MISSING = "headless Chromium not installed (apt-get update && apt-get install -y chromium; .ci/run does)"


def binary() -> str | None:
    """The Chromium executable on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    exe = binary()
    if exe is None:
        raise RuntimeError(MISSING)
    with tempfile.TemporaryDirectory(prefix="gpulab-chromium-") as profile:
        return subprocess.run(
            [exe, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )


def screenshot(html: Path, png: Path, width: int = 1200, height: int = 3000) -> Path:
    """Render ``html`` into ``png`` (``width`` x ``height`` CSS pixels)."""
    _run(f"--window-size={width},{height}", f"--screenshot={png}", html.resolve().as_uri())
    return png


def dump_dom(html: Path) -> str:
    """The DOM after the page loaded (``--dump-dom``), as HTML text."""
    return _run("--dump-dom", html.resolve().as_uri()).stdout


def png_size(png: Path) -> tuple[int, int]:
    """(width, height) from the PNG's IHDR chunk."""
    head = png.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{png} is not a PNG")
    width, height = struct.unpack(">II", head[16:24])
    return width, height
