"""Whether ``toolchain/sim/build.sh``'s cache already holds the pinned sim binaries.

The one question ``toolchain/decide.py`` asks of the sim toolchain on every ``scripts/env.sh``
(about 250 times per test suite), kept apart from ``fetch.py`` so that answering it loads
neither the download machinery (``urllib``, ``tarfile``, ``concurrent.futures``) nor
anything else that is not needed for it: this module reads only ``.complete`` stamps and
the committed wrapper sources. Standard library only; ``fetch.py`` re-exports its names.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The committed Go wrapper modules build.sh compiles, one directory per component.
WRAPPERS = HERE / "go"

#: What build.sh builds into each ``$GPULAB_CACHE/sim/<component>-<version>/bin``.
BUILD_BINARIES = {
    "kube": ("hyperkube", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
    "etcd": ("etcd",),
    "kwok": ("kwok", "kwokctl"),
    "helm": ("helm",),
}
#: Component -> its version's key in toolchain/versions.env.
VERSION_KEYS = {
    "kube": "KUBERNETES_VERSION",
    "etcd": "ETCD_VERSION",
    "kwok": "KWOK_VERSION",
    "helm": "HELM_VERSION",
}


def wrapper_fingerprint(wrapper: Path) -> str:
    """What build.sh's ``fingerprint`` computes for a wrapper dir: the first 16 hex of the
    sha256 of go.mod, go.sum and the *.go files, concatenated in that order."""
    h = hashlib.sha256()
    for f in [wrapper / "go.mod", wrapper / "go.sum", *sorted(wrapper.glob("*.go"))]:
        if f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cached_build(cache: Path, versions: Mapping[str, str], wrappers: Path = WRAPPERS) -> bool:
    """Whether build.sh's cache (``cache``: ``$GPULAB_CACHE``) holds every component of the
    pinned ``versions`` (versions.env's keys), built from the committed wrapper sources, so
    that ``build.sh`` only relinks: no network, no ``go``. False on any missing or stale
    stamp or binary; never raises for a missing file."""
    for comp, key in VERSION_KEYS.items():
        d = cache / "sim" / f"{comp}-{versions[key]}"
        try:
            stamp = (d / ".complete").read_text().strip()
        except OSError:
            return False
        if stamp != wrapper_fingerprint(wrappers / comp):
            return False
        if not all(os.access(d / "bin" / b, os.X_OK) for b in BUILD_BINARIES[comp]):
            return False
    return True
