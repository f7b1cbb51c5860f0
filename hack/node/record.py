"""Copy a real-node run's results into tests/data, with GPU UUIDs replaced (hack/node).

The device call brings back ``summary.json``, ``harness.log`` and ``work.tar.gz``
(hack/node/device/node.py). This keeps what the tests replay and what a reader needs,
in one folder: every text file of the run with each GPU UUID replaced by a placeholder
(``GPU-00000000-0000-4000-8000-00000000000<n>``, numbered in order of first appearance, as
the other captures under tests/data are), the big daemon logs cut to their lines about GPUs,
devices, CDI and errors.

    python3 hack/node/record.py FILES_AT DEST
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

UUID = re.compile(r"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
#: Serial numbers, should a file print them (nvidia-smi -q, NVML dumps).
SERIAL = re.compile(r"(?i)(serial(?: number)?[\"']?\s*[:=]\s*[\"']?)(\d{6,})")
#: Daemon logs too long to keep whole: only their lines that say something about the GPUs.
BIG_LOGS = {
    "kubelet.log",
    "containerd.log",
    "kube-apiserver.log",
    "kube-controller-manager.log",
    "kube-scheduler.log",
    "etcd.log",
}
KEEP = re.compile(r"(?i)device|plugin|nvidia|cdi|gpu|alloc|error|fail|warn|register|ready|cgroup")
MAX_KEPT_LINES = 400


def placeholder(n: int) -> str:
    """The n-th placeholder UUID (0-based)."""
    return f"GPU-00000000-0000-4000-8000-{n:012d}"


class Redactor:
    """Replaces every GPU UUID by its placeholder, the same UUID by the same one in every file."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            key = m.group(0).lower()
            if key not in self.seen:
                self.seen[key] = placeholder(len(self.seen))
            return self.seen[key]

        return SERIAL.sub(lambda m: m.group(1) + "0" * len(m.group(2)), UUID.sub(sub, text))


def trim(name: str, text: str) -> str:
    """A big daemon log cut to its GPU/device/error lines (at most MAX_KEPT_LINES), saying so."""
    if name not in BIG_LOGS:
        return text
    lines = text.splitlines()
    kept = [ln for ln in lines if KEEP.search(ln)]
    shown = len(kept[:MAX_KEPT_LINES])
    note = f"# {name}: {shown} of {len(lines)} lines kept (those about GPUs, devices, CDI, errors)\n"
    return note + "\n".join(kept[:MAX_KEPT_LINES]) + "\n"


def record(files_at: Path, dest: Path) -> Redactor:
    """Write the run under ``files_at`` into ``dest`` (replaced if it exists)."""
    red = Redactor()
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    # The host's own listing first, so GPU 0 gets placeholder 0.
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(files_at / "work.tar.gz") as t:
            t.extractall(tmp, filter="data")
        work = Path(tmp) / "work"
        first = work / "cmd-host-nvidia-smi-L.out"
        if first.exists():
            red(first.read_text())
        for src in sorted(work.rglob("*")):
            if not src.is_file():
                continue
            rel = src.relative_to(work)
            out = dest / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            try:
                text = src.read_text()
            except UnicodeDecodeError:
                continue
            out.write_text(red(trim(src.name, text)))
    for name in ("summary.json", "harness.log"):
        if (files_at / name).exists():
            (dest / name).write_text(red((files_at / name).read_text()))
    return red


def main(argv: list[str]) -> int:
    """CLI: ``record.py FILES_AT DEST``."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    red = record(Path(argv[0]), Path(argv[1]))
    print(f"recorded {argv[1]}: {len(red.seen)} GPU UUID(s) replaced")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
